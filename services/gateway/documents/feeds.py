"""Document feeds: what the gateway's streams (`/events`, `?wait=`) learn about the documents they follow.

    Redis pub/sub ─── one subscription per gateway process ──notice──▶ Feed (one per followed document)
    re-check every `recheck_s` ── one query for every followed document ──changed──▶ │ one database read
                                                                                     ▼
                                                              Snapshot ──▶ each Listener's stream

A notice only says "look again" (`services.core.notices`); the feed reads the document and its new events from
the database, once for all the clients following it, so a notice costs one read whatever their number, and a
client that waits costs no query at all. The re-check is the safety net: it finds, in one statement for all
followed documents, the change whose notice was lost (Redis away, a reconnect); a (re)subscription runs it at
once, since notices published while the subscription was down were missed.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass

import redis
import redis.asyncio
import sqlalchemy as sa
from fastapi.concurrency import run_in_threadpool

from services.core.db.models import Document, DocumentEventRow
from services.core.db.session import session_scope
from services.core.errors import describe
from services.core.logging import get_logger
from services.core.notices import channel_name
from services.gateway.documents import service

log = get_logger(__name__)

RECONNECT_MAX_S = 5.0
SUBSCRIPTION_PING_S = 30.0  # an idle subscription pings Redis, so a connection that died silently is noticed
RECHECK_BATCH = 500


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The document as the database has it (None: deleted) and its events after `after` (None: not read)."""

    document: Document | None
    rows: tuple[DocumentEventRow, ...] = ()
    after: int | None = None

    def covers(self, after: int | None) -> bool:
        """Whether this read has every event a listener that has events up to `after` is missing."""
        return after is None or (self.after is not None and self.after <= after)


def read_snapshot(database_url: str, document_id: str, after: int | None) -> Snapshot:
    """The document, then its events after `after` (none when `after` is None): every event up to the
    document's state is then in the list. Two single statements, no transaction."""
    with session_scope(database_url, autocommit=True) as session:
        document = session.execute(
            service.visible_documents(None).where(Document.id == document_id)).scalar_one_or_none()
        if document is None or after is None:
            return Snapshot(document, after=after)
        rows = session.execute(
            sa.select(DocumentEventRow).where(DocumentEventRow.document_id == document_id,
                                              DocumentEventRow.seq > after).order_by(DocumentEventRow.seq)
        ).scalars()
        return Snapshot(document, tuple(rows), after)


State = tuple[str, int, int]  # status, pages done, pages failed


def read_states(database_url: str, document_ids: list[str]) -> dict[str, tuple[State, int]]:
    """Each visible document's state and its last event's seq, in one statement per 500 documents."""
    latest = (sa.select(sa.func.max(DocumentEventRow.seq)).where(DocumentEventRow.document_id == Document.id)
              .correlate(Document).scalar_subquery())
    found: dict[str, tuple[State, int]] = {}
    with session_scope(database_url, autocommit=True) as session:
        for start in range(0, len(document_ids), RECHECK_BATCH):
            batch = document_ids[start:start + RECHECK_BATCH]
            for row in session.execute(
                    sa.select(Document.id, Document.status, Document.pages_done, Document.pages_failed, latest)
                    .where(Document.id.in_(batch), Document.deleted_at.is_(None))):
                found[row[0]] = ((str(row[1]), int(row[2]), int(row[3])), int(row[4] or 0))
    return found


class Listener:
    """One stream's view of a feed: the latest document and the events it has not taken yet."""

    def __init__(self, after: int | None) -> None:
        self.after = after  # the last event seq this listener has; None: it wants no events (a long-poll)
        self._ready = asyncio.Event()
        self._document: Document | None = None
        self._rows: dict[int, DocumentEventRow] = {}

    def offer(self, snapshot: Snapshot) -> None:
        """Takes a read that covers this listener (a listener that joined during a read, wanting older events,
        waits for the read its joining asked for)."""
        if not snapshot.covers(self.after):
            return
        self._document = snapshot.document
        if self.after is not None:
            self._rows.update((row.seq, row) for row in snapshot.rows if row.seq > self.after)
        self._ready.set()

    async def next(self, timeout: float) -> Snapshot | None:
        """What arrived since the last call, waiting up to `timeout` s for something; None if nothing did."""
        if not self._ready.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._ready.wait(), timeout)
            if not self._ready.is_set():
                return None
        self._ready.clear()
        rows = tuple(self._rows[seq] for seq in sorted(self._rows))
        self._rows.clear()
        had = self.after
        if rows and self.after is not None:
            self.after = rows[-1].seq
        return Snapshot(self._document, rows, had)


class Feed:
    """One followed document: its listeners, and what the last read saw (for the re-check to compare)."""

    def __init__(self, document_id: str) -> None:
        self.document_id = document_id
        self.listeners: set[Listener] = set()
        self.dirty = False
        self.reading: asyncio.Task[None] | None = None
        self.state: State | None = None  # None: not read yet, or deleted
        self.seen_seq = 0  # every event up to this seq was handed to the listeners

    def floor(self) -> int | None:
        wanted = [listener.after for listener in self.listeners if listener.after is not None]
        return min(wanted) if wanted else None

    def remember(self, snapshot: Snapshot, floor: int | None) -> None:
        document = snapshot.document
        self.state = None if document is None else (str(document.status), document.pages_done, document.pages_failed)
        if floor is not None:
            self.seen_seq = max([self.seen_seq, floor, *(row.seq for row in snapshot.rows)])

    def changed(self, found: tuple[State, int] | None) -> bool:
        if found is None:
            return self.state is not None
        state, last_seq = found
        return state != self.state or (self.floor() is not None and last_seq > self.seen_seq)


