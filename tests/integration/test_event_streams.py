"""Event streams on the real platform (gateway, workers, Redis, PostgreSQL): `/events` and `?wait=` are pushed by
Redis pub/sub. The gateway's safety re-check is set to 300 s here, so only a pushed notice can deliver an event
within the few seconds these tests allow."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import pytest

from tests.conftest import PlatformFactory
from tests.events_client import EventStream
from tests.harness import FINAL, Platform
from tests.pdfs import repeat_pages

pytestmark = pytest.mark.slow

ONE_PAGE = Path("dev") / "pypdf_crazyones" / "crazyones.pdf"
PUSHED_WITHIN_S = 3.0  # far below the 300 s re-check: only a pushed notice gets an event here in time
NO_RECHECK = {"PAGEMILL_EVENTS__RECHECK_S": "300"}


def finished_at(platform: Platform, document_id: str) -> datetime:
    with platform.client() as client:
        return datetime.fromisoformat(client.get(f"/v1/documents/{document_id}").json()["finished_at"])


def pdf(corpus: Path, tmp_path: Path, pages: int) -> Path:
    path = tmp_path / f"{pages}.pdf"
    path.write_bytes(repeat_pages(corpus / ONE_PAGE, pages))
    return path


def test_events_are_pushed_and_a_reconnect_with_last_event_id_gets_what_it_missed(
        platform_factory: PlatformFactory, postgres_url: str, corpus: Path, tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, engine="fake", extra_env={
        **NO_RECHECK, "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "400"}).start(concurrency=2)
    created = platform.upload(pdf(corpus, tmp_path, 8), cache="false")
    with platform.client() as client:
        live = EventStream(client, created["id"]).start()
        events = live.wait_closed(60)
        kinds = live.kinds()
        assert kinds[0] == "document.queued" and kinds[-1] == "document.succeeded", kinds
        progress = [e.data["data"]["pages_done"] for e in events if e.kind == "document.progress"]
        # Pages take 400 ms, two at a time. A worker records the first page end of its chunk at once and the
        # next ones spaced by 20 times what a record costs (`tasks.RECORD_SHARE`: on a loaded machine, seconds),
        # and a stream sends one frame per read of the page counts, so how many frames come depends on the
        # machine. What does not: the counts are pushed while the document runs, in order, and only the re-check
        # (300 s here) could have found them otherwise.
        assert progress and progress[0] < 8 and progress == sorted(progress) and progress[-1] <= 8, progress
        lag = (events[-1].at - finished_at(platform, created["id"])).total_seconds()
        assert lag < PUSHED_WITHIN_S, f"the final event came {lag:.1f} s after the document finished"

        # Resuming after the first event: only what came after it, stored events with their ids, then the end.
        queued_id = events[0].event_id
        assert queued_id and queued_id.isdigit()
        resumed = EventStream(client, created["id"], last_event_id=queued_id).start().wait_closed(10)
        assert [e.kind for e in resumed if e.kind != "document.progress"] == ["document.succeeded"]
        assert resumed[-1].event_id == events[-1].event_id and int(resumed[-1].event_id or 0) > int(queued_id)
        # Past the final event there is nothing left: the stream closes at once instead of hanging.
        after_end = EventStream(client, created["id"], last_event_id=events[-1].event_id).start()
        assert after_end.wait_closed(5) == []

        # A stream that drops mid-document and reconnects with its last id misses no stored event.
        second = platform.upload(pdf(corpus, tmp_path, 8), cache="false")
        first_leg = EventStream(client, second["id"]).start()
        first_leg.wait_for("document.queued", 10)
        last_id = first_leg.events[0].event_id
        with platform.client() as other:  # the second leg on a connection of its own, while the document runs
            rest = EventStream(other, second["id"], last_event_id=last_id).start().wait_closed(60)
        assert [e.kind for e in rest if e.kind != "document.progress"] == ["document.succeeded"]
        first_leg.wait_closed(60)


def test_long_poll_returns_on_each_change_and_on_the_terminal_state(
        platform_factory: PlatformFactory, postgres_url: str, corpus: Path, tmp_path: Path) -> None:
    platform = platform_factory(postgres_url, engine="fake", extra_env={
        **NO_RECHECK, "PAGEMILL_ENGINE__FAKE_LATENCY_MS": "1500"}).start(concurrency=1)
    created = platform.upload(pdf(corpus, tmp_path, 3), cache="false")
    answers: list[tuple[float, dict[str, object]]] = []
    with platform.client() as client:
        state = client.get(f"/v1/documents/{created['id']}").json()
        while state["status"] not in FINAL:
            started = time.monotonic()
            state = client.get(f"/v1/documents/{created['id']}", params={"wait": 30}).json()
            answered_at = datetime.now(UTC)
            answers.append((time.monotonic() - started, state))
            assert len(answers) < 20
    # Each page takes 1.5 s: every answer came on a change, long before the 30 s wait ran out.
    assert all(seconds < 10 for seconds, _ in answers), answers
    done = [s["pages_done"] for _, s in answers]
    assert done == sorted(done) and done[-1] == 3 and len(set(done)) >= 2, answers
    assert answers[-1][1]["status"] == "succeeded"
    lag = (answered_at - finished_at(platform, created["id"])).total_seconds()
    assert lag < PUSHED_WITHIN_S, f"the terminal answer came {lag:.1f} s after the document finished"
    with platform.client() as client:
        started = time.monotonic()
        assert client.get(f"/v1/documents/{created['id']}", params={"wait": 30}).json()["status"] == "succeeded"
        assert time.monotonic() - started < 5  # a finished document answers at once


def test_an_open_stream_ends_when_its_key_is_revoked(platform_factory: PlatformFactory, sqlite_url: str,
                                                     corpus: Path, tmp_path: Path) -> None:
    """No worker runs: the document stays queued and its stream would stay open (keep-alives) for an hour. Once
    the key is revoked, the stream ends at its next key check, and a reconnect gets 401."""
    platform = platform_factory(sqlite_url, engine="fake", extra_env={
        "PAGEMILL_EVENTS__KEEPALIVE_S": "0.2", "PAGEMILL_EVENTS__KEY_RECHECK_S": "0.5"}).start(worker=False)
    tenant = platform.create_tenant("streaming")
    created = platform.upload(pdf(corpus, tmp_path, 1), key=tenant.key)
    with platform.client(key=tenant.key) as client:
        stream = EventStream(client, created["id"]).start()
        stream.wait_for("document.queued", 10)
        kept_alive = stream.comments
        with platform.admin() as admin:
            assert admin.delete(f"/v1/admin/keys/{tenant.key_id}").status_code == 200
        assert stream.closed.wait(30), f"the stream is still open after its key was revoked ({stream.comments} " \
                                       "comments)"
        assert stream.error is None and stream.comments >= kept_alive
        assert client.get(f"/v1/documents/{created['id']}/events").status_code == 401
    # another key of the same tenant still streams: what ended it was the revocation, not the check itself
    other = platform.create_tenant("still-streaming")
    second = platform.upload(pdf(corpus, tmp_path, 1), key=other.key)
    with platform.client(key=other.key) as client:
        alive = EventStream(client, second["id"]).start()
        alive.wait_for("document.queued", 10)
        deadline = time.monotonic() + 30
        while alive.comments < 8 and time.monotonic() < deadline:  # 1.6 s of keep-alives: three key checks
            assert not alive.closed.wait(0.1), f"a stream with a live key ended: {alive.error!r}"
        assert alive.comments >= 8 and not alive.closed.is_set()
