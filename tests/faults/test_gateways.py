"""The gateway SIGKILLed mid-upload (nothing half-accepted), and two gateways and two workers on one Redis and one
database behaving as one platform: uploads, server-sent events, idempotency and rate limits (no sticky state)."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa

from services.core.db.models import Document
from services.core.db.session import session_scope
from services.core.storage import get_store
from tests.conftest import PlatformFactory
from tests.faults.recovery import check_documents, now_utc, record
from tests.faults.test_workers import pdf
from tests.harness import Platform, wait_until
from tests.integration.test_tenancy import sse_events
from tests.servers import free_port

pytestmark = [pytest.mark.slow, pytest.mark.faults]

BOUNDARY = "pagemill-fault-boundary"


def client_for(platform: Platform, url: str, key: str | None = None) -> httpx.Client:
    return httpx.Client(base_url=url, timeout=60, headers={"Authorization": f"Bearer {key or platform.api_key}"})


def half_sent_upload(platform: Platform, data: bytes, release: threading.Event, outcome: list[str],
                     half_sent: threading.Event | None = None) -> None:
    """A multipart upload that sends half its body, sets `half_sent`, waits for `release`, then sends the rest."""
    head = (f"--{BOUNDARY}\r\nContent-Disposition: form-data; name=\"file\"; filename=\"slow.pdf\"\r\n"
            "Content-Type: application/pdf\r\n\r\n").encode()

    def body() -> Iterator[bytes]:
        yield head + data[: len(data) // 2]
        if half_sent is not None:
            half_sent.set()  # asked for the next part: the first half went to the socket
        release.wait(30)
        yield data[len(data) // 2:] + f"\r\n--{BOUNDARY}--\r\n".encode()

    try:
        with client_for(platform, platform.url) as client:
            response = client.post("/v1/documents", content=body(),
                                   headers={"content-type": f"multipart/form-data; boundary={BOUNDARY}"})
        outcome.append(str(response.status_code))
    except httpx.HTTPError as exc:
        outcome.append(type(exc).__name__)


def test_gateway_sigkilled_mid_upload_accepts_nothing_by_half(platform_factory: PlatformFactory,
                                                               postgres_url: str, corpus: Path,
                                                               tmp_path: Path) -> None:
    # A gateway killed between an upload's commit and the sending of its jobs leaves a queued document whose
    # message was never sent: the reconciler sends it once `reconciler.unsent_grace_s` (10 s) has passed; the
    # queued lease stays at its default (15 min), so such a document could not end in the test's time otherwise.
    platform = platform_factory(postgres_url, engine="fake", extra_env={
        "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "50", "PAGEMILL_LIMITS__REQUESTS_PER_MINUTE": "100000"}).start(
        concurrency=2, reconciler=True)
    data = pdf(corpus, tmp_path, 12).read_bytes()
    accepted: list[str] = []
    outcomes: list[str] = []
    stop, release = threading.Event(), threading.Event()

    def uploads() -> None:
        with client_for(platform, platform.url) as client:
            while not stop.is_set():
                try:
                    response = client.post("/v1/documents", files={"file": ("12.pdf", data)})
                    outcomes.append(str(response.status_code))
                    if response.status_code == 202:
                        accepted.append(response.json()["id"])
                except httpx.HTTPError as exc:
                    outcomes.append(type(exc).__name__)
                    time.sleep(0.2)

    slow: list[str] = []
    half_sent = threading.Event()
    threads = [threading.Thread(target=uploads) for _ in range(3)]
    threads.append(threading.Thread(target=half_sent_upload, args=(platform, data, release, slow, half_sent)))
    for thread in threads:
        thread.start()
    # Killed once uploads are being accepted and the slow one is half sent (signals, not a fixed pause: on a
    # loaded machine the first 202 can take seconds).
    assert half_sent.wait(60), "the half-sent upload never started"
    wait_until(lambda: len(accepted) >= 2, 60, "uploads accepted before the kill")
    platform.kill("gateway")  # SIGKILL while uploads are in flight, one of them with half its body sent
    killed_at = now_utc()
    release.set()
    before = len(accepted)
    time.sleep(1)
    platform.start_gateway()
    back = now_utc()
    wait_until(lambda: len(accepted) > before, 60, "an upload accepted by the restarted gateway")
    stop.set()
    for thread in threads:
        thread.join(60)
    assert slow and slow[0] not in ("202", "200"), f"the half-sent upload was answered {slow}"
    errors = [o for o in outcomes if not o.isdigit()]
    assert errors and len(accepted) > before > 0, (outcomes, before)
    assert set(outcomes) - set(errors) <= {"202"}, outcomes  # the clients saw errors, never a 500

    # Every document row the database holds has its source, and ends: none is left half-accepted.
    store = get_store(platform.settings())
    with session_scope(platform.database_url) as session:
        rows = session.execute(sa.select(Document.id, Document.source_key)
                               .where(Document.tenant_id == platform.tenant_id)).all()
    assert {document_id for document_id, _ in rows} >= set(accepted)
    for _, key in rows:
        assert store.get(key)
    figures = check_documents(platform, "SIGKILL of the gateway mid-upload (restarted after 1 s)",
                              [document_id for document_id, _ in rows], back)
    figures.extra.update(uploads_accepted=len(accepted), client_errors=len(errors),
                         accepted_but_unanswered=len(rows) - len(accepted),
                         gateway_back_s=round((back - killed_at).total_seconds(), 2))
    figures.notes = "unsent grace 10 s (a document committed but whose jobs were never sent waits one)"
    record(figures)


def test_two_gateways_and_two_workers_behave_as_one(platform_factory: PlatformFactory, postgres_url: str,
                                                    corpus: Path, tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, engine="fake",
                                extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "150"}).start(concurrency=1)
    platform.start_worker("worker2", concurrency=1)
    platform.wait_workers("worker", "worker2")  # both consume before the uploads, so both parse pages
    gateways = [platform.url, platform.start_gateway("gateway2", port=free_port())]
    source = pdf(corpus, tmp_path, 8)

    def upload(gateway: int, key: str | None = None, **kwargs: Any) -> httpx.Response:
        with client_for(platform, gateways[gateway], key) as client, source.open("rb") as handle:
            return client.post("/v1/documents", files={"file": ("8.pdf", handle)}, **kwargs)

    # Uploads through either gateway; each followed as server-sent events through the other one.
    created = [upload(i % 2).json()["id"] for i in range(4)]
    for i, document_id in enumerate(created):
        with client_for(platform, gateways[(i + 1) % 2]) as client:
            events = sse_events(client, document_id)
        assert events[0][0] == "document.queued" and events[-1][0] == "document.succeeded", events
    check_documents(platform, "two gateways, two workers", created, now_utc())
    for i, document_id in enumerate(created):  # both gateways tell the same story
        answers = []
        for gateway in gateways:
            with client_for(platform, gateway) as client:
                answers.append({k: v for k, v in client.get(f"/v1/documents/{document_id}").json().items()})
        assert answers[0] == answers[1], (i, answers)
    assert "page.parsed" in platform.log("worker") and "page.parsed" in platform.log("worker2")

    # An Idempotency-Key used on one gateway is replayed by the other.
    first = upload(0, headers={"Idempotency-Key": "fault-suite-1"})
    again = upload(1, headers={"Idempotency-Key": "fault-suite-1"})
    assert first.status_code == 202 and again.status_code == 200, (first.text, again.text)
    assert again.json()["id"] == first.json()["id"] and again.headers["idempotent-replayed"] == "true"

    # One tenant's requests per minute, counted across both gateways.
    limited = platform.create_tenant("limited", requests_per_minute=4)
    answers = [upload(i % 2, key=limited.key).status_code for i in range(7)]
    assert answers.count(202) == 4 and answers.count(429) == 3, answers

    assert platform.wait_done(first.json()["id"])["status"] == "succeeded"
