"""Limits at submit (429 with Retry-After), per-tenant size limits, Idempotency-Key replay, conflict and
expiry, and the private-address check of webhook URLs. No worker runs, so accepted pages stay in flight."""

from __future__ import annotations

from datetime import timedelta

import pytest
import sqlalchemy as sa
from prometheus_client.parser import text_string_to_metric_families

from services.core.db.models import IdempotencyKey
from services.core.db.session import session_scope
from tests.api.conftest import Api, ApiFactory, error_of
from tests.pdfs import text_pages

IDEMPOTENCY_TTL_S = 600
ONE_PAGE, FIVE_PAGES = text_pages(1), text_pages(5)


@pytest.fixture
def api(api_factory: ApiFactory) -> Api:
    return api_factory(retention={"idempotency_ttl_s": IDEMPOTENCY_TTL_S}, webhooks={"allow_private_urls": False})


def rate_limited(api: Api) -> dict[str, float]:
    """`pagemill_rate_limited_total` by limit. The counters belong to this process, which other tests share:
    compare two readings, never one against a constant."""
    with api.client() as client:
        text = client.get("/metrics").text
    return {s.labels["limit"]: s.value for family in text_string_to_metric_families(text)
            for s in family.samples if s.name == "pagemill_rate_limited_total"}


def post(api: Api, key: str, data: bytes, **fields: str) -> tuple[int, dict[str, object], dict[str, str]]:
    with api.client(key=key) as client:
        response = client.post("/v1/documents", files={"file": ("a.pdf", data)}, data=fields)
    return response.status_code, response.json(), dict(response.headers)


def test_requests_per_minute_and_pages_in_flight_give_429_with_retry_after(api: Api) -> None:
    before = rate_limited(api)
    limited = api.create_tenant("slow", requests_per_minute=3)
    for _ in range(3):
        assert post(api, limited.key, ONE_PAGE)[0] == 202
    status, body, headers = post(api, limited.key, ONE_PAGE)
    assert (status, body["error"]["code"]) == (429, "rate_limited")  # type: ignore[index]
    assert 1 <= int(headers["retry-after"]) <= 20  # one request every 60/3 s
    assert post(api, api.tenant.key, ONE_PAGE)[0] == 202  # another tenant is not affected

    busy = api.create_tenant("busy", pages_in_flight=6)
    first = post(api, busy.key, FIVE_PAGES)
    assert first[0] == 202
    status, body, headers = post(api, busy.key, FIVE_PAGES)
    assert (status, body["error"]["code"]) == (429, "rate_limited")  # type: ignore[index]
    assert "in flight" in body["error"]["message"] and int(headers["retry-after"]) >= 1  # type: ignore[index]
    assert post(api, busy.key, ONE_PAGE)[0] == 202  # 5+1 = 6
    assert post(api, busy.key, ONE_PAGE)[0] == 429
    # a document larger than the whole allowance can never fit: 422, not a 429 to retry
    status, body, _ = post(api, busy.key, text_pages(7))
    assert (status, body["error"]["code"]) == (422, "too_many_pages")  # type: ignore[index]
    # cancelling the first document frees its five pages
    with api.client(key=busy.key) as client:
        assert client.delete(f"/v1/documents/{first[1]['id']}").status_code == 200
    assert post(api, busy.key, FIVE_PAGES)[0] == 202

    after = rate_limited(api)
    assert after["requests_per_minute"] - before.get("requests_per_minute", 0) == 1
    assert after["pages_in_flight"] - before.get("pages_in_flight", 0) == 2


def test_per_tenant_size_and_page_limits(api: Api) -> None:
    five = FIVE_PAGES + b"\n%" + b"0" * 60_000  # bytes after %%EOF: still a five-page PDF, of 60+ KB
    small = api.create_tenant("small", max_pages=2, max_file_bytes=60_000)
    with api.client(key=small.key) as client:
        assert error_of(client.post("/v1/documents", files={"file": ("m.pdf", five)})) == (413, "file_too_large")
        assert client.post("/v1/documents", files={"file": ("c.pdf", ONE_PAGE)}).status_code == 202
        with api.admin() as admin:
            updated = admin.patch(f"/v1/admin/tenants/{small.id}", json={"limits": {"max_file_bytes": None}}).json()
            assert updated["limits"]["max_file_bytes"] > 60_000 and "max_file_bytes" not in updated["overrides"]
        assert error_of(client.post("/v1/documents", files={"file": ("m.pdf", five)})) == (422, "too_many_pages")
        response = client.post("/v1/documents", files={"file": ("m.pdf", five)}, data={"pages": "1-2"})
        assert response.status_code == 202 and response.json()["pages_total"] == 2


def test_idempotency_key_replays_conflicts_and_expires(api: Api, database_url: str) -> None:
    headers = {"Idempotency-Key": "order-42"}
    first = api.upload(ONE_PAGE, metadata='{"a": 1}', headers=headers)
    with api.client() as client:
        again = client.post("/v1/documents", files={"file": ("upload.pdf", ONE_PAGE)}, data={"metadata": '{"a": 1}'},
                            headers=headers)
        assert again.status_code == 200 and again.headers["idempotent-replayed"] == "true"
        assert again.json()["id"] == first["id"]
        conflict = client.post("/v1/documents", files={"file": ("upload.pdf", ONE_PAGE)},
                               data={"metadata": '{"a": 2}'}, headers=headers)
        assert error_of(conflict) == (409, "idempotency_conflict")
        assert error_of(client.post("/v1/documents", files={"file": ("upload.pdf", ONE_PAGE)},
                                    headers={"Idempotency-Key": "x" * 300})) == (422, "validation_error")
    # the key belongs to its tenant: another tenant's same key is a new request
    other = api.create_tenant("other")
    theirs = api.upload(ONE_PAGE, key=other.key, metadata='{"a": 1}', headers=headers)
    assert theirs["id"] != first["id"]
    with api.client() as client:
        assert len(client.get("/v1/documents").json()["data"]) == 1  # the replay made nothing new

    # The key lives for the configured TTL; once that has passed, the same request makes a new document.
    with session_scope(database_url) as session:
        row = session.get(IdempotencyKey, (api.tenant.id, "order-42"))
        assert row is not None and row.expires_at - row.created_at == pytest.approx(
            timedelta(seconds=IDEMPOTENCY_TTL_S), abs=timedelta(seconds=5))
        session.execute(sa.update(IdempotencyKey).where(IdempotencyKey.key == "order-42")
                        .values(expires_at=row.created_at - timedelta(seconds=1)))  # the clock moved on
    later = api.upload(ONE_PAGE, metadata='{"a": 2}', headers=headers)
    assert later["id"] != first["id"]


def test_webhook_urls_on_private_or_loopback_addresses_are_refused(api: Api) -> None:
    with api.client() as client:
        for url in ("http://127.0.0.1:8080/hook", "http://10.0.0.7/hook", "http://169.254.169.254/",
                    "http://localhost/", "http://[::1]/hook", "ftp://8.8.8.8/hook"):
            assert error_of(client.post("/v1/webhooks", json={"url": url})) == (422, "validation_error"), url
        response = client.post("/v1/documents", files={"file": ("c.pdf", ONE_PAGE)},
                               data={"webhook_url": "http://192.168.1.1/x"})
        assert error_of(response) == (422, "validation_error")
        assert client.get("/v1/documents").json()["data"] == []
        assert client.post("/v1/webhooks", json={"url": "https://8.8.8.8/hook"}).status_code == 201
