"""Fixtures: real Redis, PostgreSQL (migrated by Alembic) and S3 servers; the platform as real processes.

`PAGEMILL_REDIS_URL` / `PAGEMILL_DATABASE_URL` (a PostgreSQL server URL) select existing servers; without
them the session starts its own throwaway ones. Each test gets a fresh database and Redis database.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from services.core.db.session import migrate
from tests.harness import CORPUS, Platform
from tests.servers import fresh_database, start_postgres, start_redis, start_s3

pytest_plugins = ["tests.vllm_server"]  # the `vllm_server` fixture (make test-vllm)

# The test processes must not inherit a developer's settings by accident.
_CONFIGURED_REDIS = os.environ.pop("PAGEMILL_REDIS_URL", None)
_CONFIGURED_DATABASE = os.environ.pop("PAGEMILL_DATABASE_URL", None)


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "dev").is_dir():
        pytest.fail(f"the shared corpus is not at {CORPUS}; set PAGEMILL_CORPUS")
    return CORPUS


@pytest.fixture(scope="session")
def redis_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if _CONFIGURED_REDIS:
        yield _CONFIGURED_REDIS
        return
    url, stop = start_redis(tmp_path_factory.mktemp("redis"))
    yield url
    stop()


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    if _CONFIGURED_DATABASE and _CONFIGURED_DATABASE.startswith("postgres"):
        yield _CONFIGURED_DATABASE
        return
    url, stop = start_postgres(tmp_path_factory.mktemp("postgres"))
    yield url
    stop()


@pytest.fixture(scope="session")
def s3_endpoint() -> Iterator[str]:
    endpoint, stop = start_s3()
    yield endpoint
    stop()


@pytest.fixture
def postgres_url(postgres_server: str) -> Iterator[str]:
    """A fresh database on the PostgreSQL server, built by `alembic upgrade head`."""
    url, drop = fresh_database(postgres_server)
    migrate(url)
    yield url
    drop()


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'pagemill.db'}"
    migrate(url)
    return url


PlatformFactory = Callable[..., Platform]


@pytest.fixture
def platform_factory(request: pytest.FixtureRequest, tmp_path: Path,
                     redis_server: str) -> Iterator[PlatformFactory]:
    platforms: list[Platform] = []

    def make(database_url: str, **kwargs: object) -> Platform:
        kwargs.setdefault("redis_base_url", redis_server)  # a fault test may bring its own
        platform = Platform(workdir=tmp_path / f"platform{len(platforms)}", database_url=database_url,
                            **kwargs)  # type: ignore[arg-type]
        platforms.append(platform)
        return platform

    request.node.stash[PLATFORMS] = platforms
    yield make
    for platform in platforms:
        platform.stop()


PLATFORMS = pytest.StashKey[list[Platform]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test that passed fails if a platform process logged an error it did not expect (a crashed task, a 500).
    Checked right after the test's body, before teardown stops the processes and drops their database."""
    result = yield
    errors = [error for platform in item.stash.get(PLATFORMS, []) for error in platform.log_errors()]
    if errors:
        raise AssertionError("error records in the platform's process logs (a task or request crashed):\n\n"
                             + "\n\n".join(errors[:10]))
    return result
