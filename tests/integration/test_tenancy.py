"""Tenants over the real HTTP API on PostgreSQL and S3: isolation on every endpoint, API keys (hashed,
revocable), the admin guard, server-sent events, usage, presigned result redirects and retention."""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest
import sqlalchemy as sa

from services.core.db.session import get_engine
from tests.conftest import PlatformFactory
from tests.harness import Platform
from tests.pdfs import repeat_pages

pytestmark = pytest.mark.slow

ONE_PAGE = Path("dev") / "pypdf_crazyones" / "crazyones.pdf"


def sse_events(client: httpx.Client, document_id: str, timeout: float = 120) -> list[tuple[str, dict[str, Any]]]:
    """Reads the stream until the server closes it (after the final event)."""
    events: list[tuple[str, dict[str, Any]]] = []
    with client.stream("GET", f"/v1/documents/{document_id}/events", timeout=timeout) as response:
        assert response.status_code == 200 and response.headers["content-type"].startswith("text/event-stream")
        kind = None
        for line in response.iter_lines():
            if line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: ") and kind:
                events.append((kind, json.loads(line[6:])))
    return events


def s3_keys(platform: Platform, s3_endpoint: str, prefix: str) -> list[str]:
    s3 = boto3.client("s3", endpoint_url=s3_endpoint, aws_access_key_id="testing", aws_secret_access_key="testing",
                      region_name="us-east-1")
    return [o["Key"] for o in s3.list_objects_v2(Bucket=platform.bucket, Prefix=prefix).get("Contents", [])]


