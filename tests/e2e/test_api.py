"""The HTTP API as a customer uses it: the v1 contract, its errors, long-poll, pages, listing and delete."""

from __future__ import annotations

import io
import json
import time
from pathlib import Path

import pytest

from tests.conftest import PlatformFactory
from tests.harness import Platform
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


@pytest.mark.parametrize(("fields", "content", "expected"), [
    ({}, b"hello, not a document", (415, "unsupported_media_type")),
    ({}, b"", (422, "empty_document")),
    ({}, b"%PDF-1.7\n" + b"0" * 20_000_000, (413, "file_too_large")),
    ({"pages": "0-2"}, None, (422, "validation_error")),
    ({"pages": "7"}, None, (422, "validation_error")),
    ({"pages": "two"}, None, (422, "validation_error")),
    ({"metadata": "[1, 2]"}, None, (422, "validation_error")),
    ({"metadata": "{nope"}, None, (422, "validation_error")),
    ({"mode": "turbo"}, None, (422, "validation_error")),
])
def test_upload_errors(api: Platform, corpus: Path, fields: dict[str, str], content: bytes | None,
                       expected: tuple[int, str]) -> None:
    data = content if content is not None else (corpus / "dev" / "docling_multi_page" / "multi_page.pdf").read_bytes()
    with api.client() as client:
        response = client.post("/v1/documents", files={"file": ("x.pdf", io.BytesIO(data))}, data=fields)
        assert error_of(response) == expected
        assert client.get("/v1/documents").json()["data"] == []  # nothing was accepted


def test_too_many_pages_and_missing_file(api: Platform, corpus: Path, tmp_path: Path) -> None:
    big = tmp_path / "big.pdf"
    big.write_bytes(repeat_pages(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", 41))
    with api.client() as client:
        response = client.post("/v1/documents", files={"file": ("big.pdf", big.read_bytes())})
        assert error_of(response) == (422, "too_many_pages")
        assert error_of(client.post("/v1/documents", data={"pages": "1"})) == (422, "validation_error")
        assert error_of(client.get("/v1/documents/doc_missing")) == (404, "not_found")
    # a selection within the limit is fine
    assert api.upload(big, pages="1-40")["pages_total"] == 40


def test_list_is_newest_first_with_a_cursor(api: Platform, corpus: Path) -> None:
    source = corpus / "dev" / "pypdf_crazyones" / "crazyones.pdf"
    ids = [api.upload(source)["id"] for _ in range(5)]
    seen: list[str] = []
    cursor = None
    with api.client() as client:
        while True:
            page = client.get("/v1/documents", params={"limit": 2, **({"cursor": cursor} if cursor else {})}).json()
            seen += [d["id"] for d in page["data"]]
            cursor = page["next_cursor"]
            if cursor is None:
                break
    assert seen == list(reversed(ids))


def test_delete_cancels_pending_pages_and_erases_the_data(api: Platform, corpus: Path, tmp_path: Path) -> None:
    source = tmp_path / "thirty.pdf"
    source.write_bytes(repeat_pages(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", 30))
    created = api.upload(source)
    with api.client() as client:
        while client.get(f"/v1/documents/{created['id']}").json()["pages_done"] < 2:
            time.sleep(0.05)
        deleted = client.delete(f"/v1/documents/{created['id']}").json()
        assert deleted == {"id": created["id"], "status": "cancelled", "deleted": True}
        assert error_of(client.get(f"/v1/documents/{created['id']}")) == (404, "not_found")
        assert error_of(client.get(f"/v1/documents/{created['id']}/result")) == (404, "not_found")
        assert error_of(client.delete(f"/v1/documents/{created['id']}")) == (404, "not_found")
    time.sleep(3)  # pages still on the queue are skipped, not parsed
    assert api.log("worker").count("page.parsed") < 10  # far fewer than the 30 pages
    # whatever a page that was mid-flight wrote after the delete is erased by the next reconciler pass
    api.start_reconciler()
    objects = api.workdir / "data" / "objects" / "documents" / created["id"]
    deadline = time.monotonic() + 30
    while objects.exists() and any(p.is_file() for p in objects.rglob("*")) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not objects.exists() or not any(p.is_file() for p in objects.rglob("*"))


def test_health_readiness_metrics_and_openapi(api: Platform, corpus: Path) -> None:
    created = api.upload(corpus / "dev" / "pypdf_crazyones" / "crazyones.pdf")
    api.wait_done(created["id"])
    with api.client() as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz").json()
        assert ready["status"] == "ok" and set(ready["checks"]) == {"database", "redis", "store"}
        metrics = client.get("/metrics").text
        assert 'pagemill_pages_total{engine="fake",mode="fast",status="succeeded"} 1.0' in metrics
        assert 'pagemill_documents{status="succeeded"} 1.0' in metrics
        assert 'pagemill_queue_depth{queue="pages.cpu"} 0.0' in metrics
        assert "pagemill_page_latency_seconds_bucket" in metrics
        schema = client.get("/openapi.json").json()
        assert "/v1/documents" in schema["paths"]
        # One page schema: the JSON result's pages and the page endpoint are the same PageRead.
        page_ref = {"$ref": "#/components/schemas/PageRead"}
        assert schema["components"]["schemas"]["DocumentResult"]["properties"]["pages"]["items"] == page_ref
        assert schema["paths"]["/v1/documents/{document_id}/pages/{n}"]["get"]["responses"]["200"]["content"][
            "application/json"]["schema"] == page_ref
        assert client.get("/docs").status_code == 200
        assert client.get("/nowhere").json()["error"]["code"] == "not_found"
