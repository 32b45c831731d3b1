"""Long-term memory: memories, their provenance and history, extraction runs, opt-outs.

Revision ID: 0006
Revises: 0005
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.storage.schema import BigId, JsonColumn, UTCDateTime

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None

ID = 128


def upgrade() -> None:
    op.create_table(
        "memories",
        sa.Column("memory_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("agent_id", sa.String(ID), nullable=True),
        sa.Column("session_id", sa.String(ID), nullable=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("subject", sa.String(256), nullable=True),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("data", JsonColumn, nullable=False),
        sa.Column("keywords", JsonColumn, nullable=False),
        sa.Column("confidence", sa.Float, nullable=False),
        sa.Column("support_count", sa.Integer, nullable=False),
        sa.Column("tainted", sa.Boolean, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("extractor_version", sa.String(64), nullable=False),
        sa.Column("model", sa.String(ID), nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=True),
        sa.PrimaryKeyConstraint("memory_id", name="pk_memories"),
    )
    op.create_index("ix_memories_user_id_status_kind", "memories", ["user_id", "status", "kind"])
    op.create_index("ix_memories_user_id_kind_subject", "memories", ["user_id", "kind", "subject"])
    op.create_table(
        "memory_sources",
        sa.Column("memory_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=True),
        sa.Column("extractor_version", sa.String(64), nullable=False),
        sa.Column("model", sa.String(ID), nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("memory_id", "session_id", "event_id", name="pk_memory_sources"),
        sa.ForeignKeyConstraint(
            ["memory_id"],
            ["memories.memory_id"],
            name="fk_memory_sources_memories",
            ondelete="CASCADE",
        ),
    )
    op.create_index(
        "ix_memory_sources_user_id_session_id", "memory_sources", ["user_id", "session_id"]
    )
    op.create_table(
        "memory_history",
        sa.Column("history_id", BigId, autoincrement=True, nullable=False),
        sa.Column("memory_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("old_value", JsonColumn, nullable=True),
        sa.Column("new_value", JsonColumn, nullable=True),
        sa.Column("reason", sa.Text, nullable=False),
        sa.Column("source", JsonColumn, nullable=False),
        sa.Column("ts", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("history_id", name="pk_memory_history"),
    )
    op.create_index(
        "ix_memory_history_memory_id_history_id", "memory_history", ["memory_id", "history_id"]
    )
    op.create_index("ix_memory_history_user_id", "memory_history", ["user_id"])
    op.create_table(
        "memory_runs",
        sa.Column("run_key", sa.String(512), nullable=False),
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("through_seq", sa.BigInteger, nullable=False),
        sa.Column("memory_ids", JsonColumn, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("run_key", name="pk_memory_runs"),
    )
    op.create_index("ix_memory_runs_user_id", "memory_runs", ["user_id"])
    op.create_table(
        "memory_settings",
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("declarative_opt_out", sa.Boolean, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("user_id", name="pk_memory_settings"),
    )


def downgrade() -> None:
    for table in ("memory_settings", "memory_runs", "memory_history", "memory_sources"):
        op.drop_table(table)
    op.drop_table("memories")
