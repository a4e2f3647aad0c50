"""The gateway's recent API-key checks, kept a few seconds by key hash, so a client's requests skip the lookup.

    request ─▶ key hash known, checked less than `api_key_cache_s` ago? ─▶ its tenant, no database
                                     └── no ─▶ `authenticate` (one query) ─▶ remembered if the key is live

Only live keys are kept (an unknown key always asks the database: guessed keys cannot fill the memory), and
only their SHA-256, never the key. Revocation stays exact where it happens: revoking a key, changing a tenant's
limits or rotating its webhook secret through `services.core.tenants` forgets every entry of this process at
once and again when the change commits, and a check that was under way meanwhile does not put its older answer
back (`generation`). Another process's change (the `pagemill admin` CLI, another gateway replica) reaches this
one when the entry expires: within `api_key_cache_s` (0 turns the cache off). Open event streams re-check their
key in the database apart from this (`events.key_recheck_s`).
"""

from __future__ import annotations

import threading
import time

import sqlalchemy as sa
from sqlalchemy.orm import Session

from services.core.db.models import Tenant

MAX_KEYS = 10_000  # live keys are few; past this the table starts again rather than grow


class RecentKeys:
    """Key hash → (the live tenant it named, when that answer expires). Thread-safe: the gateway checks keys
    on its event loop and in its thread pool."""

    def __init__(self) -> None:
        self._known: dict[str, tuple[Tenant, float]] = {}
        self._lock = threading.Lock()
        self.generation = 0  # bumped by `forget`: an answer read before it is not kept

    def get(self, key_hash: str) -> Tenant | None:
        entry = self._known.get(key_hash)
        if entry is None:
            return None
        tenant, expires_at = entry
        if time.monotonic() >= expires_at:
            with self._lock:
                if self._known.get(key_hash) is entry:
                    del self._known[key_hash]
            return None
        return tenant

    def put(self, key_hash: str, tenant: Tenant, ttl_s: float, generation: int) -> None:
        """Keeps the answer `authenticate` gave, unless `forget` ran since `generation` was read before it."""
        if ttl_s <= 0:
            return
        with self._lock:
            if generation != self.generation:
                return
            if len(self._known) >= MAX_KEYS:
                self._known.clear()
            self._known[key_hash] = (tenant, time.monotonic() + ttl_s)

    def forget(self) -> None:
        """A key, a tenant's limits or its secret changed in this process: every answer is asked again."""
        with self._lock:
            self._known.clear()
            self.generation += 1


RECENT_KEYS = RecentKeys()


def forget_on_commit(session: Session) -> None:
    """A change to a key or tenant is being written in `session`: forgotten now, and again once it commits (a
    check between the two read the row as it was)."""
    RECENT_KEYS.forget()
    sa.event.listen(session, "after_commit", lambda _: RECENT_KEYS.forget(), once=True)
