"""Tenants on the real platform (PostgreSQL, S3, workers, reconciler): server-sent events, usage of parsed
pages, presigned result redirects, retention and erasure from S3. Isolation, API keys and the admin guard
are answered by the gateway alone: tests/api/test_tenancy.py."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import boto3
import httpx
import pytest

from tests.conftest import PlatformFactory
from tests.harness import Platform, wait_until
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


def test_events_usage_redirect_retention_and_erasure_on_postgres_and_s3(
        platform_factory: PlatformFactory, postgres_url: str, s3_endpoint: str, corpus: Path, tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, s3_endpoint=s3_endpoint, engine="fake", extra_env={
        "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "50", "PAGEMILL_RETENTION__SWEEP_INTERVAL_S": "1",
    }).start(reconciler=True)
    a = platform.create_tenant("acme")
    b = platform.create_tenant("globex")
    created = platform.upload(corpus / ONE_PAGE, key=a.key)
    doc = created["id"]
    assert platform.wait_done(doc, key=a.key)["status"] == "succeeded"

    with platform.client(key=b.key) as client:  # the other tenant: nothing to see, nothing charged
        assert client.get(f"/v1/documents/{doc}/events").status_code == 404
        assert client.get("/v1/usage").json()["pages"] == 0
    with platform.client(key=a.key) as client:
        assert "fake engine output" in client.get(f"/v1/documents/{doc}/result").text
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

    # Retention: a tenant keeping results 3 seconds loses its stored objects to the sweep; the row stays.
    brief = platform.create_tenant("brief", retention_days=3 / 86400)
    short = platform.upload(corpus / ONE_PAGE, key=brief.key)["id"]
    assert platform.wait_done(short, key=brief.key)["status"] == "succeeded"
    with platform.client(key=brief.key) as client:
        wait_until(lambda: client.get(f"/v1/documents/{short}/result").status_code == 410, 60, "the retention sweep")
        assert client.get(f"/v1/documents/{short}/result").json()["error"]["code"] == "result_expired"
        assert client.get(f"/v1/documents/{short}").json()["expired_at"]
    assert s3_keys(platform, s3_endpoint, f"documents/{short}/") == []
    assert s3_keys(platform, s3_endpoint, f"documents/{doc}/")  # the default retention (30 days) keeps A's
    with platform.client(key=a.key) as client:
        # DELETE erases at once
        assert client.delete(f"/v1/documents/{doc}").json()["deleted"] is True
        assert client.get(f"/v1/documents/{doc}").status_code == 404
    assert s3_keys(platform, s3_endpoint, f"documents/{doc}/") == []
