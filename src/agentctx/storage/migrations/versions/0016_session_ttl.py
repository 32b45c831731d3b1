"""Each session's own time to live, when it was created with one.

A write renews a session's expiry by its TTL. Until now that was always the engine's
``session_ttl``, so a session created with ``ttl=timedelta(hours=1)`` lived for the
engine's 30 days from its first write on. Sessions created before this keep the
engine's TTL (the column is null for them).

Revision ID: 0016
Revises: 0015
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("sessions", sa.Column("ttl_ms", sa.BigInteger, nullable=True))


def downgrade() -> None:
    # Not a batch operation: rebuilding the sessions table on SQLite would cascade to the
    # events that reference it. Both databases drop a column in place.
    op.execute("ALTER TABLE sessions DROP COLUMN ttl_ms")
