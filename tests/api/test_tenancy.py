"""Tenants through the gateway: isolation on every endpoint, API keys (hashed, revocable), the admin guard.
What needs a parsed document (events stream, presigned redirect, retention) is in tests/integration."""

from __future__ import annotations

import hashlib
import json

import sqlalchemy as sa

from services.core.db.session import get_engine
from tests.api.conftest import Api, ApiFactory, error_of
from tests.pdfs import text_pages


def test_another_tenant_sees_nothing_and_changes_nothing(api: Api) -> None:
    a, b = api.create_tenant("acme"), api.create_tenant("globex")
    with api.client(key=a.key) as client:
        webhook = client.post("/v1/webhooks", json={"url": "https://8.8.8.8/hook"}).json()["id"]
    doc = api.upload(text_pages(2), key=a.key)["id"]
    with api.client(key=a.key) as client:  # the upload's `document.queued` event, waiting to be sent
        delivery = client.get(f"/v1/webhooks/{webhook}/deliveries").json()["data"][0]["id"]

    # Tenant B: every endpoint answers exactly as for a document or webhook that does not exist.
    paths = [f"/v1/documents/{doc}", f"/v1/documents/{doc}/result", f"/v1/documents/{doc}/result?format=json",
             f"/v1/documents/{doc}/pages/1", f"/v1/documents/{doc}/events", f"/v1/documents/{doc}?wait=1",
             f"/v1/webhooks/{webhook}", f"/v1/webhooks/{webhook}/deliveries"]
    with api.client(key=b.key) as client:
        for path in paths:
            assert error_of(client.get(path)) == (404, "not_found"), path
        assert error_of(client.delete(f"/v1/documents/{doc}")) == (404, "not_found")
        assert error_of(client.delete(f"/v1/webhooks/{webhook}")) == (404, "not_found")
        assert error_of(client.patch(f"/v1/webhooks/{webhook}", json={"description": "mine"})) == (404, "not_found")
        assert error_of(client.post(f"/v1/webhooks/{webhook}/rotate-secret")) == (404, "not_found")
        assert error_of(client.post(f"/v1/webhooks/{webhook}/deliveries/{delivery}/redeliver")) == \
            (404, "not_found")
        assert client.get("/v1/documents").json() == {"data": [], "next_cursor": None}
        assert client.get("/v1/webhooks").json() == {"data": []}
        assert client.get("/v1/usage").json()["pages"] == 0
        assert client.get("/v1/tenant").json()["id"] == b.id

    # ... and tenant A still has all of it: B's deletes changed nothing.
    with api.client(key=a.key) as client:
        assert client.get(f"/v1/documents/{doc}").json()["status"] == "queued"
        assert error_of(client.get(f"/v1/documents/{doc}/result")) == (409, "result_not_ready")
        assert client.get(f"/v1/documents/{doc}/pages/1").status_code == 200
        assert [d["id"] for d in client.get("/v1/documents").json()["data"]] == [doc]
        assert client.get(f"/v1/webhooks/{webhook}").json()["description"] == ""
        assert client.get("/v1/tenant").json()["id"] == a.id


def test_keys_are_required_hashed_and_revocable(api: Api, database_url: str) -> None:
    a, b = api.create_tenant("acme"), api.create_tenant("globex")
    # No key or a made-up key: 401; a tenant's key on the admin API: 403, it is a key, just not the admin one.
    with api.client(auth=False) as client:
        for path in ("/v1/documents", "/v1/documents/doc_x", "/v1/usage", "/v1/webhooks", "/v1/tenant"):
            response = client.get(path)
            assert error_of(response) == (401, "unauthorized"), path
            assert response.headers["www-authenticate"] == "Bearer"
        assert error_of(client.post("/v1/documents", files={"file": ("a.pdf", text_pages(1))})) == \
            (401, "unauthorized")
        assert client.get("/v1/documents", headers={"Authorization": "Bearer pm_madeup"}).status_code == 401
        assert client.get("/v1/documents", headers={"Authorization": "Basic eDp5"}).status_code == 401
        assert client.get("/v1/admin/tenants", headers={"Authorization": f"Bearer {a.key}"}).status_code == 403
        assert client.get("/v1/admin/tenants").status_code == 401
    # Keys are stored as hashes, with a short prefix to recognise them by; the key itself is nowhere.
    with get_engine(database_url).connect() as connection:
        rows = {row.id: row for row in connection.execute(sa.text("SELECT id, prefix, key_hash FROM api_keys"))}
        dump = json.dumps([list(map(str, r)) for r in connection.execute(sa.text("SELECT * FROM api_keys")).all()])
    for tenant in (a, b):
        assert rows[tenant.key_id].key_hash == hashlib.sha256(tenant.key.encode()).hexdigest()
        assert rows[tenant.key_id].prefix == tenant.key[:11] and tenant.key not in dump

    # A revoked key answers 401 at once; a second key of the same tenant keeps working.
    with api.admin() as admin:
        second = admin.post(f"/v1/admin/tenants/{a.id}/keys", json={}).json()
        assert admin.delete(f"/v1/admin/keys/{a.key_id}").json()["revoked_at"]
        keys = {k["id"]: k for k in admin.get(f"/v1/admin/tenants/{a.id}/keys").json()}
        assert keys[a.key_id]["revoked_at"] and keys[second["id"]]["revoked_at"] is None
        assert error_of(admin.delete("/v1/admin/keys/key_missing")) == (404, "not_found")
    with api.client(key=a.key) as client:
        assert error_of(client.get("/v1/tenant")) == (401, "unauthorized")
    with api.client(key=second["key"]) as client:
        assert client.get("/v1/tenant").json()["id"] == a.id
    with api.client(key=b.key) as client:
        assert client.get("/v1/tenant").status_code == 200


def test_the_admin_api_is_off_without_an_admin_key(api_factory: ApiFactory) -> None:
    api = api_factory()
    off = api_factory(admin_key=None)  # same database: the tenant made through `api` exists
    with off.admin() as admin:
        assert error_of(admin.get("/v1/admin/tenants")) == (403, "forbidden")
    with off.client(key=api.tenant.key) as client:
        assert client.get("/v1/tenant").json()["id"] == api.tenant.id
