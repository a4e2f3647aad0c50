"""psycopg 3 under SQLAlchemy, on a real server: the URL spellings, rows and errors, statements prepared on the
server once a connection has run them often enough, and which real failures the retry policy calls transient."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from services.core.db.session import PREPARE_THRESHOLD, _normalize_url, get_engine
from services.core.retry import is_retryable


def test_every_postgres_spelling_selects_psycopg() -> None:
    for url in ("postgresql://u@h/db", "postgres://u@h/db", "postgresql+psycopg2://u@h/db",
                "postgresql+pg8000://u@h/db", "postgresql+psycopg://u@h/db"):
        assert _normalize_url(url) == "postgresql+psycopg://u@h/db", url
    assert _normalize_url("sqlite:///x.db") == "sqlite:///x.db"


def test_statements_return_rows_raise_errors_and_the_pool_recovers(postgres_url: str) -> None:
    engine = get_engine(postgres_url)
    assert engine.dialect.driver == "psycopg"
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE probe (id int PRIMARY KEY, note text)"))
        connection.execute(sa.text("INSERT INTO probe VALUES (:i, :n)"), [{"i": 1, "n": "a"}, {"i": 2, "n": None}])
        rows = connection.execute(sa.text("SELECT id, note FROM probe WHERE id >= :low ORDER BY id"), {"low": 1})
        assert [tuple(r) for r in rows] == [(1, "a"), (2, None)]
        updated = connection.execute(sa.text("UPDATE probe SET note = :n WHERE id = :i RETURNING id, note"),
                                     {"n": "é ' \" ; %s %(x)s", "i": 2}).one()
        assert tuple(updated) == (2, "é ' \" ; %s %(x)s")
        assert connection.execute(sa.text("UPDATE probe SET note = 'x' WHERE id = :i"), {"i": 9}).rowcount == 0
    with pytest.raises(sa.exc.IntegrityError) as duplicate, engine.begin() as connection:
        connection.execute(sa.text("INSERT INTO probe VALUES (:i, :n)"), {"i": 1, "n": "dup"})
    with pytest.raises(sa.exc.ProgrammingError) as syntax, engine.begin() as connection:
        connection.execute(sa.text("SELEC nonsense FROM probe"))
    assert not is_retryable(duplicate.value) and not is_retryable(syntax.value)
    with engine.begin() as connection:  # the pooled connections are still in a good state
        assert connection.execute(sa.text("SELECT count(*) FROM probe WHERE note IS NOT NULL")).scalar() == 2
        connection.execute(sa.text("DROP TABLE probe"))


def _prepared(connection: sa.Connection) -> list[str]:
    return list(connection.execute(sa.text("SELECT statement FROM pg_prepared_statements")).scalars())


def test_a_statement_run_often_is_prepared_on_the_server_and_stays_prepared_across_checkouts(
        postgres_url: str) -> None:
    """Each run is its own transaction on a connection taken from the pool and given back, as a task does:
    returning a committed connection to the pool must not throw its prepared statements away."""
    engine = get_engine(postgres_url)
    query = sa.text("SELECT count(*) FROM documents WHERE id = :id")
    for run in range(PREPARE_THRESHOLD + 3):
        with engine.begin() as connection:
            connection.execute(query, {"id": f"doc-{run}"}).scalar()
            prepared = [s for s in _prepared(connection) if "FROM documents WHERE id" in s]
        assert len(prepared) == (1 if run + 1 > PREPARE_THRESHOLD else 0), (run, prepared)
    assert engine.pool.checkedin() == 1  # one connection did every run


def test_a_connection_the_server_terminated_is_transient_and_the_pool_replaces_it(postgres_url: str) -> None:
    engine = get_engine(postgres_url, autocommit=True)
    with engine.connect() as victim:
        pid = victim.execute(sa.text("SELECT pg_backend_pid()")).scalar()
        with get_engine(postgres_url, autocommit=True).connect() as killer:
            killer.execute(sa.text("SELECT pg_terminate_backend(:pid)"), {"pid": pid})
        with pytest.raises(sa.exc.DBAPIError) as cut:
            victim.execute(sa.text("SELECT 1"))
    assert is_retryable(cut.value), repr(cut.value)
    with engine.connect() as connection:
        assert connection.execute(sa.text("SELECT 1")).scalar() == 1


def test_a_server_that_is_not_there_is_transient() -> None:
    from tests.servers import free_port

    engine = sa.create_engine(_normalize_url(f"postgresql://postgres@127.0.0.1:{free_port()}/postgres"))
    with pytest.raises(sa.exc.DBAPIError) as refused:
        engine.connect()
    assert is_retryable(refused.value), repr(refused.value)
