"""webhook signing secrets widened to hold a sealed value (services/core/sealing.py)

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0004'
down_revision = '0003'
branch_labels = None
depends_on = None

COLUMNS = (('tenants', 'webhook_secret'), ('webhook_endpoints', 'secret'))


def upgrade() -> None:
    for table, column in COLUMNS:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column(column, existing_type=sa.String(length=128), type_=sa.String(length=512),
                                  existing_nullable=False)


def downgrade() -> None:
    # Fails on PostgreSQL while sealed values (~170 characters) are stored: it is for databases that never had a key.
    for table, column in COLUMNS:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.alter_column(column, existing_type=sa.String(length=512), type_=sa.String(length=128),
                                  existing_nullable=False)
