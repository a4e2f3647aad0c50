"""documents.scrubbed_at: deleted or expired documents whose customer data is erased from every table

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0003'
down_revision = '0002'
branch_labels = None
depends_on = None

UNSCRUBBED = sa.text("scrubbed_at IS NULL AND (deleted_at IS NOT NULL OR expired_at IS NOT NULL)")


def upgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('scrubbed_at', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_documents_unscrubbed', ['id'], unique=False, postgresql_where=UNSCRUBBED,
                              sqlite_where=UNSCRUBBED)


def downgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.drop_index('ix_documents_unscrubbed')
        batch_op.drop_column('scrubbed_at')
