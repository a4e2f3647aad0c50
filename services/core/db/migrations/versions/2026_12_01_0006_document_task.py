"""documents.task and documents.task_params: what a document was submitted for (parse, translate, extract,
summarize) and the task's parameters

Revision ID: 0006
Revises: 0005
Create Date: 2026-12-01
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0006'
down_revision = '0005'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.add_column(sa.Column('task', sa.String(length=16), nullable=False, server_default='parse'))
        batch_op.add_column(sa.Column('task_params', sa.JSON(), nullable=False,
                                      server_default=sa.text("'{}'")))


def downgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.drop_column('task_params')
        batch_op.drop_column('task')
