"""`GET /v1/documents/{id}/events`: the document's events as Server-Sent Events, pushed as they happen.

Stored events (`document.queued`, the final one) come from the `document_events` table with their
sequence number as the SSE `id`, so a client that reconnects with `Last-Event-ID` misses nothing.
`document.progress` is sent whenever the page counts move (several pages ending together may arrive as one
event). The stream learns of changes from its document's feed (`feeds.py`: a Redis notice after each commit,
a periodic re-check for lost ones), sends a keep-alive comment after `keepalive_s` of silence, and closes after
the final event.
"""

from __future__ import annotations

import json
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

from services.core import events
from services.core.db.models import DOCUMENT_FINAL, Document
from services.gateway.documents.feeds import FeedHub, Snapshot

MAX_STREAM_S = 3600.0
_FINAL_TYPES = frozenset(t.value for t in events.FINAL_EVENTS.values())


def frame(event_type: str, payload: dict[str, Any], event_id: int | None = None) -> bytes:
    lines = [f"id: {event_id}"] if event_id is not None else []
    lines += [f"event: {event_type}", f"data: {json.dumps(payload, ensure_ascii=False, separators=(',', ':'))}"]
    return ("\n".join(lines) + "\n\n").encode()


def progress_frame(document: Document) -> bytes:
    progress = events.build_event(document, events.EventType.PROGRESS)
    return frame(events.EventType.PROGRESS, events.public_payload(progress))


def stored_frames(snapshot: Snapshot) -> tuple[list[bytes], bool]:
    """The frames of the snapshot's stored events, and whether the final one is among them. Stored progress
    events are skipped: the live counts are finer than the throttled webhook events."""
    frames = [frame(row.type, row.payload, row.seq) for row in snapshot.rows if row.type != events.EventType.PROGRESS]
    return frames, any(row.type in _FINAL_TYPES for row in snapshot.rows)


async def stream(hub: FeedHub, document_id: str, last_event_id: str | None, *, keepalive_s: float,
                 key_is_live: Callable[[], Awaitable[bool]], key_recheck_s: float) -> AsyncIterator[bytes]:
    """`key_is_live` is asked every `key_recheck_s`: a stream ends once its API key is revoked or its tenant
    disabled (a client that reconnects gets 401), not when it would have ended anyway."""
    after = int(last_event_id) if last_event_id and last_event_id.isdigit() else 0
    counts = (0, 0)
    started = last_sent = key_checked = time.monotonic()
    yield b"retry: 2000\n\n"
    async with hub.follow(document_id, after=after) as listener:
        while time.monotonic() - started < MAX_STREAM_S:
            now = time.monotonic()
            wait = min(keepalive_s - (now - last_sent), key_recheck_s - (now - key_checked))
            snapshot = await listener.next(timeout=max(0.0, wait))
            if time.monotonic() - key_checked >= key_recheck_s:
                if not await key_is_live():
                    yield b": the API key was revoked\n\n"
                    return
                key_checked = time.monotonic()
            if snapshot is None:
                if time.monotonic() - last_sent >= keepalive_s:
                    yield b": keep-alive\n\n"
                    last_sent = time.monotonic()
                continue
            document = snapshot.document
            if document is None:  # deleted while streaming: the stream ends
                return
            frames, finished = stored_frames(snapshot)
            for chunk in frames:
                yield chunk
                last_sent = time.monotonic()
            # A final document's final event is committed with its status: it was in this snapshot or the
            # client had it already (its Last-Event-ID is past it). Either way there is nothing more to say.
            if finished or document.status in DOCUMENT_FINAL:
                return
            if (document.pages_done, document.pages_failed) != counts:
                counts = (document.pages_done, document.pages_failed)
                yield progress_frame(document)
                last_sent = time.monotonic()
