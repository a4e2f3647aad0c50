"""tenants.previous_webhook_secret(_expires_at) and webhook_endpoints.previous_secret(_expires_at): a rotated
signing secret keeps signing, as a second signature, until its overlap window ends

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-03
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
branch_labels = None
depends_on = None

COLUMNS = (('tenants', 'previous_webhook_secret'), ('webhook_endpoints', 'previous_secret'))


def upgrade() -> None:
    for table, column in COLUMNS:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.add_column(sa.Column(column, sa.String(length=512), nullable=True))  # sealed like the secret
            batch_op.add_column(sa.Column(f'{column}_expires_at', sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    for table, column in COLUMNS:
        with op.batch_alter_table(table, schema=None) as batch_op:
            batch_op.drop_column(f'{column}_expires_at')
            batch_op.drop_column(column)
