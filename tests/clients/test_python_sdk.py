"""The Python SDK against a real platform (gateway, Celery workers, Redis, SQLite): upload → wait → every format,
pages, listing, delete, usage, a 429 honoured, an upload retried after its answer was lost, a real webhook
verified, and the async client."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pagemill_client
import pytest
from pagemill_client import AsyncClient, Client, verify_webhook

from services.core.document_tasks import TASK_FORMATS
from tests.clients.proxy import DroppingProxy
from tests.harness import Platform, wait_until
from tests.receivers import Receiver

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def platform(tmp_path_factory: pytest.TempPathFactory, redis_server: str) -> Iterator[Platform]:
    workdir = tmp_path_factory.mktemp("sdk")
    platform = Platform(workdir=workdir, database_url=f"sqlite:///{workdir / 'pagemill.db'}",
                        redis_base_url=redis_server, engine="fake",
                        extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "150"})
    platform.start(concurrency=2)
    yield platform
    platform.stop()


@pytest.fixture
def pdf(corpus: Path) -> Path:
    return corpus / "dev" / "docling_multi_page" / "multi_page.pdf"


def served_formats(platform: Platform) -> list[str]:
    """The result formats the running server declares (its OpenAPI schema), so this test follows the server;
    less the answers of model tasks, which only a document submitted with that task has."""
    schema = httpx.get(f"{platform.url}/openapi.json", timeout=30).json()
    (param,) = [p for p in schema["paths"]["/v1/documents/{document_id}/result"]["get"]["parameters"]
                if p["name"] == "format"]
    found = param["schema"]
    if "$ref" in found:  # the format enum is a component of its own
        found = schema["components"]["schemas"][found["$ref"].rsplit("/", 1)[-1]]
    return [f for f in found["enum"] if f not in TASK_FORMATS.values()]


def test_parse_waits_with_progress_and_fetches_every_format(platform: Platform, pdf: Path) -> None:
    progress: list[pagemill_client.Progress] = []
    formats = served_formats(platform)
    with Client(platform.url, platform.api_key) as client:
        document = client.parse(pdf, pages="1-3", metadata={"ticket": 7}, formats=formats,  # type: ignore[arg-type]
                                on_progress=progress.append, timeout=120)
        assert document.status == "succeeded" and document.pages_done == 3 and document.metadata == {"ticket": 7}
        assert set(document.results) == set(formats)
        assert document.markdown.count("<!-- page") == 3 and "## Page 1" in document.markdown
        assert isinstance(document.results["markdown"], str) and isinstance(document.results["json"], dict)
        body = document.results["json"]
        assert [p["page_number"] for p in body["pages"]] == [1, 2, 3]
        assert isinstance(document.elements(), list)  # the element tree, where the server has it
        for fmt in formats:
            fetched = client.result(document.id, fmt)  # type: ignore[arg-type]
            assert fetched and (isinstance(fetched, str) or fmt in ("json", "chunks"))
        # progress came as the pages ended, and the last report is the whole document
        assert progress[-1].pages_done == 3 and progress[-1].fraction == 1.0
        assert [p.pages_done for p in progress] == sorted(p.pages_done for p in progress)
        pages = client.pages(document.id)
        assert [p.page_number for p in pages] == [1, 2, 3] and all(p.engine == "fake" for p in pages)
        with pytest.raises(pagemill_client.NotFound) as missing:
            client.page(document.id, 4)
        assert missing.value.status_code == 404 and missing.value.request_id


def test_list_paginates_delete_erases_and_usage_counts(platform: Platform, pdf: Path) -> None:
    tenant = platform.create_tenant("lister")
    with Client(platform.url, tenant.key) as client:
        ids = [client.submit(pdf, pages=str(n), cache=False).id for n in (1, 2, 3)]
        listed = [d.id for d in client.list(page_size=2)]  # two requests: 2 + 1
        assert listed == ids[::-1]
        for document_id in ids:
            client.wait(document_id, timeout=120)
        deleted = client.delete(ids[0])
        assert deleted.deleted and deleted.id == ids[0]
        assert [d.id for d in client.list(page_size=2)] == ids[:0:-1]
        with pytest.raises(pagemill_client.NotFound):
            client.get(ids[0])
        usage = client.usage()
        assert usage.pages == 3 and usage.by_mode_engine[0].engine == "fake"
    with Client(platform.url, "pm_not-a-key") as client, pytest.raises(pagemill_client.Unauthorized):
        client.get(ids[1])


def test_rate_limited_uploads_wait_out_retry_after(platform: Platform, pdf: Path) -> None:
    tenant = platform.create_tenant("tiny-rate", requests_per_minute=10)  # 10 at once, then one per 6 s
    with Client(platform.url, tenant.key, max_retries=0) as impatient:
        for _ in range(10):
            impatient.submit(pdf, pages="1")
        with pytest.raises(pagemill_client.RateLimited) as refused:
            impatient.submit(pdf, pages="1")
    assert refused.value.code == "rate_limited" and refused.value.retry_after is not None
    assert 1 <= refused.value.retry_after <= 7
    started = time.monotonic()
    with Client(platform.url, tenant.key, max_retries=3) as patient:
        created = patient.submit(pdf, pages="1")
    waited = time.monotonic() - started
    assert created.status in ("queued", "succeeded") and waited >= refused.value.retry_after - 1.5


def test_an_upload_whose_answer_was_lost_is_retried_into_the_same_document(platform: Platform, pdf: Path) -> None:
    tenant = platform.create_tenant("flaky-network")
    proxy = DroppingProxy(("127.0.0.1", platform.port), drop={b"POST /v1/documents": 1})
    try:
        with Client(proxy.url, tenant.key) as client:
            created = client.submit(pdf, pages="1-2", cache=False)
            assert proxy.dropped == [b"POST /v1/documents HTTP/1.1"]
            # the retry carried the same Idempotency-Key: the server replayed the first document
            assert created.replayed and created.pages_total == 2
            assert [d.id for d in client.list()] == [created.id]
    finally:
        proxy.close()


def test_wait_falls_back_to_long_polling_when_the_event_stream_breaks(platform: Platform, pdf: Path) -> None:
    proxy = DroppingProxy(("127.0.0.1", platform.port), drop={b"GET /v1/documents/": 0})
    try:
        with Client(proxy.url, platform.api_key) as client:
            created = client.submit(pdf, pages="1-4", cache=False)
            with proxy.lock:
                proxy.drop[f"GET /v1/documents/{created.id}/events".encode()] = 10
            seen: list[int] = []
            state = client.wait(created.id, timeout=120, on_progress=lambda p: seen.append(p.pages_done))
            assert state.status == "succeeded" and seen[-1] == 4
            assert proxy.dropped and all(b"/events" in line for line in proxy.dropped)
    finally:
        proxy.close()


def test_a_real_webhook_delivery_verifies_and_a_forged_one_does_not(platform: Platform, pdf: Path) -> None:
    with platform.client() as http:
        secret = http.get("/v1/tenant").json()["webhook_secret"]
    receiver = Receiver(secret=secret)
    try:
        with Client(platform.url, platform.api_key) as client:
            document = client.parse(pdf, pages="1", webhook_url=receiver.url, timeout=120)
        delivered = wait_until(lambda: receiver.of_type("document.succeeded"), 60, "the final webhook")[0]
        event: dict[str, Any] = verify_webhook(delivered.body, delivered.headers, secret)
        assert event["type"] == "document.succeeded" and event["data"]["document_id"] == document.id
        forged = json.dumps({**event, "data": {**event["data"], "status": "failed"}})
        for body, headers, key in ((forged, delivered.headers, secret),
                                   (delivered.body, delivered.headers, "whsec_" + "A" * 32),
                                   (delivered.body, {**delivered.headers, "webhook-timestamp": "1"}, secret)):
            with pytest.raises(pagemill_client.WebhookVerificationError):
                verify_webhook(body, headers, key)
    finally:
        receiver.close()


def test_the_async_client_does_the_same(platform: Platform, pdf: Path) -> None:
    async def run() -> None:
        progress: list[int] = []
        async with AsyncClient(platform.url, platform.api_key) as client:
            document = await client.parse(pdf, pages="2-3", formats=["markdown", "json"],
                                          on_progress=lambda p: progress.append(p.pages_done))
            assert document.status == "succeeded" and "## Page" in document.markdown and progress[-1] == 2
            assert [p.page_number for p in await client.pages(document.id)] == [2, 3]
            assert document.id in [d.id async for d in client.list(page_size=1)][:3]
            with pytest.raises(pagemill_client.ResultNotReady):
                created = await client.submit(pdf, cache=False)
                await client.result(created.id)
            await client.delete(created.id)

    asyncio.run(run())