class FeedHub:
    """The gateway process's feeds, its one Redis subscription and its re-check. Its tasks run on the event
    loop of the first stream that follows a document (and start again on another loop: in-process test
    clients run each request on a loop of its own)."""

    def __init__(self, database_url: str, redis_url: str | None, *, recheck_s: float) -> None:
        self.database_url, self.redis_url, self.recheck_s = database_url, redis_url, recheck_s
        self._feeds: dict[str, Feed] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.subscribed = False
        self.reads = 0  # snapshots read (observability and tests)

    @contextlib.asynccontextmanager
    async def follow(self, document_id: str, *, after: int | None) -> AsyncIterator[Listener]:
        """A listener on `document_id` for as long as the block runs. With `after` (an event seq), the feed is
        read at once and the listener is handed the events after it; without, only later changes arrive."""
        self._ensure_running()
        feed = self._feeds.get(document_id)
        if feed is None:
            feed = self._feeds[document_id] = Feed(document_id)
        listener = Listener(after)
        feed.listeners.add(listener)
        try:
            if after is not None:
                self.announce(document_id)
            yield listener
        finally:
            feed.listeners.discard(listener)
            if not feed.listeners and self._feeds.get(document_id) is feed:
                del self._feeds[document_id]

    def announce(self, document_id: str) -> None:
        """Something changed: the feed reads it (one read in flight per feed; notices during it coalesce)."""
        feed = self._feeds.get(document_id)
        if feed is None:
            return
        feed.dirty = True
        if feed.reading is None or feed.reading.done():
            feed.reading = asyncio.get_running_loop().create_task(self._read(feed))

    async def _read(self, feed: Feed) -> None:
        while feed.dirty and feed.listeners:
            feed.dirty = False
            floor = feed.floor()
            try:
                snapshot = await run_in_threadpool(read_snapshot, self.database_url, feed.document_id, floor)
            except Exception as exc:  # noqa: BLE001 - the database blinked: the next re-check reads again
                log.warning("feeds.read_failed", document_id=feed.document_id,
                            error=describe(exc))
                feed.state = None
                return
            self.reads += 1
            feed.remember(snapshot, floor)
            for listener in list(feed.listeners):
                listener.offer(snapshot)

    async def recheck(self) -> int:
        """Reads, in one statement, the state of every followed document; the feeds that changed read theirs.
        Returns how many changed."""
        document_ids = list(self._feeds)
        if not document_ids:
            return 0
        found = await run_in_threadpool(read_states, self.database_url, document_ids)
        changed = [d for d in document_ids if (feed := self._feeds.get(d)) is not None and feed.changed(found.get(d))]
        for document_id in changed:
            self.announce(document_id)
        return len(changed)

    def _ensure_running(self) -> None:
        loop = asyncio.get_running_loop()
        if self._loop is loop and all(not task.done() for task in self._tasks):
            return
        for task in self._tasks:
            with contextlib.suppress(RuntimeError):  # its loop may be closed already
                task.cancel()
        if self._loop is not loop:  # the feeds of another (finished) loop have no listener left to serve
            self._loop, self._feeds = loop, {}
        self._tasks = [loop.create_task(self._recheck_forever())]
        if self.redis_url:
            self._tasks.append(loop.create_task(self._listen_forever(self.redis_url)))

    async def close(self) -> None:
        for task in self._tasks:
            task.cancel()
        for task in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, RuntimeError):
                await task
        self._tasks = []

    async def _recheck_forever(self) -> None:
        while True:
            await asyncio.sleep(self.recheck_s)
            await self._recheck_quietly()

    async def _recheck_quietly(self) -> None:
        try:
            await self.recheck()
        except Exception as exc:  # noqa: BLE001 - the database blinked: the next re-check tries again
            log.warning("feeds.recheck_failed", error=describe(exc))

    async def _listen_forever(self, redis_url: str) -> None:
        channel = channel_name(redis_url)
        backoff = 0.2
        while True:
            try:
                await self._listen(redis_url, channel)
            except (redis.RedisError, OSError) as exc:
                if self.subscribed:
                    log.warning("feeds.subscription_lost", error=describe(exc))
                self.subscribed = False
                await asyncio.sleep(backoff)
                backoff = min(RECONNECT_MAX_S, backoff * 2)
            else:
                backoff = 0.2

    async def _listen(self, redis_url: str, channel: str) -> None:
        client = redis.asyncio.Redis.from_url(redis_url, socket_connect_timeout=2, socket_keepalive=True)
        pubsub = client.pubsub()
        try:
            await pubsub.subscribe(channel)
            while True:
                message = await pubsub.get_message(timeout=SUBSCRIPTION_PING_S)
                if message is None:
                    await pubsub.ping()
                elif message["type"] == "subscribe":
                    # Subscribed, for the first time or again after redis-py reconnected on its own: whatever
                    # was published while the subscription was down is found by a re-check, now.
                    self.subscribed = True
                    await self._recheck_quietly()
                elif message["type"] == "message":
                    data = message["data"]
                    self.announce(data.decode() if isinstance(data, bytes) else str(data))
        finally:
            self.subscribed = False
            with contextlib.suppress(Exception):
                await pubsub.aclose()  # type: ignore[no-untyped-call]
            with contextlib.suppress(Exception):
                await client.aclose()
