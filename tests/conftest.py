"""Fixtures: real Redis, PostgreSQL (migrated by Alembic) and S3 servers; the platform as real processes.

`PAGEMILL_REDIS_URL` / `PAGEMILL_DATABASE_URL` (a PostgreSQL server URL) select existing servers; without
them the session starts its own throwaway ones. Each test gets a fresh database and Redis database.

The schema is built once per session by `alembic upgrade head` (one PostgreSQL template database, one SQLite
file); each test gets a copy of it, so every database test still runs on what the migrations build.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import closing
from pathlib import Path

import pytest

from services.core.db.session import _normalize_url, get_engine, migrate
from tests.harness import CORPUS, Platform
from tests.servers import Stop, fresh_database, start_postgres, start_redis, start_s3

pytest_plugins = ["tests.vllm_server"]  # the `vllm_server` fixture (make test-vllm)


def _configured(name: str) -> str | None:
    """A server URL the developer configured. The platform processes must not inherit it as their setting,
    so it leaves the environment; pytest-xdist workers (started after this ran) read it from `TESTS_<name>`."""
    value = os.environ.pop(name, None) or os.environ.get(f"TESTS_{name}")
    if value:
        os.environ[f"TESTS_{name}"] = value
    return value


_CONFIGURED_REDIS = _configured("PAGEMILL_REDIS_URL")
_CONFIGURED_DATABASE = _configured("PAGEMILL_DATABASE_URL")


@pytest.fixture(scope="session")
def corpus() -> Path:
    if not (CORPUS / "dev").is_dir():
        pytest.skip(f"needs the shared corpus, which is not at {CORPUS} (clone it to ../shared/corpus or set "
                    "PAGEMILL_CORPUS)")
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


@pytest.fixture(scope="session")
def postgres_template(postgres_server: str) -> Iterator[str]:
    """A database built by `alembic upgrade head` once per session: the template of every test's database."""
    url, drop = fresh_database(postgres_server)
    migrate(url)
    # A template must have no open connection to be copied: close the pool Alembic used (its URL is the
    # normalized spelling, so it is cached under that name).
    get_engine(_normalize_url(url)).dispose()
    yield url
    drop()


class TemplateCopies:
    """Copies of the migrated template, each made (and each dropped) on a thread of its own while a test runs:
    a test waits for neither `CREATE DATABASE ... TEMPLATE` nor `DROP DATABASE`."""

    def __init__(self, server_url: str, template_url: str) -> None:
        self._make = functools.partial(fresh_database, server_url, template=template_url)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="postgres-copies")
        self._next: Future[tuple[str, Stop]] | None = None

    def take(self) -> tuple[str, Stop]:
        copy = (self._next or self._pool.submit(self._make)).result()
        self._next = self._pool.submit(self._make)
        return copy

    def drop(self, drop: Stop) -> None:
        self._pool.submit(drop)

    def close(self) -> None:
        if self._next is not None:
            self._pool.submit(self._next.result()[1])
        self._pool.shutdown(wait=True)


@pytest.fixture(scope="session")
def postgres_copies(postgres_server: str, postgres_template: str) -> Iterator[TemplateCopies]:
    copies = TemplateCopies(postgres_server, postgres_template)
    yield copies
    copies.close()


@pytest.fixture
def postgres_url(postgres_copies: TemplateCopies) -> Iterator[str]:
    """A fresh database on the PostgreSQL server: a copy of the migrated template."""
    url, drop = postgres_copies.take()
    yield url
    get_engine(url).dispose()
    postgres_copies.drop(drop)


@pytest.fixture(scope="session")
def sqlite_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A SQLite file built by `alembic upgrade head` once per session."""
    path = tmp_path_factory.mktemp("sqlite-template") / "pagemill.db"
    migrate(f"sqlite:///{path}")
    get_engine(f"sqlite:///{path}").dispose()
    return path


@pytest.fixture
def sqlite_url(tmp_path: Path, sqlite_template: Path) -> Iterator[str]:
    """A fresh SQLite database: a copy of the migrated template (SQLite's backup API, so the copy is whole)."""
    target = tmp_path / "pagemill.db"
    with closing(sqlite3.connect(sqlite_template)) as source, closing(sqlite3.connect(target)) as copy:
        source.backup(copy)
    url = f"sqlite:///{target}"
    yield url
    get_engine(url).dispose()


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
        platform.stop(graceful=False)


PLATFORMS = pytest.StashKey[list[Platform]]()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Iterator[None]:
    """A test that passed fails if a platform process logged an error it did not expect (a crashed task, a 500).
    Checked right after the test's body, before teardown stops the processes and drops their database."""
    try:
        result = yield
    except BaseException:
        # A failed test's report carries the end of each platform process's log: on a CI machine the temporary
        # directories that hold them are gone by the time anyone reads the report.
        for number, platform in enumerate(item.stash.get(PLATFORMS, [])):
            for name, tail in platform.log_tails().items():
                item.add_report_section("call", f"platform{number} {name}.log (end)", tail)
        raise
    errors = [error for platform in item.stash.get(PLATFORMS, []) for error in platform.log_errors()]
    if errors:
        raise AssertionError("error records in the platform's process logs (a task or request crashed):\n\n"
                             + "\n\n".join(errors[:10]))
    return result
