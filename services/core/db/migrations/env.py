"""Alembic environment: the URL comes from the config (set by `migrate()`) or from PAGEMILL_DATABASE_URL."""

from __future__ import annotations

from alembic import context

from services.core.db.models import Base
from services.core.db.session import get_engine
from services.core.settings import Settings

config = context.config
url = config.get_main_option("sqlalchemy.url") or Settings().resolved_database_url()


def run_migrations_offline() -> None:
    context.configure(url=url, target_metadata=Base.metadata, literal_binds=True, render_as_batch=True)
    with context.begin_transaction():
        context.run_migrations()


def run_migrations_online() -> None:
    with get_engine(url).connect() as connection:
        context.configure(connection=connection, target_metadata=Base.metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


if context.is_offline_mode():
    run_migrations_offline()
else:
    run_migrations_online()
