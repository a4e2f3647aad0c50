"""pg8000 with one round trip per statement behaves as pg8000 does: rows, NULLs, errors, recovery."""

from __future__ import annotations

import pytest
import sqlalchemy as sa

from services.core.db import pg_pipeline
from services.core.db.session import get_engine


def test_pipelined_statements_return_rows_raise_errors_and_recover(postgres_url: str) -> None:
    engine = get_engine(postgres_url)
    assert pg_pipeline.install()  # installed by get_engine for PostgreSQL
    with engine.begin() as connection:
        connection.execute(sa.text("CREATE TABLE pipe (id int PRIMARY KEY, note text)"))
        connection.execute(sa.text("INSERT INTO pipe VALUES (:i, :n)"), [{"i": 1, "n": "a"}, {"i": 2, "n": None}])
        rows = connection.execute(sa.text("SELECT id, note FROM pipe WHERE id >= :low ORDER BY id"), {"low": 1}).all()
        assert [tuple(r) for r in rows] == [(1, "a"), (2, None)]
        updated = connection.execute(sa.text("UPDATE pipe SET note = :n WHERE id = :i RETURNING id, note"),
                                     {"n": "é ' \" ;", "i": 2}).one()
        assert tuple(updated) == (2, "é ' \" ;")
        assert connection.execute(sa.text("UPDATE pipe SET note = 'x' WHERE id = :i"), {"i": 9}).rowcount == 0
    with pytest.raises(sa.exc.IntegrityError), engine.begin() as connection:
        connection.execute(sa.text("INSERT INTO pipe VALUES (:i, :n)"), {"i": 1, "n": "dup"})
    with pytest.raises(sa.exc.ProgrammingError), engine.begin() as connection:
        connection.execute(sa.text("SELEC nonsense FROM :x"), {"x": 1})
    with engine.begin() as connection:  # the pooled connections are still in a good state
        assert connection.execute(sa.text("SELECT count(*) FROM pipe WHERE note IS NOT NULL")).scalar() == 2
        connection.execute(sa.text("DROP TABLE pipe"))
