"""The API keys of a gateway process's open event streams, re-checked together: one read per round for every
stream, instead of one per stream every `events.key_recheck_s` (600 statements/s at 1,000 open streams).

A stream asks `is_live(key, tenant)` every `key_recheck_s`, as before. The question joins the next round, and a
round starts at least `gap_s` after the previous one began and always after every question it answers was asked:
an answer is never older than its question, so a revoked key's stream still ends at its next check (within
`key_recheck_s + gap_s` plus one read). With streams' checks spread over time, a process reads at most once per
`gap_s`, however many streams are open.
"""

from __future__ import annotations

import asyncio

from starlette.concurrency import run_in_threadpool

from services.core.db.session import session_scope
from services.core.tenants import hash_key, live_key_owners

Owner = tuple[str, str]  # (key hash, tenant id)


class KeyWatch:
    """Rounds run on the event loop of the stream that asks (in-process test clients run each request on a
    loop of their own: a question on another loop starts a round there)."""

    def __init__(self, database_url: str, *, gap_s: float = 0.5) -> None:
        self.database_url, self.gap_s = database_url, gap_s
        self._round: asyncio.Future[set[Owner]] | None = None
        self._asked: set[Owner] = set()
        self._last_start = float("-inf")
        self.reads = 0  # rounds read (observability and tests)

    async def is_live(self, api_key: str, tenant_id: str) -> bool:
        owner = (hash_key(api_key), tenant_id)
        loop = asyncio.get_running_loop()
        if self._round is None or self._round.get_loop() is not loop:
            self._round, self._asked = loop.create_future(), set()
            self._round.add_done_callback(_retrieve)
            loop.create_task(self._run(self._round, self._asked))
        self._asked.add(owner)
        # shielded: a stream that closes while waiting must not cancel the round of the others
        return owner in await asyncio.shield(self._round)

    async def _run(self, round_: asyncio.Future[set[Owner]], asked: set[Owner]) -> None:
        loop = asyncio.get_running_loop()
        await asyncio.sleep(max(0.0, self._last_start + self.gap_s - loop.time()))
        if self._round is round_:
            self._round = None  # questions from now on go to the next round
        self._last_start = loop.time()
        self.reads += 1
        try:
            live = await run_in_threadpool(self._read, {key_hash for key_hash, _ in asked})
        except Exception as exc:  # noqa: BLE001 - every stream waiting on this round gets the error, as alone
            round_.set_exception(exc)
        else:
            round_.set_result({owner for owner in asked if owner in live})

    def _read(self, key_hashes: set[str]) -> set[Owner]:
        with session_scope(self.database_url, autocommit=True) as session:
            return live_key_owners(session, key_hashes)


def _retrieve(round_: asyncio.Future[set[Owner]]) -> None:
    """A round whose every stream closed before it ended keeps its error to itself (no "never retrieved")."""
    if not round_.cancelled():
        round_.exception()
