"""An event stream's key re-check: one read per round for every open stream's key, and never an answer older
than its question (a key revoked before a stream asks is seen as revoked), on a real SQLite database."""

from __future__ import annotations

import asyncio
from typing import NamedTuple

from services.core.db.models import Tenant, utcnow
from services.core.db.session import session_scope
from services.core.tenants import create_key, create_tenant, revoke_key
from services.gateway.documents.key_watch import KeyWatch


class Keys(NamedTuple):
    tenant_a: str
    tenant_b: str
    first_id: str  # the id of key_a1's row
    key_a1: str
    key_a2: str
    key_b: str


def make_keys(url: str) -> Keys:
    """Two keys of tenant a, one of tenant b."""
    with session_scope(url) as session:
        a, b = create_tenant(session, "a"), create_tenant(session, "b")
        session.flush()
        (first, key_a1), (_, key_a2) = create_key(session, a), create_key(session, a)
        _, key_b = create_key(session, b)
        session.flush()
        return Keys(a.id, b.id, first.id, key_a1, key_a2, key_b)


def test_many_streams_share_one_read_and_see_a_revocation_at_their_next_check(sqlite_url: str) -> None:
    tenant_a, tenant_b, first_id, key_a1, key_a2, key_b = make_keys(sqlite_url)

    async def scenario() -> None:
        watch = KeyWatch(sqlite_url, gap_s=0.2)
        asked = [watch.is_live(key_a1, tenant_a) for _ in range(50)] + [
            watch.is_live(key_a2, tenant_a), watch.is_live(key_b, tenant_b),
            watch.is_live(key_b, tenant_a),  # a live key, but not this tenant's
            watch.is_live("pm_unknown", tenant_a)]
        answers = await asyncio.gather(*asked)
        assert answers == [True] * 52 + [False, False]
        assert watch.reads == 1, "the questions asked together were not answered by one read"

        with session_scope(sqlite_url) as session:
            revoke_key(session, first_id)
        # asked after the revocation committed: the answer comes from a read that started after the question
        assert await watch.is_live(key_a1, tenant_a) is False
        assert await watch.is_live(key_a2, tenant_a) is True  # the tenant's other key still streams
        assert watch.reads == 3

        with session_scope(sqlite_url) as session:
            tenant = session.get(Tenant, tenant_b)
            assert tenant is not None
            tenant.disabled_at = utcnow()
        assert await watch.is_live(key_b, tenant_b) is False

    asyncio.run(scenario())


def test_a_stream_that_closes_while_waiting_does_not_cancel_the_others_round(sqlite_url: str) -> None:
    keys = make_keys(sqlite_url)
    tenant_a, key_a1 = keys.tenant_a, keys.key_a1

    async def scenario() -> None:
        watch = KeyWatch(sqlite_url, gap_s=0.2)
        assert await watch.is_live(key_a1, tenant_a)  # the next round waits out the gap
        leaving = asyncio.ensure_future(watch.is_live(key_a1, tenant_a))
        staying = asyncio.ensure_future(watch.is_live(key_a1, tenant_a))
        await asyncio.sleep(0)  # both have joined the round
        leaving.cancel()
        assert await staying is True
        assert leaving.cancelled()

    asyncio.run(scenario())
