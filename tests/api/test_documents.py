"""`/v1/documents` as the gateway alone answers it: upload validation and its errors, the page limit, 404s,
newest-first listing with a cursor, the status before any worker ran, delete of a queued document."""

from __future__ import annotations

import json

import pytest

from tests.api.conftest import Api, ApiFactory, error_of
from tests.pdfs import text_pages

MAX_FILE_BYTES = 200_000


@pytest.fixture
def api(api_factory: ApiFactory) -> Api:
    return api_factory(limits={"max_file_bytes": MAX_FILE_BYTES, "max_pages": 40})


# (form fields, file content or None for a valid five-page PDF, the error)
UPLOAD_ERRORS = [
    ({}, b"hello, not a document", (415, "unsupported_media_type")),
    ({}, b"", (422, "empty_document")),
    ({}, b"%PDF-1.7\n" + b"0" * (MAX_FILE_BYTES + 1), (413, "file_too_large")),  # counted while read
    ({}, b"%PDF-1.7\n" + b"0" * (MAX_FILE_BYTES + 2**21), (413, "file_too_large")),  # refused on Content-Length
    ({"pages": "0-2"}, None, (422, "validation_error")),
    ({"pages": "7"}, None, (422, "validation_error")),
    ({"pages": "two"}, None, (422, "validation_error")),
    ({"metadata": "[1, 2]"}, None, (422, "validation_error")),
    ({"metadata": "{nope"}, None, (422, "validation_error")),
    ({"mode": "turbo"}, None, (422, "validation_error")),
]


def test_upload_errors_accept_nothing(api: Api) -> None:
    valid = text_pages(5)
    with api.client() as client:
        for fields, content, expected in UPLOAD_ERRORS:
            response = client.post("/v1/documents", files={"file": ("x.pdf", valid if content is None else content)},
                                   data=fields)
            case = (fields, (content or b"")[:20])
            assert error_of(response) == expected, case
            assert response.json()["error"]["message"], case
            assert client.get("/v1/documents").json()["data"] == [], case  # nothing was accepted
        assert client.post("/v1/documents", files={"file": ("x.pdf", valid)}).status_code == 202  # the control


def test_page_limit_missing_file_and_unknown_document(api: Api) -> None:
    big = text_pages(41)
    with api.client() as client:
        assert error_of(client.post("/v1/documents", files={"file": ("big.pdf", big)})) == (422, "too_many_pages")
        assert error_of(client.post("/v1/documents", data={"pages": "1"})) == (422, "validation_error")
        for path in ("/v1/documents/doc_missing", "/v1/documents/doc_missing/result",
                     "/v1/documents/doc_missing/pages/1", "/v1/documents/doc_missing/events"):
            assert error_of(client.get(path)) == (404, "not_found"), path
        assert error_of(client.delete("/v1/documents/doc_missing")) == (404, "not_found")
    # a selection within the limit is fine
    assert api.upload(big, pages="1-40")["pages_total"] == 40


def test_an_accepted_upload_is_queued_with_its_pages_metadata_and_links(api: Api) -> None:
    created = api.upload(text_pages(5), pages="2-3,5", metadata=json.dumps({"ticket": 42}),
                         headers={"X-Request-ID": "req-api-1"})
    assert (created["status"], created["pages_total"], created["cached"]) == ("queued", 3, False)
    assert created["status_url"] == f"http://testserver/v1/documents/{created['id']}"
    with api.client() as client:
        state = client.get(f"/v1/documents/{created['id']}").json()
        assert (state["status"], state["pages_done"], state["metadata"]) == ("queued", 0, {"ticket": 42})
        assert state["mode"] == "fast" and state["finished_at"] is None and state["error"] is None
        assert error_of(client.get(f"/v1/documents/{created['id']}/result")) == (409, "result_not_ready")
        page = client.get(f"/v1/documents/{created['id']}/pages/2").json()
        # a small PDF needs no split: its pages are queued with it
        assert (page["page"], page["page_number"], page["status"], page["markdown"]) == (2, 3, "queued", None)
        assert error_of(client.get(f"/v1/documents/{created['id']}/pages/4")) == (404, "not_found")
        # the request id comes back, and a fresh one is made when none is sent
        response = client.get(f"/v1/documents/{created['id']}", headers={"X-Request-ID": "req-api-2"})
        assert response.headers["x-request-id"] == "req-api-2"
        assert len(client.get("/healthz").headers["x-request-id"]) == 32


def test_list_is_newest_first_with_a_cursor(api: Api) -> None:
    ids = [api.upload(text_pages(1), metadata=json.dumps({"n": n}))["id"] for n in range(5)]
    seen: list[str] = []
    cursor = None
    with api.client() as client:
        while True:
            page = client.get("/v1/documents", params={"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
            assert len(page["data"]) <= 2
            seen += [d["id"] for d in page["data"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
        assert error_of(client.get("/v1/documents", params={"limit": 0})) == (422, "validation_error")
        assert error_of(client.get("/v1/documents", params={"limit": 201})) == (422, "validation_error")
        # a filter or cursor the gateway cannot mean is refused, not read as "no filter" (the fuzz found
        # `status=` and a garbage cursor answered 200 with every document)
        for params in ({"status": ""}, {"status": "done"}, {"cursor": "\u00f2\x04garbage"}, {"cursor": ""}):
            assert error_of(client.get("/v1/documents", params=params)) == (422, "validation_error"), params
        queued = client.get("/v1/documents", params={"status": "queued", "limit": 200}).json()["data"]
        assert {d["id"] for d in queued} == set(ids)
        assert client.get("/v1/documents", params={"status": "succeeded"}).json()["data"] == []
    assert seen == list(reversed(ids))


def test_delete_of_a_queued_document_cancels_and_erases_it(api: Api) -> None:
    created = api.upload(text_pages(3), metadata=json.dumps({"secret": "s"}))
    objects = api.settings.resolved_storage_root() / "documents" / created["id"]
    assert any(p.is_file() for p in objects.rglob("*"))  # the source is stored
    with api.client() as client:
        deleted = client.delete(f"/v1/documents/{created['id']}").json()
        assert deleted == {"id": created["id"], "status": "cancelled", "deleted": True}
        for path in (f"/v1/documents/{created['id']}", f"/v1/documents/{created['id']}/result"):
            assert error_of(client.get(path)) == (404, "not_found")
        assert error_of(client.delete(f"/v1/documents/{created['id']}")) == (404, "not_found")
        assert client.get("/v1/documents").json()["data"] == []
    assert not any(p.is_file() for p in objects.rglob("*"))
