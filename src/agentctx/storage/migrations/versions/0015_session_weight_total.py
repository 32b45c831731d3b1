"""Each session's running total of its events' history weights, and an index of its
system events.

Windows measure how far into a session an event lies along this axis, so that the
recent history slides in steps the next calls repeat (``agentctx.context.history``).
Existing sessions start from the sum of their events' token estimates plus each event's
message framing, which is at least the sum of their weights: only differences along the
axis matter, and those the writer keeps exact from now on.

Revision ID: 0015
Revises: 0014
Create Date: 2026-11-28
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column(
        "sessions",
        sa.Column("weight_total", sa.BigInteger, nullable=False, server_default=sa.text("0")),
    )
    op.execute(
        "UPDATE sessions SET weight_total = COALESCE((SELECT SUM(e.token_estimate + 4) "
        "FROM events AS e WHERE e.user_id = sessions.user_id "
        "AND e.session_id = sessions.session_id), 0)"
    )
    # Every window reads the session's system events (its instructions).
    op.create_index(
        "ix_events_system",
        "events",
        ["user_id", "session_id", "seq"],
        sqlite_where=sa.text("type = 'system'"),
        postgresql_where=sa.text("type = 'system'"),
    )


def downgrade() -> None:
    op.drop_index("ix_events_system", table_name="events")
    # Not a batch operation: rebuilding the sessions table on SQLite would cascade to the
    # events that reference it. Both databases drop a column in place.
    op.execute("ALTER TABLE sessions DROP COLUMN weight_total")
