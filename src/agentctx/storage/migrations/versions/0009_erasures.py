"""The erasure feed: one row per delete_user_data, read by every process sharing the
database so that each drops what it holds of the user in memory.

Revision ID: 0009
Revises: 0008
Create Date: 2026-11-23
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.storage.schema import BigId, UTCDateTime

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

ID = 128


def upgrade() -> None:
    op.create_table(
        "erasures",
        sa.Column("erasure_id", BigId, nullable=False, autoincrement=True),
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("erased_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("erasure_id", name="pk_erasures"),
        sqlite_autoincrement=True,
    )
    op.create_index("ix_erasures_erased_at", "erasures", ["erased_at"])


def downgrade() -> None:
    op.drop_index("ix_erasures_erased_at", table_name="erasures")
    op.drop_table("erasures")
