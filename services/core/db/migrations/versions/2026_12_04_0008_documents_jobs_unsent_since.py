"""documents.jobs_unsent_since: a document whose first jobs are committed but not yet known to be sent

Revision ID: 0008
Revises: 0007
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0008'
down_revision = '0007'
branch_labels = None
depends_on = None

UNSENT = sa.text("jobs_unsent_since IS NOT NULL")


def upgrade() -> None:
    # Nullable without a default: existing rows (whose jobs went out long ago) stay NULL, nothing is rewritten.
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('jobs_unsent_since', sa.DateTime(timezone=True), nullable=True))
        batch_op.create_index('ix_documents_unsent', ['jobs_unsent_since'], unique=False,
                              postgresql_where=UNSENT, sqlite_where=UNSENT)


def downgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.drop_index('ix_documents_unsent')
        batch_op.drop_column('jobs_unsent_since')
