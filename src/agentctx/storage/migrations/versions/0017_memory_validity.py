"""Facts in time: each memory's validity (``valid_from``, ``valid_to``) and the memory
that superseded it.

Memories stored before this became true when they were created (``valid_from`` is set to
``created_at``); those already stale have no recorded end, so they count as contested,
not as once true (``memory.search(as_of=…)`` does not answer with them).

Revision ID: 0017
Revises: 0016
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.storage.schema import UTCDateTime

revision = "0017"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("memories", sa.Column("valid_from", UTCDateTime(), nullable=True))
    op.add_column("memories", sa.Column("valid_to", UTCDateTime(), nullable=True))
    op.add_column("memories", sa.Column("superseded_by", sa.String(64), nullable=True))
    op.execute("UPDATE memories SET valid_from = created_at")


def downgrade() -> None:
    # Dropped in place on both databases (a batch rebuild of memories on SQLite would
    # cascade to its provenance rows).
    for column in ("superseded_by", "valid_to", "valid_from"):
        op.execute(f"ALTER TABLE memories DROP COLUMN {column}")
