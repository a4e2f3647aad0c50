"""Database engines and sessions; `migrate()` builds the schema with Alembic, never with `create_all`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from pathlib import Path
from typing import Any, cast

import sqlalchemy as sa
from sqlalchemy.orm import Session, sessionmaker

from services.core import outbox

MIGRATIONS = Path(__file__).resolve().parent / "migrations"


# psycopg 3 is the PostgreSQL driver; every usual spelling of a PostgreSQL URL selects it (pg8000, the driver
# before it, is no longer installed, so its spelling is mapped too rather than failing on the import).
_POSTGRES_PREFIXES = ("postgresql://", "postgres://", "postgresql+psycopg2://", "postgresql+pg8000://")
# psycopg prepares a statement on the server (parsed and planned once, then only bound and executed) when a
# connection runs it once more than this: the hot path's statements are prepared within a connection's first
# tasks, a statement run once or twice (migrations, admin commands) is not. Each connection keeps the 100 it
# used last.
# Its pipeline mode is not used: SQLAlchemy reads a statement's rows and rowcount as soon as it is executed,
# and in a pipeline they only arrive at the sync (a SELECT reads as no rows, an UPDATE's rowcount as -1).
# psycopg pipelines an `executemany` by itself.
PREPARE_THRESHOLD = 2


def _normalize_url(url: str) -> str:
    for prefix in _POSTGRES_PREFIXES:
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    return url


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    # Transactions are begun by hand (below): pysqlite's own deferred BEGIN lets two processes read the
    # same row and then fail to upgrade to a write lock in WAL mode.
    dbapi_connection.isolation_level = None
    cursor = dbapi_connection.cursor()
    # WAL lets the gateway read while a worker writes; busy_timeout queues writers instead of failing them.
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.close()


def _begin_immediate(conn: sa.Connection) -> None:
    """A transaction's BEGIN on SQLite. An autocommit session's statements are each their own transaction: a
    read takes no lock, and a write statement takes the write lock as it starts (SQLite begins a statement
    that writes as a write transaction), so neither holds the lock from a BEGIN to a COMMIT that other
    processes queue behind (their busy handler sleeps up to 100 ms at a time)."""
    if conn.get_execution_options().get("isolation_level") != "AUTOCOMMIT":
        conn.exec_driver_sql("BEGIN IMMEDIATE")


@lru_cache(maxsize=16)
def get_engine(url: str, *, autocommit: bool = False) -> sa.Engine:
    """One engine (and pool) per database; `autocommit=True` gives a second pool whose connections never
    open a transaction, so single-statement work costs one round trip and no BEGIN/COMMIT/reset."""
    url = _normalize_url(url)
    if url.startswith("sqlite"):
        path = url.split("///", 1)[-1]
        if path and path != ":memory:":
            Path(path).parent.mkdir(parents=True, exist_ok=True)
        engine = sa.create_engine(url, connect_args={"check_same_thread": False, "timeout": 30})
        sa.event.listen(engine, "connect", _sqlite_pragmas)
        # Every transaction takes SQLite's write lock up front: writers queue on busy_timeout instead of
        # failing with SQLITE_BUSY_SNAPSHOT. SQLite is the single-machine default; PostgreSQL scales out.
        sa.event.listen(engine, "begin", _begin_immediate)
        return engine.execution_options(isolation_level="AUTOCOMMIT") if autocommit else engine
    # No pre-ping round trip per checkout: a connection that died raises a disconnect error, which
    # invalidates the pool and counts as retryable for the task that hit it; pool_recycle retires old ones.
    options: dict[str, Any] = {"pool_size": 5, "max_overflow": 10, "pool_recycle": 1800,
                               "connect_args": {"prepare_threshold": PREPARE_THRESHOLD}}
    if autocommit:
        options.update(isolation_level="AUTOCOMMIT", pool_reset_on_return=None)
    return sa.create_engine(url, **options)


@lru_cache(maxsize=8)
def get_sessionmaker(url: str) -> sessionmaker[Session]:
    return sessionmaker(bind=get_engine(url), expire_on_commit=False)


@lru_cache(maxsize=8)
def get_autocommit_sessionmaker(url: str) -> sessionmaker[Session]:
    return sessionmaker(bind=get_engine(url, autocommit=True), expire_on_commit=False)


@contextmanager
def session_scope(url: str, *, autocommit: bool = False) -> Iterator[Session]:
    """One transaction: commits on success, rolls back on error. The jobs enqueued in it
    (`services.core.queues.enqueue`) are sent after the commit and dropped on rollback.

    `autocommit=True` skips BEGIN and COMMIT: for work that is a single atomic statement (or a sequence of
    statements each atomic on its own), it saves two round trips on the page hot path.
    """
    session = (get_autocommit_sessionmaker if autocommit else get_sessionmaker)(url)()
    try:
        with outbox.transaction():
            try:
                yield session
                session.commit()
            except BaseException:
                session.rollback()
                raise
    finally:
        session.close()


def rowcount(result: sa.Result[Any]) -> int:
    """The rows an UPDATE or DELETE matched. `Session.execute` is typed to return a `Result`; for a DML
    statement it is a `CursorResult`, the one that has `rowcount`."""
    return cast("sa.CursorResult[Any]", result).rowcount


def is_postgres(url: str) -> bool:
    return _normalize_url(url).startswith("postgresql")


def alembic_config(url: str) -> Any:
    from alembic.config import Config

    # The migrations ship inside the package, so an installed wheel migrates without the source tree.
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    config.set_main_option("file_template", "%%(year)d_%%(month).2d_%%(day).2d_%%(rev)s_%%(slug)s")
    config.set_main_option("sqlalchemy.url", _normalize_url(url).replace("%", "%%"))
    return config


def migrate(url: str) -> None:
    """`alembic upgrade head` on the given database."""
    from alembic import command

    if url.startswith("sqlite"):
        get_engine(url)  # creates the parent folder of the database file
    command.upgrade(alembic_config(url), "head")
