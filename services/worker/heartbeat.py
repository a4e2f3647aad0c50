"""The lease heartbeat: while a page runs, its lease is renewed every few seconds, so a short lease is safe.

A page's lease is what tells the reconciler that someone is still working on it. With a lease as long as the
slowest page, a worker that died (SIGKILL, a lost node) held its pages back for that long. Instead each process
that runs pages keeps one daemon thread that renews the leases of the pages its tasks are running, in one
UPDATE for all of them, every `worker.lease_heartbeat_s`; a lost worker's pages are taken back by the reconciler
at most `worker.page_lease_s` after its last beat.

    task claims a page ──hold()──▶ held pages ◀──every few s── heartbeat thread: UPDATE … lease_expires_at
    task returns or raises ──release()──▶ dropped (so is a page the UPDATE no longer matches: ended, taken over)
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field

from services.core.db.session import session_scope
from services.core.lifecycle import renew_leases
from services.core.logging import get_logger
from services.core.settings import Settings

log = get_logger(__name__)

PageKey = tuple[str, int]


@dataclass
class Heartbeat:
    """The pages one process is running (by the thread running each), and the thread that renews them."""

    database_url: str
    lease_s: float
    interval_s: float
    held: dict[int, set[PageKey]] = field(default_factory=dict)  # thread id → its pages (a chunk's)
    lock: threading.Lock = field(default_factory=threading.Lock)
    stop: threading.Event = field(default_factory=threading.Event)
    thread: threading.Thread | None = None

    def hold(self, page: PageKey) -> None:
        with self.lock:
            self.held.setdefault(threading.get_ident(), set()).add(page)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, name="lease-heartbeat", daemon=True)
                self.thread.start()

    def release(self) -> None:
        with self.lock:
            self.held.pop(threading.get_ident(), None)

    def beat(self) -> int:
        """One renewal of every held lease. Returns how many were renewed."""
        with self.lock:
            pages = sorted(set().union(*self.held.values()))
        if not pages:
            return 0
        with session_scope(self.database_url, autocommit=True) as session:
            renewed = renew_leases(session, pages, lease_s=self.lease_s)
        lost = set(pages) - renewed
        if lost:
            with self.lock:  # ended, or another worker has it now: stop renewing (its task finds out itself)
                self.held = {thread: mine - lost for thread, mine in self.held.items()}
            log.debug("page.lease_not_renewed", pages=[f"{d}:{i}" for d, i in sorted(lost)])
        return len(renewed)

    def _run(self) -> None:
        while not self.stop.wait(self.interval_s):
            try:
                self.beat()
            except Exception as exc:  # noqa: BLE001 - the database blinked: the next beat tries again
                log.warning("page.heartbeat_error", error=str(exc))


_heartbeat: Heartbeat | None = None
_heartbeat_pid = 0
_create_lock = threading.Lock()


def current(settings: Settings) -> Heartbeat:
    """This process's heartbeat (a forked pool child makes its own: threads do not survive a fork)."""
    global _heartbeat, _heartbeat_pid
    with _create_lock:
        if _heartbeat is None or _heartbeat_pid != os.getpid():
            _heartbeat = Heartbeat(settings.resolved_database_url(), settings.worker.page_lease_s,
                                   settings.worker.lease_heartbeat_s)
            _heartbeat_pid = os.getpid()
        return _heartbeat


def hold(settings: Settings, document_id: str, index: int) -> None:
    """The calling thread runs this page now (one of its chunk's): its lease is renewed until `release()`."""
    current(settings).hold((document_id, index))


def release(settings: Settings) -> None:
    """The calling thread's pages are no longer running here (finished, failed, given back, or its task
    crashed)."""
    current(settings).release()
