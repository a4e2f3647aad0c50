"""The HTTP API with real workers behind it: long-poll, a parsed document's pages, result and metrics, and a
delete while pages are still queued. What the gateway answers alone (validation, errors, listing) is in
tests/api."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.conftest import PlatformFactory
from tests.harness import Platform, wait_until
from tests.pdfs import repeat_pages

pytestmark = pytest.mark.slow


@pytest.fixture
def api(platform_factory: PlatformFactory, sqlite_url: str) -> Platform:
    return platform_factory(sqlite_url, engine="fake", extra_env={
        "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "200", "PAGEMILL_LIMITS__MAX_FILE_BYTES": "20000000",
        "PAGEMILL_LIMITS__MAX_PAGES": "40"}).start(concurrency=2)


def error_of(response: object) -> tuple[int, str]:
    body = response.json()  # type: ignore[attr-defined]
    assert set(body) == {"error"} and set(body["error"]) == {"code", "message"}, body
    return response.status_code, body["error"]["code"]  # type: ignore[attr-defined]


def test_upload_poll_result_and_pages(api: Platform, corpus: Path) -> None:
    source = corpus / "dev" / "docling_multi_page" / "multi_page.pdf"
    created = api.upload(source, pages="2-3,5", metadata=json.dumps({"ticket": 42}))
    assert created["pages_total"] == 3 and created["status"] == "queued"
    with api.client() as client:
        assert error_of(client.get(f"/v1/documents/{created['id']}/result")) == (409, "result_not_ready")
        # long-poll: returns as soon as something changes, well before the deadline
        first = client.get(f"/v1/documents/{created['id']}").json()
        started = time.monotonic()
        changed = client.get(f"/v1/documents/{created['id']}", params={"wait": 30}).json()
        assert time.monotonic() - started < 25
        assert (changed["status"], changed["pages_done"]) != (first["status"], first["pages_done"])
    state = api.wait_done(created["id"])
    assert state["status"] == "succeeded" and state["finished_at"] and state["metadata"] == {"ticket": 42}
    assert state["pages_done"] == 3 and state["pages_failed"] == 0 and state["error"] is None
    with api.client() as client:
        page = client.get(f"/v1/documents/{created['id']}/pages/2").json()
        assert page["page"] == 2 and page["page_number"] == 3 and page["status"] == "succeeded"
        assert page["engine"] == "fake" and page["attempts"] == 1 and page["is_fallback"] is False
        assert page["latency_ms"] >= 200 and "## Page 2" in page["markdown"]
        assert error_of(client.get(f"/v1/documents/{created['id']}/pages/4")) == (404, "not_found")
        markdown = client.get(f"/v1/documents/{created['id']}/result", params={"format": "markdown"})
        assert markdown.headers["content-type"].startswith("text/markdown")
        assert [line for line in markdown.text.splitlines() if line.startswith("<!-- page")] == \
            ["<!-- page 2 -->", "<!-- page 3 -->", "<!-- page 5 -->"]
        document = client.get(f"/v1/documents/{created['id']}/result", params={"format": "json"}).json()
        assert [p["page_number"] for p in document["pages"]] == [2, 3, 5]
        # One page schema: the JSON result's page is the page endpoint's page, 1-based `page` in both.
        assert [p["page"] for p in document["pages"]] == [1, 2, 3]
        assert set(document["pages"][1]) == set(page) and document["pages"][1]["markdown"] == page["markdown"]
        assert "finish_reason" in page and "signals" in page and "finish_reason" not in page["details"]
        # the gateway's /metrics gathers what the worker processes counted
        metrics = client.get("/metrics").text
        assert 'pagemill_pages_total{engine="fake",mode="fast",status="succeeded"} 3.0' in metrics
        assert 'pagemill_documents{status="succeeded"} 1.0' in metrics
        assert 'pagemill_queue_depth{queue="pages.cpu"} 0.0' in metrics
        assert "pagemill_page_latency_seconds_bucket" in metrics


def test_delete_cancels_pending_pages_and_erases_the_data(api: Platform, corpus: Path, tmp_path: Path) -> None:
    source = tmp_path / "thirty.pdf"
    source.write_bytes(repeat_pages(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", 30))
    created = api.upload(source)
    with api.client() as client:
        wait_until(lambda: client.get(f"/v1/documents/{created['id']}").json()["pages_done"] >= 2, 60, "two pages",
                   every=0.05)
        parsed_before = api.log("worker").count("page.parsed")
        deleted = client.delete(f"/v1/documents/{created['id']}").json()
        assert deleted == {"id": created["id"], "status": "cancelled", "deleted": True}
        assert error_of(client.get(f"/v1/documents/{created['id']}")) == (404, "not_found")
        assert error_of(client.get(f"/v1/documents/{created['id']}/result")) == (404, "not_found")
        assert error_of(client.delete(f"/v1/documents/{created['id']}")) == (404, "not_found")
    # Pages still on the queue, or later in a running chunk, are skipped, not parsed: once the worker has taken
    # and acknowledged every message, each of its two processes has ended at most the page it was running at
    # the delete (and one more whose cancel check came just before it).
    wait_until(lambda: api.messages_waiting() == 0, 60, "the worker to drain the page queue")
    parsed_after = api.log("worker").count("page.parsed")
    assert parsed_after - parsed_before <= 4 and parsed_after < 30, (parsed_before, parsed_after)
    # whatever a page that was mid-flight wrote after the delete is erased by the next reconciler pass
    api.start_reconciler()
    objects = api.workdir / "data" / "objects" / "documents" / created["id"]
    wait_until(lambda: not any(p.is_file() for p in objects.rglob("*")), 30, "the reconciler's erasure")
