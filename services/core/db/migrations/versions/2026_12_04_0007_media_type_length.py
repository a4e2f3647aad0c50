"""documents.media_type up to 255 characters: an office upload's type
(application/vnd.openxmlformats-officedocument.wordprocessingml.document is 71) did not fit the 64 of 0001, and
PostgreSQL refused every .docx/.xlsx/.pptx upload with a 500 (SQLite does not enforce lengths)

Revision ID: 0007
Revises: 0006
Create Date: 2026-12-04
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = '0007'
down_revision = '0006'
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
