"""documents.media_type: 255 characters (office media types are longer than 64: a DOCX's is 71)

Revision ID: 0009
Revises: 0008
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0009'
down_revision = '0008'
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.alter_column('media_type', existing_type=sa.String(length=64), type_=sa.String(length=255),
                              existing_nullable=False)


def downgrade() -> None:
    with op.batch_alter_table('documents', schema=None) as batch_op:
        batch_op.alter_column('media_type', existing_type=sa.String(length=255), type_=sa.String(length=64),
                              existing_nullable=False)
