"""Session deletions in the erasure feed: the session and its search index number.

Revision ID: 0010
Revises: 0009
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0010"
down_revision = "0009"
branch_labels = None
depends_on = None

ID = 128


def upgrade() -> None:
    with op.batch_alter_table("erasures") as batch:
        batch.add_column(sa.Column("session_id", sa.String(ID), nullable=True))
        batch.add_column(sa.Column("search_sid", sa.BigInteger, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("erasures") as batch:
        batch.drop_column("search_sid")
        batch.drop_column("session_id")
