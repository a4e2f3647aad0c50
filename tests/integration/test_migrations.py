"""The migrations build exactly the schema the models describe, on SQLite and on PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.migration import MigrationContext

from services.core.db.models import Base
from services.core.db.session import get_engine


@pytest.mark.parametrize("database", ["sqlite_url", "postgres_url"])
def test_models_match_migrations(database: str, request: pytest.FixtureRequest) -> None:
    url = request.getfixturevalue(database)  # built by `alembic upgrade head`
    with get_engine(url).connect() as connection:
        diff = compare_metadata(MigrationContext.configure(connection), Base.metadata)
    assert diff == [], f"models and migrations differ: {diff}"
