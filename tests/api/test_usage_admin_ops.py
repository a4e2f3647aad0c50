"""`/v1/usage` over pages as the workers' state machine leaves them, the admin API on tenants and keys, and
the operational routes (health, readiness, metrics, OpenAPI, unknown routes)."""

from __future__ import annotations

from datetime import timedelta

import sqlalchemy as sa

from services.core.db.models import Page, PageStatus, utcnow
from services.core.db.session import session_scope
from services.core.lifecycle import PageFinish, claim_page, finish_page
from tests.api.conftest import Api, ApiFactory, error_of
from tests.pdfs import text_pages


def finish_pages(database_url: str, document_id: str, *outcomes: tuple[str, bool]) -> None:
    """Ends the document's pages in order as workers would (claim, then finish): (engine, cached) succeeds,
    ("", False) fails."""
    with session_scope(database_url) as session:  # what the split step leaves: every page queued
        session.execute(sa.update(Page).where(Page.document_id == document_id).values(status=PageStatus.QUEUED))
    for index, (engine, cached) in enumerate(outcomes):
        with session_scope(database_url) as session:
            claim_page(session, document_id, index, lease_s=60, max_deliveries=3)
            status = PageStatus.SUCCEEDED if engine else PageStatus.FAILED
            finish_page(session, document_id, index, PageFinish(status, engine=engine or None, cached=cached,
                                                                error_code=None if engine else "page_too_large"))


def test_usage_charges_engine_pages_by_mode_and_engine_for_the_period(api: Api, database_url: str) -> None:
    fast = api.upload(text_pages(3))["id"]
    accurate = api.upload(text_pages(2), mode="accurate")["id"]
    finish_pages(database_url, fast, ("fake", False), ("fake", True), ("", False))
    finish_pages(database_url, accurate, ("fake", False), ("cpu", False))
    other = api.create_tenant("other")
    finish_pages(database_url, api.upload(text_pages(1), key=other.key)["id"], ("fake", False))

    with api.client() as client:
        usage = client.get("/v1/usage").json()
        assert (usage["pages"], usage["cached_pages"], usage["failed_pages"]) == (3, 1, 1)
        assert usage["by_mode_engine"] == [
            {"mode": "accurate", "engine": "cpu", "pages": 1, "cached_pages": 0, "failed_pages": 0},
            {"mode": "accurate", "engine": "fake", "pages": 1, "cached_pages": 0, "failed_pages": 0},
            {"mode": "fast", "engine": "fake", "pages": 1, "cached_pages": 1, "failed_pages": 1},
        ]
        assert client.get("/v1/usage", params={"from": "2000-01-01", "to": "2000-02-01"}).json()["pages"] == 0
        tomorrow = (utcnow() + timedelta(days=1)).date().isoformat()
        assert client.get("/v1/usage", params={"from": "2000-01-01T00:00:00Z", "to": tomorrow}).json()["pages"] == 3
        assert error_of(client.get("/v1/usage", params={"from": "yesterday"})) == (422, "validation_error")
        assert error_of(client.get("/v1/usage", params={"from": "2001-01-01", "to": "2000-01-01"})) == \
            (422, "validation_error")
    with api.client(key=other.key) as client:
        assert client.get("/v1/usage").json()["pages"] == 1


