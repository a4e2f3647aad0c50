"""`needs_review`: a succeeded page under `quality.needs_review_below` says so, and the document counts them —
in its status, in the list, on each page and in document.json (issue 28)."""

from __future__ import annotations

import json

import pytest

from services.core.contracts import PageElement, PageResult, from_dict, to_dict
from services.core.db.models import PageStatus
from services.core.db.session import session_scope
from services.core.lifecycle import PageFinish, finish_pages
from services.core.storage import get_store
from services.results.assemble import assemble_document
from tests.api.conftest import Api, ApiFactory
from tests.pdfs import text_pages

# Page confidences: one sure, one doubtful, one failed (a failed page has no output to review).
CONFIDENCES = {0: 0.97, 1: 0.42, 2: None}


def _finish(api: Api, document_id: str) -> None:
    store = get_store(api.settings)
    finishes = {}
    for index, confidence in CONFIDENCES.items():
        if confidence is None:
            finishes[index] = PageFinish(PageStatus.FAILED, engine="fake", error_code="engine_error",
                                         error_message="boom")
            continue
        key = f"documents/{document_id}/pages/{index:05d}.json"
        element = from_dict(PageElement, {"id": f"p{index + 1}-e1", "type": "paragraph", "page": index + 1,
                                          "text": "words", "markdown": "words", "confidence": confidence})
        result = PageResult(document_id=document_id, page_index=index, page_number=index + 1, markdown="words",
                            engine="fake", confidence=confidence, elements=[element])
        store.put(key, json.dumps(to_dict(result)).encode(), content_type="application/json")
        finishes[index] = PageFinish(PageStatus.SUCCEEDED, result_key=key, engine="fake", attempts=1,
                                     latency_ms=5, confidence=confidence)
    with session_scope(api.settings.resolved_database_url()) as session:
        finish_pages(session, document_id, finishes)


@pytest.mark.parametrize(("below", "expected"), [(None, 1), (0.98, 2), (0.1, 0)])
def test_pages_under_the_threshold_need_review_and_are_counted(api_factory: ApiFactory, below: float | None,
                                                                expected: int) -> None:
    api = api_factory(**({"quality": {"needs_review_below": below}} if below is not None else {}))
    document_id = api.upload(text_pages(3))["id"]
    _finish(api, document_id)
    with api.client() as client:
        state = client.get(f"/v1/documents/{document_id}").json()
        assert (state["pages_needing_review"], state["needs_review_below"]) == (expected, below or 0.8)
        assert client.get(f"/v1/documents/{document_id}", params={"wait": 1}).json()["pages_needing_review"] \
            == expected
        listed = client.get("/v1/documents").json()["data"]
        assert [d["pages_needing_review"] for d in listed if d["id"] == document_id] == [expected]
        flags = [client.get(f"/v1/documents/{document_id}/pages/{n}").json()["needs_review"] for n in (1, 2, 3)]
        threshold = below if below is not None else 0.8
        assert flags == [threshold > 0.97, threshold > 0.42, False]
        page = client.get(f"/v1/documents/{document_id}/pages/2").json()
        assert page["elements"][0]["confidence"] == 0.42  # the block's own, carried to the reader
    assemble_document(document_id, api.settings, get_store(api.settings))
    with api.client() as client:
        body = client.get(f"/v1/documents/{document_id}/result", params={"format": "json"}).json()
    assert body["pages_needing_review"] == expected
    assert [p["needs_review"] for p in body["pages"]] == flags
