"""Fixtures the integration tests share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from services.core.settings import Settings
from services.worker.engines.cpu import CpuEngine
from tests.harness import redis_database


@pytest.fixture
def broker(redis_server: str) -> Iterator[tuple[str, redis.Redis]]:
    """A Redis database of its own on the session's server (flushed before and after): its URL and a client."""
    url = redis_database(redis_server)
    client = redis.Redis.from_url(url)
    yield url, client
    client.flushdb()
    client.close()


@pytest.fixture(scope="module")
def engine() -> CpuEngine:
    """The cpu engine on default settings (a test module that needs another engine defines its own)."""
    return CpuEngine(Settings())
