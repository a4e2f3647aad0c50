"""The gateway's document feeds on a migrated database: one read serves every listener of a document, each
listener gets exactly the events after its own last one, and the re-check finds a change no notice announced."""

from __future__ import annotations

import asyncio
from pathlib import Path

from services.core import events
from services.core.db.models import PageStatus
from services.core.db.session import session_scope
from services.core.lifecycle import PageFinish, finish_page
from services.core.outbox import open_outbox
from services.core.settings import Settings
from services.core.storage import get_store
from services.gateway.documents.feeds import FeedHub
from services.gateway.documents.service import create_document
from tests.pdfs import stored_upload, text_page


def new_document(url: str, tmp_path: Path) -> str:
    settings = Settings(database_url=url, data_dir=tmp_path)
    with open_outbox(lambda jobs: None), session_scope(url) as session:
        document = create_document(session, get_store(settings), settings,
                                   stored_upload(text_page(3), tmp_path), tenant_id=None, request_id="req-1")
        events.record(session, document, events.EventType.QUEUED)
        return document.id


def end_page(url: str, document_id: str, index: int) -> None:
    with open_outbox(lambda jobs: None), session_scope(url) as session:  # notices sent nowhere: no Redis here
        finish_page(session, document_id, index, PageFinish(PageStatus.SUCCEEDED, engine="fake"))


def test_one_read_serves_every_listener_and_the_recheck_finds_an_unannounced_change(
        sqlite_url: str, tmp_path: Path) -> None:
    document_id = new_document(sqlite_url, tmp_path)

    async def scenario() -> None:
        hub = FeedHub(sqlite_url, None, recheck_s=3600)  # no Redis, and a re-check only when the test asks
        async with hub.follow(document_id, after=0) as first:
            joined = await first.next(5)
            assert joined is not None and [row.type for row in joined.rows] == ["document.queued"]
            queued_seq = joined.rows[0].seq
            async with hub.follow(document_id, after=0) as late, hub.follow(document_id, after=None) as poll:
                # A listener that joins wanting older events gets them; the first one is not sent them again.
                caught_up = await late.next(5)
                assert caught_up is not None and [row.seq for row in caught_up.rows] == [queued_seq]
                again = await first.next(0.5)
                assert again is None or again.rows == ()
                await poll.next(0.5)  # the long-poll listener was handed the join read too: drop it

                reads = hub.reads
                await asyncio.to_thread(end_page, sqlite_url, document_id, 0)
                assert await first.next(0.3) is None  # nobody announced it
                assert await hub.recheck() == 1
                seen = [await listener.next(5) for listener in (first, late, poll)]
                assert [s.document.pages_done if s and s.document else None for s in seen] == [1, 1, 1]
                assert all(s is not None and s.rows == () for s in seen)
                assert hub.reads == reads + 1, "one database read for the three listeners"
                assert await hub.recheck() == 0  # nothing changed since: no read at all

                hub.announce(document_id)  # a notice (as the subscription would pass on) with nothing new
                assert [(await listener.next(5)) is not None for listener in (first, late, poll)] == [True] * 3
                assert hub.reads == reads + 2
        await hub.close()

    asyncio.run(scenario())
