"""The gateway remembers a live API key for `api_key_cache_s`: a revocation through the gateway (or anything in its
process) is exact at once; one made behind its back (another process writing the row) within the setting."""

from __future__ import annotations

import time

import sqlalchemy as sa

from services.core.db.models import ApiKey
from services.core.db.session import session_scope
from services.core.key_cache import RecentKeys
from services.core.tenants import hash_key
from tests.api.conftest import ApiFactory, error_of


def _revoke_behind_its_back(database_url: str, key_id: str) -> None:
    """What the CLI or another gateway replica does: the row changes, this process is not told."""
    with session_scope(database_url) as session:
        session.execute(sa.update(ApiKey).where(ApiKey.id == key_id).values(revoked_at=sa.func.now()))


def test_a_key_revoked_elsewhere_stops_within_the_cache_time(api_factory: ApiFactory) -> None:
    kept = api_factory(api_key_cache_s=3600)
    with kept.client() as client:
        assert client.get("/v1/tenant").status_code == 200  # checked in the database, remembered
        _revoke_behind_its_back(kept.settings.resolved_database_url(), kept.tenant.key_id)
        assert client.get("/v1/tenant").status_code == 200  # answered from memory, as the setting says it may
    brief = api_factory(api_key_cache_s=0.5)
    with brief.client() as client:
        assert client.get("/v1/tenant").status_code == 200
        _revoke_behind_its_back(brief.settings.resolved_database_url(), brief.tenant.key_id)
        revoked_at = time.monotonic()
        while client.get("/v1/tenant").status_code == 200:
            assert time.monotonic() - revoked_at < 10, "a key revoked elsewhere still works after 10 s"
        assert error_of(client.get("/v1/tenant")) == (401, "unauthorized")


def test_a_revocation_through_the_gateway_is_exact_however_long_keys_are_kept(api_factory: ApiFactory) -> None:
    api = api_factory(api_key_cache_s=3600)
    other = api.create_tenant("other")
    with api.client() as client:
        assert client.get("/v1/tenant").status_code == 200
    with api.client(key=other.key) as client:
        assert client.get("/v1/tenant").json()["limits"]["pages_in_flight"] == 10_000
    with api.admin() as admin:
        assert admin.delete(f"/v1/admin/keys/{api.tenant.key_id}").status_code == 200
        assert admin.patch(f"/v1/admin/tenants/{other.id}", json={"limits": {"pages_in_flight": 7}}).status_code \
            == 200
    with api.client() as client:
        assert error_of(client.get("/v1/tenant")) == (401, "unauthorized")
    with api.client(key=other.key) as client:  # the tenant it remembered carried the old limits
        assert client.get("/v1/tenant").json()["limits"]["pages_in_flight"] == 7


def test_without_the_cache_every_request_asks_the_database(api_factory: ApiFactory) -> None:
    api = api_factory(api_key_cache_s=0)
    with api.client() as client:
        assert client.get("/v1/tenant").status_code == 200
        _revoke_behind_its_back(api.settings.resolved_database_url(), api.tenant.key_id)
        assert error_of(client.get("/v1/tenant")) == (401, "unauthorized")


def test_an_answer_read_before_a_change_is_not_kept() -> None:
    """A check that read the row, then a revocation committed, then the check's answer arrives: not kept."""
    keys, tenant = RecentKeys(), object()
    generation = keys.generation  # the check starts
    keys.forget()  # a change commits meanwhile
    keys.put(hash_key("pm_x"), tenant, 60, generation)  # type: ignore[arg-type]
    assert keys.get(hash_key("pm_x")) is None
    keys.put(hash_key("pm_x"), tenant, 60, keys.generation)  # type: ignore[arg-type]
    assert keys.get(hash_key("pm_x")) is tenant
    keys.put(hash_key("pm_y"), tenant, 0, keys.generation)  # type: ignore[arg-type]
    assert keys.get(hash_key("pm_y")) is None
