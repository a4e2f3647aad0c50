"""Faults: a worker killed in the middle of a page, Redis losing every message. The document still finishes."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest
import redis
import sqlalchemy as sa

from services.core.db.models import Page
from services.core.db.session import session_scope
from tests.conftest import PlatformFactory
from tests.harness import Platform, wait_until
from tests.pdfs import repeat_pages

pytestmark = pytest.mark.slow


def running_page_owner(platform: Platform, document_id: str, timeout: float = 60) -> tuple[int, int]:
    """(page index, pid) of a page a worker process is parsing right now."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        with session_scope(platform.database_url) as session:
            for page in session.execute(sa.select(Page).where(Page.document_id == document_id,
                                                              Page.status == "running")).scalars():
                owner = page.lease_owner or ""
                if owner:
                    return page.index, int(owner.rsplit(":", 1)[1])
        time.sleep(0.05)
    raise AssertionError("no page started running")


def assert_each_page_once(platform: Platform, document_id: str, pages: int) -> None:
    document = platform.result(document_id, "json")
    assert [p["page"] for p in document["pages"]] == list(range(1, pages + 1))
    markdown = platform.result(document_id)
    for number in range(1, pages + 1):
        assert markdown.count(f"<!-- page {number} -->") == 1
        assert markdown.count(f"## Page {number}\n") == 1, f"page {number} duplicated or missing"


def test_sigkill_of_the_process_parsing_a_page(platform_factory: PlatformFactory, postgres_url: str,
                                               corpus: Path, tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, engine="fake",
                                extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "1500"}).start(concurrency=2)
    source = tmp_path / "six.pdf"
    source.write_bytes(repeat_pages(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", 6))
    created = platform.upload(source)
    index, pid = running_page_owner(platform, created["id"])
    os.kill(pid, signal.SIGKILL)  # the Celery child dies mid-page; its parent requeues the message

    state = platform.wait_done(created["id"], timeout=120)
    assert state["status"] == "succeeded" and state["pages_done"] == 6 and state["pages_failed"] == 0
    assert_each_page_once(platform, created["id"], 6)
    with session_scope(postgres_url) as session:
        killed = session.get(Page, (created["id"], index))
        assert killed is not None and killed.deliveries == 2  # picked up again, once


def test_whole_worker_killed_and_replaced(platform_factory: PlatformFactory, postgres_url: str, corpus: Path,
                                          tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, engine="fake", extra_env={
        "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "1500", "PAGEMILL_WORKER__PAGE_LEASE_S": "8",
        "PAGEMILL_WORKER__QUEUED_LEASE_S": "10"}).start(concurrency=2, reconciler=True)
    source = tmp_path / "six.pdf"
    source.write_bytes(repeat_pages(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", 6))
    created = platform.upload(source)
    running_page_owner(platform, created["id"])
    platform.kill("worker")  # the parent and its children, with the messages they had taken
    platform.start_worker("worker2", concurrency=2)

    state = platform.wait_done(created["id"], timeout=120)
    assert state["status"] == "succeeded" and state["pages_done"] == 6
    assert_each_page_once(platform, created["id"], 6)


def test_redis_flushed_mid_document_is_repaired_by_the_reconciler(platform_factory: PlatformFactory,
                                                                  postgres_url: str, corpus: Path,
                                                                  tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, engine="fake",
                                extra_env={"PAGEMILL_ENGINE__FAKE_LATENCY_MS": "250"}).start(concurrency=1)
    source = tmp_path / "twenty.pdf"
    source.write_bytes(repeat_pages(corpus / "dev" / "docling_multi_page" / "multi_page.pdf", 20))
    created = platform.upload(source)
    with platform.client() as client:
        wait_until(lambda: client.get(f"/v1/documents/{created['id']}").json()["pages_done"] >= 3, 60,
                   "three pages", every=0.05)
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
    state = platform.wait_done(created["id"], timeout=120)
    assert state["status"] == "succeeded" and state["pages_done"] == 20
    assert_each_page_once(platform, created["id"], 20)
