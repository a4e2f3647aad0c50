"""documents.parent_id: an e-mail's attachments parsed as child documents of the e-mail

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0005'
down_revision = '0004'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('parent_id', sa.String(length=48), nullable=True))
        batch_op.create_index('ix_documents_parent_id', ['parent_id'], unique=False)


def downgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.drop_index('ix_documents_parent_id')
        batch_op.drop_column('parent_id')
