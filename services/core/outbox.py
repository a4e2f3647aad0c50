"""The outbox: jobs are collected while a unit of work runs and sent only after its transaction commits.

    unit of work (a request, a task, a reconciler pass)        `outbox.open(send)` sets it for this context
      └─ session_scope ─ BEGIN ── enqueue(job) … ─┬─ COMMIT ──▶ the jobs of this transaction are sent
                                                  └─ ROLLBACK ─▶ they are dropped, never sent
      └─ enqueue(job) outside a transaction ────────────────────▶ sent when the unit of work ends without error

A job sent before its rows are committed can run before they exist; a job of a transaction that rolled back
must never run; a job never sent (the process died between commit and send, Redis was down) is found by the
reconciler, because the database is the record. The model is Polar's `JobQueueManager` in a `ContextVar`
(server/polar/worker/_enqueue.py): code anywhere calls `enqueue(...)`, the wrapper flushes.

This module knows nothing of Celery or the database (so `db/session.py` can use it without a cycle):
`services.core.queues.outbox(app)` opens one that sends through Celery, and `session_scope` marks the
transactions.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar, Token
from typing import Any

from services.core.logging import get_logger

log = get_logger(__name__)

Sender = Callable[[Sequence[Any]], None]


class OutboxMissing(RuntimeError):
    """`enqueue` was called where no unit of work opened an outbox."""


class Outbox:
    """The jobs of one unit of work. Shared by the threads a request runs on (they see the same object)."""

    def __init__(self, send: Sender) -> None:
        self._send = send
        self._jobs: list[Any] = []
        self._depth = 0  # open transactions (session_scope) of this unit of work
        self._lock = threading.Lock()
        self.sent = 0

    @property
    def pending(self) -> int:
        return len(self._jobs)

    def add(self, job: Any) -> None:
        with self._lock:
            self._jobs.append(job)

    def begin(self) -> int:
        """A transaction starts: returns the mark its jobs start at."""
        with self._lock:
            self._depth += 1
            return len(self._jobs)

    def commit(self, mark: int) -> None:
        """A transaction committed. Its jobs go out once no enclosing transaction is still open."""
        with self._lock:
            self._depth = max(0, self._depth - 1)
            outermost = self._depth == 0
        if outermost:
            self.flush()

    def rollback(self, mark: int) -> None:
        """A transaction rolled back: the jobs enqueued since it began are dropped."""
        with self._lock:
            self._depth = max(0, self._depth - 1)
            dropped = len(self._jobs) - mark
            del self._jobs[mark:]
        if dropped > 0:
            log.debug("outbox.dropped", jobs=dropped)

    def flush(self) -> int:
        """Sends every pending job. A failure is logged, not raised: the rows are committed, and the
        reconciler sends what the database says is still due."""
        with self._lock:
            jobs, self._jobs = self._jobs, []
        if not jobs:
            return 0
        try:
            self._send(jobs)
        except Exception as exc:  # noqa: BLE001 - see the docstring: never fail work that is already committed
            log.warning("outbox.send_failed", jobs=len(jobs), error=f"{type(exc).__name__}: {exc}")
            return 0
        self.sent += len(jobs)
        return len(jobs)

    def discard(self) -> None:
        with self._lock:
            self._jobs.clear()


_current: ContextVar[Outbox | None] = ContextVar("pagemill_outbox", default=None)


def current() -> Outbox | None:
    return _current.get()


def enqueue(job: Any) -> None:
    """Sends `job` after the current transaction commits (or, outside one, when the unit of work ends)."""
    box = _current.get()
    if box is None:
        raise OutboxMissing("enqueue() outside a unit of work: wrap it in services.core.queues.outbox(app) "
                            "(the gateway's requests, the worker's tasks and the reconciler's passes are)")
    box.add(job)


def bind(box: Outbox) -> Token[Outbox | None]:
    """Makes `box` the current outbox of this context (an ASGI middleware does this around a request)."""
    return _current.set(box)


def unbind(token: Token[Outbox | None]) -> None:
    _current.reset(token)


@contextmanager
def open_outbox(send: Sender) -> Iterator[Outbox]:
    """A unit of work: what it enqueues outside a transaction is sent when it ends without error; when it
    raises, what is still pending is dropped (committed transactions have already sent theirs)."""
    box = Outbox(send)
    token = bind(box)
    try:
        yield box
    except BaseException:
        box.discard()
        raise
    else:
        box.flush()
    finally:
        unbind(token)


@contextmanager
def transaction() -> Iterator[None]:
    """Marks one database transaction for the current outbox (`session_scope` wraps every one in this)."""
    box = _current.get()
    if box is None:
        yield
        return
    mark = box.begin()
    try:
        yield
    except BaseException:
        box.rollback(mark)
        raise
    box.commit(mark)
