"""Limits at submit (429 with Retry-After), per-tenant size limits, Idempotency-Key replay, conflict and
expiry, and the private-address check of webhook URLs. No worker runs, so accepted pages stay in flight."""

from __future__ import annotations

import io
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.conftest import PlatformFactory
from tests.harness import Platform

pytestmark = pytest.mark.slow

ONE_PAGE = Path("dev") / "pypdf_crazyones" / "crazyones.pdf"
FIVE_PAGES = Path("dev") / "docling_multi_page" / "multi_page.pdf"
IDEMPOTENCY_TTL_S = 8


@pytest.fixture
def platform(platform_factory: PlatformFactory, postgres_url: str) -> Platform:
    return platform_factory(postgres_url, engine="fake", extra_env={
        "PAGEMILL_RETENTION__IDEMPOTENCY_TTL_S": str(IDEMPOTENCY_TTL_S),
        "PAGEMILL_WEBHOOKS__ALLOW_PRIVATE_URLS": "false",
    }).start(worker=False)


def post(platform: Platform, key: str, path: Path, **kwargs: Any) -> httpx.Response:
    with platform.client(key=key) as client:
        return client.post("/v1/documents", files={"file": (path.name, io.BytesIO(path.read_bytes()))}, **kwargs)


def test_requests_per_minute_and_pages_in_flight_give_429_with_retry_after(platform: Platform,
                                                                          corpus: Path) -> None:
    limited = platform.create_tenant("slow", requests_per_minute=3)
    for _ in range(3):
        assert post(platform, limited.key, corpus / ONE_PAGE).status_code == 202
    refused = post(platform, limited.key, corpus / ONE_PAGE)
    assert (refused.status_code, refused.json()["error"]["code"]) == (429, "rate_limited")
    retry_after = int(refused.headers["retry-after"])
    assert 1 <= retry_after <= 20  # one request every 60/3 s
    # another tenant is not affected
    assert post(platform, platform.api_key or "", corpus / ONE_PAGE).status_code == 202

    busy = platform.create_tenant("busy", pages_in_flight=6)
    first = post(platform, busy.key, corpus / FIVE_PAGES)
    assert first.status_code == 202
    over = post(platform, busy.key, corpus / FIVE_PAGES)
    assert (over.status_code, over.json()["error"]["code"]) == (429, "rate_limited")
    assert "in flight" in over.json()["error"]["message"]
    assert int(over.headers["retry-after"]) >= 1
    assert post(platform, busy.key, corpus / ONE_PAGE).status_code == 202  # 5+1 = 6
    assert post(platform, busy.key, corpus / ONE_PAGE).status_code == 429
    # cancelling the first document frees its five pages
    with platform.client(key=busy.key) as client:
        assert client.delete(f"/v1/documents/{first.json()['id']}").status_code == 200
    assert post(platform, busy.key, corpus / FIVE_PAGES).status_code == 202

    with platform.client() as client:
        metrics = client.get("/metrics").text
    assert 'pagemill_rate_limited_total{limit="requests_per_minute"} 1.0' in metrics
    assert 'pagemill_rate_limited_total{limit="pages_in_flight"} 2.0' in metrics


def test_per_tenant_size_and_page_limits(platform: Platform, corpus: Path) -> None:
    small = platform.create_tenant("small", max_pages=2, max_file_bytes=60_000)
    with platform.client(key=small.key) as client:
        tiny = corpus / ONE_PAGE  # 11 KB, 1 page
        five = corpus / FIVE_PAGES  # 128 KB
        response = client.post("/v1/documents", files={"file": ("m.pdf", five.read_bytes())})
        assert (response.status_code, response.json()["error"]["code"]) == (413, "file_too_large")
        assert client.post("/v1/documents", files={"file": ("c.pdf", tiny.read_bytes())}).status_code == 202
        with platform.admin() as admin:
            assert admin.patch(f"/v1/admin/tenants/{small.id}",
                               json={"limits": {"max_file_bytes": None}}).json()["limits"]["max_file_bytes"] > 60_000
        response = client.post("/v1/documents", files={"file": ("m.pdf", five.read_bytes())})
        assert (response.status_code, response.json()["error"]["code"]) == (422, "too_many_pages")
        response = client.post("/v1/documents", files={"file": ("m.pdf", five.read_bytes())}, data={"pages": "1-2"})
        assert response.status_code == 202 and response.json()["pages_total"] == 2


def test_idempotency_key_replays_conflicts_and_expires(platform: Platform, corpus: Path) -> None:
    path = corpus / ONE_PAGE
    first = post(platform, platform.api_key or "", path, data={"metadata": '{"a": 1}'},
                 headers={"Idempotency-Key": "order-42"})
    started = time.monotonic()
    assert first.status_code == 202
    again = post(platform, platform.api_key or "", path, data={"metadata": '{"a": 1}'},
                 headers={"Idempotency-Key": "order-42"})
    assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
    assert again.json()["id"] == first.json()["id"]
    conflict = post(platform, platform.api_key or "", path, data={"metadata": '{"a": 2}'},
                    headers={"Idempotency-Key": "order-42"})
    assert (conflict.status_code, conflict.json()["error"]["code"]) == (409, "idempotency_conflict")
    # the key belongs to its tenant: another tenant's same key is a new request
    other = platform.create_tenant("other")
    theirs = post(platform, other.key, path, data={"metadata": '{"a": 1}'}, headers={"Idempotency-Key": "order-42"})
    assert theirs.status_code == 202 and theirs.json()["id"] != first.json()["id"]
    with platform.client() as client:
        assert len(client.get("/v1/documents").json()["data"]) == 1  # the replay made nothing new
    # after the key expires, the same request makes a new document
    time.sleep(max(0.0, IDEMPOTENCY_TTL_S + 0.5 - (time.monotonic() - started)))
    later = post(platform, platform.api_key or "", path, data={"metadata": '{"a": 2}'},
                 headers={"Idempotency-Key": "order-42"})
    assert later.status_code == 202 and later.json()["id"] != first.json()["id"]


def test_webhook_urls_on_private_or_loopback_addresses_are_refused(platform: Platform, corpus: Path) -> None:
    with platform.client() as client:
        for url in ("http://127.0.0.1:8080/hook", "http://10.0.0.7/hook", "http://169.254.169.254/", "http://localhost/"):
            response = client.post("/v1/webhooks", json={"url": url})
            assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_error"), url
        response = client.post("/v1/documents", files={"file": ("c.pdf", (corpus / ONE_PAGE).read_bytes())},
                               data={"webhook_url": "http://192.168.1.1/x"})
        assert (response.status_code, response.json()["error"]["code"]) == (422, "validation_error")
        assert client.post("/v1/webhooks", json={"url": "https://8.8.8.8/hook", "events": ["nope"]}).status_code == 422
        assert client.post("/v1/webhooks", json={"url": "https://8.8.8.8/hook"}).status_code == 201
