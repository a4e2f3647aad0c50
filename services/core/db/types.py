"""Column types: timezone-aware UTC datetimes on every backend, and strings sealed at rest."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import sqlalchemy as sa

from services.core.sealing import seal, unseal


class UTCDateTime(sa.TypeDecorator[datetime]):
    """Timezone-aware UTC on every backend (SQLite stores naive datetimes)."""

    impl = sa.DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            value = value.replace(tzinfo=UTC)
        value = value.astimezone(UTC)
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(self, value: datetime | None, dialect: sa.Dialect) -> datetime | None:
        if value is None:
            return None
        return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)


class SealedString(sa.types.TypeDecorator[str]):
    """A string column whose values are sealed on the way in and opened on the way out."""

    impl = sa.String(512)
    cache_ok = True

    def process_bind_param(self, value: str | None, dialect: Any) -> str | None:
        return None if value is None else seal(value)

    def process_result_value(self, value: str | None, dialect: Any) -> str | None:
        return None if value is None else unseal(value)
