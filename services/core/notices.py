"""Document notices: one small Redis pub/sub message after a commit that changed a document, so the gateways
push its events to the clients that follow it instead of polling the database.

    state change ──commit──▶ outbox flush ──▶ PUBLISH pagemill.documents.<db> "<document id>"
                                                  └─▶ each gateway's one subscription ─▶ the streams watching
                                                      that document read what changed from the database

A notice says only "look again": the database stays the record. A notice that is lost (Redis away, a gateway
reconnecting, a process that ends before its publisher thread sent it) costs latency, never an event: the
gateway's periodic re-check finds the change. Publishing is best effort for the same reason, and never fails
the work that was committed; the outbox hands its notices to a thread of the process (`publish_soon`), so the
task or request that committed does not wait for Redis's answer.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache

import redis

from services.core import outbox
from services.core.errors import describe
from services.core.logging import get_logger

log = get_logger(__name__)

CHANNEL_PREFIX = "pagemill.documents"


@dataclass(frozen=True, slots=True)
class DocumentNotice:
    """Something about this document changed (an event, a page count): sent after the commit that did it."""

    document_id: str


def notify(document_id: str) -> None:
    """Queues a notice in the current unit of work's outbox: published after the commit, dropped on rollback.
    Outside a unit of work (a script, a unit test) no gateway shares this process's transactions: nothing is
    sent, and a gateway's re-check still sees the change."""
    box = outbox.current()
    if box is not None:
        box.add(DocumentNotice(document_id))


@lru_cache(maxsize=16)
def channel_name(redis_url: str) -> str:
    """Pub/sub channels span a Redis server's numbered databases: the database is part of the name, so two
    deployments (or test platforms) sharing one server do not hear each other."""
    database = redis.Redis.from_url(redis_url).connection_pool.connection_kwargs.get("db", 0)  # parses only
    return f"{CHANNEL_PREFIX}.{database}"


@lru_cache(maxsize=4)
def _publisher(redis_url: str) -> redis.Redis:
    # Short timeouts: a Redis that is away must not hold up the task that just committed its work.
    return redis.Redis.from_url(redis_url, socket_timeout=2, socket_connect_timeout=1)


def publish(redis_url: str, notices: Iterable[DocumentNotice]) -> int:
    """Publishes one message per document (duplicates of one flush are merged). Returns how many were
    published; a failure is logged and answers 0 (the gateways' re-check covers it)."""
    document_ids = list(dict.fromkeys(n.document_id for n in notices))
    if not document_ids:
        return 0
    client = _publisher(redis_url)
    try:
        with client.pipeline(transaction=False) as pipe:
            channel = channel_name(redis_url)
            for document_id in document_ids:
                pipe.publish(channel, document_id)
            pipe.execute()
    except redis.RedisError as exc:
        log.warning("notices.publish_failed", documents=len(document_ids), error=describe(exc))
        return 0
    return len(document_ids)


class _Publisher:
    """A thread of this process that publishes the notices handed to it, those waiting together in one pipeline.
    A forked process (a Celery pool child) starts its own: threads do not survive a fork."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._pid = 0
        self._waiting: queue.SimpleQueue[tuple[str, list[str]]] = queue.SimpleQueue()

    def submit(self, redis_url: str, document_ids: list[str]) -> None:
        if self._pid != os.getpid():
            with self._lock:
                if self._pid != os.getpid():
                    self._waiting = queue.SimpleQueue()  # what the parent had waiting is the parent's to send
                    threading.Thread(target=self._run, args=(self._waiting,), name="pagemill-notices",
                                     daemon=True).start()
                    self._pid = os.getpid()
        self._waiting.put((redis_url, document_ids))

    @staticmethod
    def _run(waiting: queue.SimpleQueue[tuple[str, list[str]]]) -> None:
        while True:
            by_url: dict[str, list[str]] = {}
            redis_url, document_ids = waiting.get()
            by_url.setdefault(redis_url, []).extend(document_ids)
            while True:  # what else is waiting goes in the same pipeline
                try:
                    redis_url, document_ids = waiting.get_nowait()
                except queue.Empty:
                    break
                by_url.setdefault(redis_url, []).extend(document_ids)
            for url, ids in by_url.items():
                publish(url, [DocumentNotice(document_id) for document_id in ids])  # never raises


_soon = _Publisher()


def publish_soon(redis_url: str, notices: Iterable[DocumentNotice]) -> None:
    """Hands the notices to this process's publisher thread and returns at once (after a commit, the code that
    committed need not wait for Redis: a notice is best effort). `publish` sends them as they come."""
    document_ids = list(dict.fromkeys(n.document_id for n in notices))
    if document_ids:
        _soon.submit(redis_url, document_ids)
