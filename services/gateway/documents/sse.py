"""`GET /v1/documents/{id}/events`: the document's events as Server-Sent Events.

Stored events (`document.queued`, the final one) come from the `document_events` table with their
sequence number as the SSE `id`, so a client that reconnects with `Last-Event-ID` misses nothing.
`document.progress` is sent whenever the page counts move (polled every half second, so several pages
ending together arrive as one event). The stream closes after the final event.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

import sqlalchemy as sa
from fastapi import Request
from fastapi.concurrency import run_in_threadpool

from services.core import events
from services.core.db.models import DOCUMENT_FINAL, Document, DocumentEventRow
from services.core.db.session import session_scope
from services.core.errors import NotFound
from services.gateway.documents import service

POLL_S = 0.5
KEEPALIVE_S = 15.0
MAX_STREAM_S = 3600.0
_FINAL_TYPES = frozenset(t.value for t in events.FINAL_EVENTS.values())


def frame(event_type: str, payload: dict[str, Any], event_id: int | None = None) -> bytes:
    lines = [f"id: {event_id}"] if event_id is not None else []
    lines += [f"event: {event_type}", f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}"]
    return ("\n".join(lines) + "\n\n").encode()


def _fetch(db: str, document_id: str, tenant_id: str, after: int) -> tuple[Document | None, list[DocumentEventRow]]:
    # The document first, then its events: every event up to the document's state is then in the list.
    with session_scope(db) as session:
        try:
            document = service.get_document(session, document_id, tenant_id)
        except NotFound:  # deleted while streaming: the stream ends
            return None, []
        rows = list(session.execute(
            sa.select(DocumentEventRow).where(DocumentEventRow.document_id == document_id,
                                              DocumentEventRow.seq > after).order_by(DocumentEventRow.seq)
        ).scalars())
    return document, rows


async def stream(request: Request, db: str, document_id: str, tenant_id: str,
                 last_event_id: str | None) -> AsyncIterator[bytes]:
    after = int(last_event_id) if last_event_id and last_event_id.isdigit() else 0
    counts = (0, 0)
    started = last_sent = time.monotonic()
    yield b"retry: 2000\n\n"
    while time.monotonic() - started < MAX_STREAM_S:
        if await request.is_disconnected():
            return
        document, rows = await run_in_threadpool(_fetch, db, document_id, tenant_id, after)
        if document is None:
            return
        finished = False
        for row in rows:
            after = row.seq
            if row.type == events.EventType.PROGRESS:
                continue  # the live counts below are finer than the throttled webhook events
            yield frame(row.type, row.payload, row.seq)
            last_sent = time.monotonic()
            finished = finished or row.type in _FINAL_TYPES
        if finished:
            return
        now_counts = (document.pages_done, document.pages_failed)
        if now_counts != counts and document.status not in DOCUMENT_FINAL:
            counts = now_counts
            yield frame(events.EventType.PROGRESS,
                        events.public_payload(events.build_event(document, events.EventType.PROGRESS)))
            last_sent = time.monotonic()
        if time.monotonic() - last_sent > KEEPALIVE_S:
            yield b": keep-alive\n\n"
            last_sent = time.monotonic()
        await asyncio.sleep(POLL_S)
