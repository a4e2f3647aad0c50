"""Faults of the platform's own processes: a pool worker, a whole worker and the reconciler SIGKILLed mid-document.
Each document still ends with every page exactly once; the figures go into docs/reliability.md."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import sqlalchemy as sa

from services.core.db.models import Page
from services.core.db.session import session_scope
from tests.conftest import PlatformFactory
from tests.faults.recovery import (
    check_documents,
    now_utc,
    page_row,
    record,
    running_page_owner,
    wait_pages_done,
)
from tests.harness import wait_until
from tests.pdfs import repeat_pages

pytestmark = [pytest.mark.slow, pytest.mark.faults]

# A pool child or a whole worker killed mid-page: Celery reports the lost job, as it should.
WORKER_LOST = r"WorkerLostError|exited with 'signal 9 \(SIGKILL\)'"


def pdf(corpus: Path, tmp_path: Path, pages: int) -> Path:
    source = tmp_path / f"{pages}.pdf"
    source.write_bytes(repeat_pages(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", pages))
    return source


def test_sigkill_of_the_process_parsing_a_page(platform_factory: PlatformFactory, postgres_url: str,
                                               corpus: Path, tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, engine="fake",
                                extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "1500"}).start(concurrency=2)
    platform.expect_log_errors(WORKER_LOST)
    created = platform.upload(pdf(corpus, tmp_path, 6))
    index, pid = running_page_owner(platform, created["id"])
    os.kill(pid, signal.SIGKILL)  # the Celery child dies mid-page; its parent requeues the message
    killed_at = now_utc()

    figures = check_documents(platform, "SIGKILL of a pool worker process", [created["id"]], killed_at)
    killed = page_row(platform, created["id"], index)
    assert killed.deliveries == 2  # picked up again, once
    assert killed.finished_at is not None
    figures.extra["killed_page_done_s"] = round((killed.finished_at - killed_at).total_seconds(), 2)
    record(figures)


def test_whole_worker_killed_its_pages_are_taken_back_after_one_short_lease(
        platform_factory: PlatformFactory, postgres_url: str, corpus: Path, tmp_path: Path) -> None:
    """Issue 13, defect 5: with the 600 s lease a dead worker's pages waited 10 minutes. Leases are now short
    (30 s, the default here) and renewed by a heartbeat while a page runs."""
    platform = platform_factory(postgres_url, engine="fake",
                                extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "4000"}).start(
        concurrency=2, reconciler=True)
    settings = platform.settings()
    assert settings.worker.page_lease_s == 30 and settings.reconciler.interval_s == 1
    created = platform.upload(pdf(corpus, tmp_path, 6))
    index, _ = running_page_owner(platform, created["id"])
    time.sleep(1)
    platform.kill("worker")  # SIGKILL to the main process and its pool children, with the messages they held
    killed_at = now_utc()
    platform.start_worker("worker2", concurrency=2)

    figures = check_documents(platform, "SIGKILL of a whole worker (main process and pool)", [created["id"]],
                              killed_at)
    killed = page_row(platform, created["id"], index)
    assert killed.deliveries == 2 and killed.started_at is not None
    taken_back_s = (killed.started_at - killed_at).total_seconds()
    bound = settings.worker.page_lease_s + settings.reconciler.interval_s + 3
    assert taken_back_s <= bound, f"the killed page started again {taken_back_s:.1f} s after the kill (> {bound} s)"
    figures.extra["taken_back_s"] = round(taken_back_s, 2)
    figures.notes = f"lease {settings.worker.page_lease_s} s, heartbeat {settings.worker.lease_heartbeat_s} s"
    record(figures)


def test_a_page_longer_than_its_lease_is_not_taken_back_while_its_worker_lives(
        platform_factory: PlatformFactory, postgres_url: str, corpus: Path, tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, engine="fake", extra_env={
        "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "12000", "PAGEMILL_WORKER__PAGE_LEASE_S": "5",
        "PAGEMILL_WORKER__LEASE_HEARTBEAT_S": "1"}).start(concurrency=1, reconciler=True)
    created = platform.upload(pdf(corpus, tmp_path, 1))
    wait_until(lambda: page_row(platform, created["id"], 0).status == "running", 30, "the page to start")
    renewed_seen = False
    while (page := page_row(platform, created["id"], 0)).status == "running":
        # never handed back to the queue, its lease always ahead (5 s lease, renewed every second)
        seen_at = now_utc()
        assert page.lease_expires_at is not None and page.lease_expires_at > seen_at, page.lease_expires_at
        # Seen running with its lease ahead later than a lease after it started: the heartbeat renewed it. (Not a
        # count of polls: on a loaded machine a poll takes longer, and fewer fit in the page's 12 s.)
        assert page.started_at is not None
        renewed_seen = renewed_seen or (seen_at - page.started_at).total_seconds() > 5 + 1
        time.sleep(0.5)
    assert page.status == "succeeded" and page.deliveries == 1, (page.status, page.deliveries)
    assert page.started_at and page.finished_at and (page.finished_at - page.started_at).total_seconds() >= 12
    assert renewed_seen, "the page was never seen running past its first lease"
    assert platform.wait_done(created["id"], timeout=30)["status"] == "succeeded"


def test_the_reconciler_killed_and_restarted_resumes(platform_factory: PlatformFactory, postgres_url: str,
                                                     corpus: Path, tmp_path: Path) -> None:
    """The reconciler holds no state: killed while Redis lost the queue, a new one repairs it from the database."""
    import redis

    platform = platform_factory(postgres_url, engine="fake",
                                extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "200"}).start(
        concurrency=2, reconciler=True)
    # 40 pages: the two workers each hold a chunk of 16, so the flush below has queued pages to lose.
    created = platform.upload(pdf(corpus, tmp_path, 40))
    wait_pages_done(platform, created["id"], 2)
    platform.kill("reconciler")
    redis.Redis.from_url(platform.redis_url).flushdb()  # the queued pages are gone while nobody reconciles
    time.sleep(3)
    with platform.client() as client:
        assert client.get(f"/v1/documents/{created['id']}").json()["status"] == "running"
    platform.start_reconciler()
    restarted_at = now_utc()
    record(check_documents(platform, "SIGKILL of the reconciler (restarted, Redis flushed meanwhile)",
                           [created["id"]], restarted_at))


def test_redis_flushed_mid_document_is_repaired_by_the_reconciler(platform_factory: PlatformFactory,
                                                                  postgres_url: str, corpus: Path,
                                                                  tmp_path: Path) -> None:
    import redis

    # One page per message: the messages the worker holds (one running, at most one reserved) can never be the
    # whole document, whatever the chunk sizing reads of the fleet at that moment (a 16-page chunk and its
    # 4-page neighbour, both taken before the flush, once let a loaded run end the document on its own).
    platform = platform_factory(postgres_url, engine="fake", extra_env={
        "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "250", "PAGEMILL_WORKER__CHUNK_MAX_PAGES": "1"}).start(concurrency=1)
    created = platform.upload(pdf(corpus, tmp_path, 20))
    wait_pages_done(platform, created["id"], 3)
    redis.Redis.from_url(platform.redis_url).flushdb()  # every queued message is gone

    # The worker holds at most one message (concurrency 1, prefetch 1) and takes them in order: once a
    # document uploaded after the flush has been parsed, whatever it held before has ended too. Nothing is
    # left to move the first document without the reconciler, though the worker is alive and consuming.
    probe = platform.upload(corpus / "dev" / "pypdf_crazyones" / "crazyones.pdf", cache="false")
    assert platform.wait_done(probe["id"], timeout=60)["status"] == "succeeded"
    with session_scope(postgres_url) as session:
        running = session.execute(sa.select(Page.index).where(Page.document_id == created["id"],
                                                              Page.status == "running")).all()
    with platform.client() as client:
        stalled = client.get(f"/v1/documents/{created['id']}").json()
    assert stalled["status"] == "running" and stalled["pages_done"] < 20 and running == []
    # (the probe's assembly is acknowledged just after its status flips)
    wait_until(lambda: platform.messages_waiting() == 0, 30, "no message left: nothing moves without the reconciler")

    platform.start_reconciler()
    started_at = now_utc()
    record(check_documents(platform, "Redis FLUSHDB mid-document", [created["id"]], started_at,
                           pages_done_before=stalled["pages_done"]))


