"""Human-in-the-loop flags and recorded context windows.

* ``hitl_flags``: per session, whether it needs a human (and why), with the progress
  of the trigger evaluation.
* ``context_windows``: the last context window built per (session, turn), for
  reproduction packages.

Revision ID: 0008
Revises: 0007
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.storage.schema import JsonColumn, UTCDateTime

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

ID = 128


def _session_fk(table: str) -> sa.ForeignKeyConstraint:
    return sa.ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        name=f"fk_{table}_sessions",
        ondelete="CASCADE",
    )


def upgrade() -> None:
    op.create_table(
        "hitl_flags",
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("trigger", sa.String(64), nullable=True),
        sa.Column("reason", sa.Text, nullable=True),
        sa.Column("event_ids", JsonColumn, nullable=False),
        sa.Column("turn_id", sa.String(64), nullable=True),
        sa.Column("hitl_event_id", sa.String(64), nullable=True),
        sa.Column("checked_seq", sa.BigInteger, nullable=False),
        sa.Column("baseline_seq", sa.BigInteger, nullable=False),
        sa.Column("streaks", JsonColumn, nullable=False),
        sa.Column("note", sa.Text, nullable=True),
        sa.Column("flagged_at", UTCDateTime, nullable=True),
        sa.Column("resolved_at", UTCDateTime, nullable=True),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "session_id", name="pk_hitl_flags"),
        _session_fk("hitl_flags"),
    )
    op.create_index("ix_hitl_flags_user_id_status", "hitl_flags", ["user_id", "status"])
    op.create_table(
        "context_windows",
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("query", sa.Text, nullable=True),
        sa.Column("budget", sa.Integer, nullable=False),
        sa.Column("strategy", sa.String(32), nullable=False),
        sa.Column("messages", JsonColumn, nullable=False),
        sa.Column("tokens", sa.Integer, nullable=False),
        sa.Column("report", JsonColumn, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "session_id", "turn_id", name="pk_context_windows"),
        _session_fk("context_windows"),
    )


def downgrade() -> None:
    op.drop_table("context_windows")
    op.drop_index("ix_hitl_flags_user_id_status", table_name="hitl_flags")
    op.drop_table("hitl_flags")
