"""The result cache through the HTTP API with real workers: a document-level hit makes no engine call,
`cache=false` and `do_not_cache=true` do what they say, a page-level hit runs only the changed page, and
usage charges engine work only. Engine calls are counted by the fake engine in the shared /metrics."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tests.conftest import PlatformFactory
from tests.harness import Platform
from tests.pdfs import select_pages

pytestmark = pytest.mark.slow

ONE_PAGE = Path("dev") / "pypdf_crazyones" / "crazyones.pdf"
FIVE_PAGES = Path("dev") / "docling_multi_page" / "multi_page.pdf"


def engine_calls(platform: Platform) -> int:
    with platform.client() as client:
        metrics = client.get("/metrics").text
    match = re.search(r'^pagemill_engine_requests_total\{engine="fake",outcome="ok"\} ([0-9.]+)$', metrics, re.M)
    return int(float(match.group(1))) if match else 0


def test_document_and_page_cache_with_an_engine_call_counter(platform_factory: PlatformFactory,
                                                             postgres_url: str, corpus: Path, tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, engine="fake").start()
    assert engine_calls(platform) == 0
    first = platform.upload(corpus / FIVE_PAGES, metadata='{"copy": 1}')
    assert not first["cached"] and platform.wait_done(first["id"])["status"] == "succeeded"
    assert engine_calls(platform) == 5

    # Same file, same options: a new document, finished at once, from the earlier results; no engine call.
    hit = platform.upload(corpus / FIVE_PAGES, metadata='{"copy": 2}')
    assert hit["cached"] is True and hit["status"] == "succeeded" and hit["id"] != first["id"]
    assert engine_calls(platform) == 5
    with platform.client() as client:
        state = client.get(f"/v1/documents/{hit['id']}").json()
        assert state["status"] == "succeeded" and state["pages_done"] == 5 and state["cached"] is True
        assert client.get(f"/v1/documents/{hit['id']}/result").text == \
            client.get(f"/v1/documents/{first['id']}/result").text
        document = client.get(f"/v1/documents/{hit['id']}/result", params={"format": "json"}).json()
        assert document["id"] == hit["id"] and document["metadata"] == {"copy": 2}
        # every format is copied; the JSON ones name the new document
        assert state["formats"] == document["formats"] == ["markdown", "html", "latex", "json", "chunks"]
        for fmt in ("html", "latex"):
            copied = client.get(f"/v1/documents/{hit['id']}/result", params={"format": fmt})
            assert copied.status_code == 200 and copied.text == \
                client.get(f"/v1/documents/{first['id']}/result", params={"format": fmt}).text
        chunks = client.get(f"/v1/documents/{hit['id']}/result", params={"format": "chunks"}).json()
        assert chunks["document_id"] == hit["id"] and chunks["chunks"]
        page = client.get(f"/v1/documents/{hit['id']}/pages/3").json()
        assert page["details"]["cache_hit"] is True and page["attempts"] == 0 and "## Page 3" in page["markdown"]
        # the copy is independent: deleting the original leaves it whole
        assert client.delete(f"/v1/documents/{first['id']}").status_code == 200
        assert "## Page 5" in client.get(f"/v1/documents/{hit['id']}/result").text

    # cache=false: parsed again (neither the document nor its pages are looked up)
    again = platform.upload(corpus / FIVE_PAGES, cache="false")
    assert not again["cached"] and platform.wait_done(again["id"])["status"] == "succeeded"
    assert engine_calls(platform) == 10

    # do_not_cache=true: the confidential document never answers a later upload
    secret = platform.upload(corpus / ONE_PAGE, do_not_cache="true")
    platform.wait_done(secret["id"])
    assert engine_calls(platform) == 11
    later = platform.upload(corpus / ONE_PAGE)
    assert not later["cached"] and platform.wait_done(later["id"])["status"] == "succeeded"
    assert engine_calls(platform) == 12
    with platform.client() as client:
        page = client.get(f"/v1/documents/{later['id']}/pages/1").json()
        assert page["attempts"] == 1 and "cache_hit" not in page["details"]
    assert platform.upload(corpus / ONE_PAGE)["cached"] is True  # but the non-confidential one does
    assert engine_calls(platform) == 12

    # Page level, for a tenant of its own: pages 1-3, then 1, 4, 3 — only the changed page is parsed.
    other = platform.create_tenant("pages")
    before, after = tmp_path / "before.pdf", tmp_path / "after.pdf"
    before.write_bytes(select_pages(corpus / FIVE_PAGES, [1, 2, 3]))
    after.write_bytes(select_pages(corpus / FIVE_PAGES, [1, 4, 3]))
    platform.wait_done(platform.upload(before, key=other.key)["id"], key=other.key)
    assert engine_calls(platform) == 15
    changed = platform.upload(after, key=other.key)
    assert not changed["cached"] and platform.wait_done(changed["id"], key=other.key)["status"] == "succeeded"
    assert engine_calls(platform) == 16
    with platform.client(key=other.key) as client:
        pages = [client.get(f"/v1/documents/{changed['id']}/pages/{n}").json() for n in (1, 2, 3)]
        assert [p["details"].get("cache_hit", False) for p in pages] == [True, False, True]
        assert "## Page 2" in pages[1]["markdown"] and "## Page 3" in pages[2]["markdown"]
        usage = client.get("/v1/usage").json()
        assert (usage["pages"], usage["cached_pages"]) == (4, 2)  # cache hits are not charged
    with platform.client() as client:
        usage = client.get("/v1/usage").json()
        # charged: 5 + 5 (cache=false) + 1 (do_not_cache) + 1; free: the 5-page hit and the 1-page hit
        assert (usage["pages"], usage["cached_pages"]) == (12, 6)
        metrics = client.get("/metrics").text
    assert 'pagemill_cache_lookups_total{level="document",outcome="hit"} 2.0' in metrics
    assert 'pagemill_cache_lookups_total{level="page",outcome="hit"} 2.0' in metrics
