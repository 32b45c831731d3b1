"""Summaries: versioned text standing for an exact range of a session's events.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.storage.schema import UTCDateTime

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

ID = 128


def upgrade() -> None:
    op.create_table(
        "summaries",
        sa.Column("summary_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("kind", sa.String(16), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("first_seq", sa.BigInteger, nullable=False),
        sa.Column("last_seq", sa.BigInteger, nullable=False),
        sa.Column("source_event_count", sa.Integer, nullable=False),
        sa.Column("token_count", sa.Integer, nullable=False),
        sa.Column("method", sa.String(256), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("summary_id", name="pk_summaries"),
        sa.UniqueConstraint(
            "user_id",
            "session_id",
            "kind",
            "version",
            name="uq_summaries_user_id_session_id_kind_version",
        ),
        sa.ForeignKeyConstraint(
            ["user_id", "session_id"],
            ["sessions.user_id", "sessions.session_id"],
            name="fk_summaries_sessions",
            ondelete="CASCADE",
        ),
    )


def downgrade() -> None:
    op.drop_table("summaries")
