"""batches: many documents under one id; documents.batch_id

Revision ID: 0010
Revises: 0009
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0010'
down_revision = '0009'
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        'batches',
        sa.Column('id', sa.String(length=48), nullable=False),
        sa.Column('tenant_id', sa.String(length=48), nullable=False),
        sa.Column('documents_total', sa.Integer(), nullable=False),
        sa.Column('metadata', sa.JSON(), nullable=False),
        sa.Column('created_at', sa.DateTime(timezone=True), nullable=False),
        sa.Column('completed_at', sa.DateTime(timezone=True), nullable=True),
        sa.PrimaryKeyConstraint('id'),
    )
    op.create_index('ix_batches_tenant_id', 'batches', ['tenant_id'])
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('batch_id', sa.String(length=48), nullable=True))
        batch_op.create_index('ix_documents_batch_id', ['batch_id'])


def downgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.drop_index('ix_documents_batch_id')
        batch_op.drop_column('batch_id')
    op.drop_index('ix_batches_tenant_id', table_name='batches')
    op.drop_table('batches')