def test_two_tenants_keys_isolation_events_usage_redirect_and_retention(
        platform_factory: PlatformFactory, postgres_url: str, s3_endpoint: str, corpus: Path, tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, s3_endpoint=s3_endpoint, engine="fake", extra_env={
        "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "50", "PAGEMILL_RETENTION__SWEEP_INTERVAL_S": "1",
    }).start(reconciler=True)
    a = platform.create_tenant("acme")
    b = platform.create_tenant("globex")
    created = platform.upload(corpus / ONE_PAGE, key=a.key)
    doc = created["id"]
    assert platform.wait_done(doc, key=a.key)["status"] == "succeeded"

    # Tenant B: every endpoint answers exactly as for a document that does not exist.
    paths = [f"/v1/documents/{doc}", f"/v1/documents/{doc}/result", f"/v1/documents/{doc}/result?format=json",
             f"/v1/documents/{doc}/pages/1", f"/v1/documents/{doc}/events", f"/v1/documents/{doc}?wait=1"]
    with platform.client(key=b.key) as client:
        for path in paths:
            response = client.get(path)
            assert (response.status_code, response.json()["error"]["code"]) == (404, "not_found"), path
        assert client.delete(f"/v1/documents/{doc}").status_code == 404
        assert client.get("/v1/documents").json() == {"data": [], "next_cursor": None}
        assert client.get("/v1/usage").json()["pages"] == 0
    # ... and tenant A still has all of it, B's delete changed nothing.
    with platform.client(key=a.key) as client:
        assert client.get(f"/v1/documents/{doc}").json()["status"] == "succeeded"
        assert "fake engine output" in client.get(f"/v1/documents/{doc}/result").text
        assert client.get(f"/v1/documents/{doc}/pages/1").json()["status"] == "succeeded"
        assert [d["id"] for d in client.get("/v1/documents").json()["data"]] == [doc]
        events = sse_events(client, doc)
        assert [kind for kind, _ in events] == ["document.queued", "document.succeeded"]
        assert events[-1][1]["data"]["document_id"] == doc
        # With the S3 store, the result can come straight from S3 through a presigned URL.
        redirect = client.get(f"/v1/documents/{doc}/result", params={"redirect": "true"})
        assert redirect.status_code == 307 and redirect.headers["location"].startswith(s3_endpoint)
        assert "X-Amz-Signature" in redirect.headers["location"]
        fetched = httpx.get(redirect.headers["location"], timeout=30)  # no API key: the URL is the credential
        assert fetched.status_code == 200 and fetched.text == client.get(f"/v1/documents/{doc}/result").text
        for fmt in ("html", "latex", "chunks"):  # every format has its presigned URL
            moved = client.get(f"/v1/documents/{doc}/result", params={"redirect": "true", "format": fmt})
            assert moved.status_code == 307, (fmt, moved.text)
            assert httpx.get(moved.headers["location"], timeout=30).content == \
                client.get(f"/v1/documents/{doc}/result", params={"format": fmt}).content
        usage = client.get("/v1/usage").json()
        assert usage["pages"] == 1 and usage["by_mode_engine"] == [
            {"mode": "fast", "engine": "fake", "pages": 1, "cached_pages": 0, "failed_pages": 0}]
        assert client.get("/v1/usage", params={"from": "2000-01-01", "to": "2000-02-01"}).json()["pages"] == 0

    # Live events: queued, progress while pages end, then the final event; the stream closes itself.
    forty = tmp_path / "forty.pdf"
    forty.write_bytes(repeat_pages(corpus / ONE_PAGE, 40))
    live = platform.upload(forty, key=a.key, cache="false")
    with platform.client(key=a.key) as client:
        events = sse_events(client, live["id"])
    kinds = [kind for kind, _ in events]
    assert kinds[0] == "document.queued" and kinds[-1] == "document.succeeded" and "document.progress" in kinds
    done = [payload["data"]["pages_done"] for kind, payload in events if kind == "document.progress"]
    assert done == sorted(done) and done[0] > 0 and done[-1] <= 40

    # No key, a made-up key, a tenant key on the admin API: 401. Keys are stored as hashes only.
    with platform.client(auth=False) as client:
        for path in ("/v1/documents", f"/v1/documents/{doc}", "/v1/usage", "/v1/webhooks"):
            response = client.get(path)
            assert (response.status_code, response.json()["error"]["code"]) == (401, "unauthorized"), path
            assert response.headers["www-authenticate"] == "Bearer"
        assert client.get("/v1/documents", headers={"Authorization": "Bearer pm_madeup"}).status_code == 401
        # a tenant's key is a key, just not the admin one: 403 says what happened (issue 13, defect 7)
        assert client.get("/v1/admin/tenants", headers={"Authorization": f"Bearer {a.key}"}).status_code == 403
        assert client.get("/v1/admin/tenants").status_code == 401
    with get_engine(postgres_url).connect() as connection:
        rows = connection.execute(sa.text("SELECT id, prefix, key_hash FROM api_keys")).all()
        dump = json.dumps([list(map(str, r)) for r in connection.execute(sa.text("SELECT * FROM api_keys")).all()])
    hashes = {row.id: row for row in rows}
    for tenant in (a, b):
        assert hashes[tenant.key_id].key_hash == hashlib.sha256(tenant.key.encode()).hexdigest()
        assert hashes[tenant.key_id].prefix == tenant.key[:11] and tenant.key not in dump

    # A revoked key answers 401 at once; a second key of the same tenant keeps working.
    with platform.admin() as admin:
        second = admin.post(f"/v1/admin/tenants/{a.id}/keys", json={}).json()
        assert admin.delete(f"/v1/admin/keys/{a.key_id}").json()["revoked_at"]
    with platform.client(key=a.key) as client:
        assert client.get(f"/v1/documents/{doc}").status_code == 401
    with platform.client(key=second["key"]) as client:
        assert client.get(f"/v1/documents/{doc}").status_code == 200

    # Retention: a tenant keeping results 3 seconds loses its stored objects to the sweep; the row stays.
    brief = platform.create_tenant("brief", retention_days=3 / 86400)
    short = platform.upload(corpus / ONE_PAGE, key=brief.key)["id"]
    assert platform.wait_done(short, key=brief.key)["status"] == "succeeded"
    with platform.client(key=brief.key) as client:
        deadline = time.monotonic() + 60
        while client.get(f"/v1/documents/{short}/result").status_code != 410:
            assert time.monotonic() < deadline, "the retention sweep did not expire the document"
            time.sleep(0.5)
        assert client.get(f"/v1/documents/{short}/result").json()["error"]["code"] == "result_expired"
        assert client.get(f"/v1/documents/{short}").json()["expired_at"]
    assert s3_keys(platform, s3_endpoint, f"documents/{short}/") == []
    assert s3_keys(platform, s3_endpoint, f"documents/{doc}/")  # the default retention (30 days) keeps A's
    with platform.client(key=second["key"]) as client:
        # DELETE erases at once
        assert client.delete(f"/v1/documents/{doc}").json()["deleted"] is True
        assert client.get(f"/v1/documents/{doc}").status_code == 404
    assert s3_keys(platform, s3_endpoint, f"documents/{doc}/") == []
