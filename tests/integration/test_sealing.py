"""`pagemill admin seal-secrets` on a database whose webhook secrets were stored before a key was set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
import sqlalchemy as sa

from services.core import tenants
from services.core.db.models import Tenant
from services.core.db.session import get_engine, session_scope
from services.core.settings import get_settings
from tests.harness import REPO

pytestmark = pytest.mark.slow  # the command runs as a process of its own, as an operator runs it

KEY, NEXT_KEY = "first-" + "1" * 58, "second-" + "2" * 57


def raw_secret(url: str, tenant_id: str) -> str:
    with get_engine(url).connect() as connection:
        return str(connection.execute(sa.text("SELECT webhook_secret FROM tenants WHERE id = :id"),
                                      {"id": tenant_id}).scalar_one())


def seal_secrets(url: str, keys: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PAGEMILL_")}
    env.update({"PAGEMILL_DATABASE_URL": url, "PAGEMILL_SECRET_KEY": keys, "PYTHONPATH": str(REPO)})
    done = subprocess.run([sys.executable, "-m", "services.cli", "admin", "seal-secrets"], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=60, check=True)
    return done.stdout


@pytest.mark.parametrize("database", ["sqlite_url", "postgres_url"])
def test_plaintext_secrets_are_sealed_then_resealed_with_a_rotated_key(
        database: str, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    url = request.getfixturevalue(database)
    monkeypatch.delenv("PAGEMILL_SECRET_KEY", raising=False)
    get_settings.cache_clear()  # the key is the setting `secret_key`, read through the cached settings
    with session_scope(url) as session:
        tenant = tenants.create_tenant(session, "acme")
        tenant_id, secret = tenant.id, tenant.webhook_secret
    assert raw_secret(url, tenant_id) == secret  # no key: stored as it is

    assert "sealed 1 webhook secrets" in seal_secrets(url, KEY)
    first = raw_secret(url, tenant_id)
    assert first.startswith("sealed:v1:") and secret not in first

    # This process reads the sealed row with the key, and with the rotated pair after the next command.
    monkeypatch.setenv("PAGEMILL_SECRET_KEY", KEY)
    get_settings.cache_clear()
    with session_scope(url) as session:
        assert session.get(Tenant, tenant_id).webhook_secret == secret  # type: ignore[union-attr]
    seal_secrets(url, f"{NEXT_KEY},{KEY}")
    second = raw_secret(url, tenant_id)
    assert second.startswith("sealed:v1:") and second != first
    monkeypatch.setenv("PAGEMILL_SECRET_KEY", NEXT_KEY)  # the old key is gone: the new seal alone opens it
    get_settings.cache_clear()
    with session_scope(url) as session:
        assert session.get(Tenant, tenant_id).webhook_secret == secret  # type: ignore[union-attr]
    monkeypatch.delenv("PAGEMILL_SECRET_KEY")
    get_settings.cache_clear()