def test_admin_manages_tenants_limits_and_keys(api: Api) -> None:
    with api.admin() as admin:
        created = admin.post("/v1/admin/tenants", json={"name": "initech", "limits": {"max_pages": 3}})
        assert created.status_code == 201, created.text
        tenant = created.json()
        assert tenant["overrides"] == {"max_pages": 3} and tenant["limits"]["max_pages"] == 3
        assert tenant["limits"]["requests_per_minute"] == api.settings.limits.requests_per_minute
        assert error_of(admin.post("/v1/admin/tenants", json={"name": "initech"})) == (422, "validation_error")
        for body in ({"name": ""}, {"name": "x", "limits": {"max_pages": 0}}, {"name": "x", "plan": "gold"}):
            assert error_of(admin.post("/v1/admin/tenants", json=body)) == (422, "validation_error"), body
        names = [t["name"] for t in admin.get("/v1/admin/tenants").json()]
        assert names[-1] == "initech" and api.tenant.id in [t["id"] for t in admin.get("/v1/admin/tenants").json()]
        assert admin.get(f"/v1/admin/tenants/{tenant['id']}").json()["name"] == "initech"
        assert error_of(admin.get("/v1/admin/tenants/ten_missing")) == (404, "not_found")

        patched = admin.patch(f"/v1/admin/tenants/{tenant['id']}",
                              json={"limits": {"requests_per_minute": 9, "max_pages": None}}).json()
        assert patched["overrides"] == {"requests_per_minute": 9}
        assert patched["limits"]["max_pages"] == api.settings.limits.max_pages

        key = admin.post(f"/v1/admin/tenants/{tenant['id']}/keys", json={"name": "laptop"}).json()
        assert key["key"].startswith("pm_") and key["prefix"] == key["key"][:11]
        listed = admin.get(f"/v1/admin/tenants/{tenant['id']}/keys").json()
        assert [(k["id"], k["name"], k["revoked_at"]) for k in listed] == [(key["id"], "laptop", None)]
        assert all("key" not in k for k in listed)
    with api.client(key=key["key"]) as client:
        me = client.get("/v1/tenant").json()
        assert (me["id"], me["limits"]["requests_per_minute"]) == (tenant["id"], 9)
        assert me["webhook_secret"].startswith("whsec_")


def test_health_readiness_metrics_openapi_and_unknown_routes(api: Api) -> None:
    api.upload(text_pages(2))
    with api.client(auth=False) as client:
        assert client.get("/healthz").json() == {"status": "ok"}
        ready = client.get("/readyz").json()
        assert ready == {"status": "ok", "checks": {"database": "ok", "redis": "ok", "store": "ok"}}
        metrics = client.get("/metrics").text
        # the scrape-time gauges read this app's own database and Redis
        assert 'pagemill_documents{status="queued"} 1.0' in metrics
        # a small PDF's pages are queued with it (no split job), spread over the idle workers: a message a page
        assert 'pagemill_queue_depth{queue="pages.cpu"} 2.0' in metrics, [
            line for line in metrics.splitlines() if line.startswith("pagemill_queue_depth")]
        assert 'pagemill_queue_depth{queue="documents"} 0.0' in metrics
        assert 'pagemill_http_requests_total{method="POST",route="/v1/documents",status="202"}' in metrics
        schema = client.get("/openapi.json").json()
        assert {"/v1/documents", "/v1/documents/{document_id}", "/v1/webhooks", "/v1/usage",
                "/v1/admin/tenants"} <= set(schema["paths"])
        assert "/metrics" not in schema["paths"]
        # One page schema: the JSON result's pages and the page endpoint are the same PageRead.
        page_ref = {"$ref": "#/components/schemas/PageRead"}
        assert schema["components"]["schemas"]["DocumentResult"]["properties"]["pages"]["items"] == page_ref
        assert schema["paths"]["/v1/documents/{document_id}/pages/{n}"]["get"]["responses"]["200"]["content"][
            "application/json"]["schema"] == page_ref
        assert client.get("/docs").status_code == 200
        assert error_of(client.get("/nowhere")) == (404, "not_found")
        assert error_of(client.put("/v1/documents")) == (405, "method_not_allowed")


def test_readiness_reports_each_dependency_that_is_down(api_factory: ApiFactory) -> None:
    api = api_factory(redis_url="redis://127.0.0.1:1/0")
    with api.client(auth=False) as client:
        response = client.get("/readyz")
    assert response.status_code == 503
    body = response.json()
    assert body["status"] == "unavailable" and body["checks"]["database"] == "ok"
    assert body["checks"]["store"] == "ok" and body["checks"]["redis"].startswith("error: ConnectionError")
