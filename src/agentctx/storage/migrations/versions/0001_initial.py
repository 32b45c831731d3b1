"""The event-sourced session store: agents, sessions, events, turns, jobs, blobs, audit.

Revision ID: 0001
Revises:
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.storage.schema import BigId, JsonColumn, UTCDateTime

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

ID = 128


def upgrade() -> None:
    op.create_table(
        "agents",
        sa.Column("agent_id", sa.String(ID), nullable=False),
        sa.Column("config", JsonColumn, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("agent_id", name="pk_agents"),
    )
    op.create_table(
        "sessions",
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("agent_id", sa.String(ID), nullable=False),
        sa.Column("state", JsonColumn, nullable=False),
        sa.Column("state_version", sa.Integer, nullable=False),
        sa.Column("last_seq", sa.BigInteger, nullable=False),
        sa.Column("last_hash", sa.String(64), nullable=False),
        sa.Column("config", JsonColumn, nullable=False),
        sa.Column("meta", JsonColumn, nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.Column("last_accessed_at", UTCDateTime, nullable=False),
        sa.Column("expires_at", UTCDateTime, nullable=True),
        sa.PrimaryKeyConstraint("user_id", "session_id", name="pk_sessions"),
    )
    op.create_index(
        "ix_sessions_user_id_created_at_session_id",
        "sessions",
        ["user_id", "created_at", "session_id"],
    )
    op.create_index("ix_sessions_expires_at", "sessions", ["expires_at"])
    op.create_table(
        "events",
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("ts", UTCDateTime, nullable=False),
        sa.Column("type", sa.String(32), nullable=False),
        sa.Column("role", sa.String(16), nullable=True),
        sa.Column("author", sa.String(ID), nullable=True),
        sa.Column("turn_id", sa.String(64), nullable=True),
        sa.Column("request_id", sa.String(ID), nullable=True),
        sa.Column("call_id", sa.String(ID), nullable=True),
        sa.Column("idempotency_key", sa.String(256), nullable=True),
        sa.Column("parts", JsonColumn, nullable=False),
        sa.Column("payload", JsonColumn, nullable=False),
        sa.Column("meta", JsonColumn, nullable=False),
        sa.Column("redacted", sa.Boolean, nullable=False),
        sa.Column("redacted_types", JsonColumn, nullable=False),
        sa.Column("token_estimate", sa.Integer, nullable=False),
        sa.Column("hash", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "session_id", "seq", name="pk_events"),
        sa.ForeignKeyConstraint(
            ["user_id", "session_id"],
            ["sessions.user_id", "sessions.session_id"],
            name="fk_events_sessions",
            ondelete="CASCADE",
        ),
        sa.UniqueConstraint(
            "user_id", "session_id", "event_id", name="uq_events_user_id_session_id_event_id"
        ),
        sqlite_with_rowid=False,
    )
    for column, unique in (("idempotency_key", True), ("turn_id", False), ("call_id", False)):
        where = sa.text(f"{column} IS NOT NULL")
        op.create_index(
            f"ix_events_user_id_session_id_{column}",
            "events",
            ["user_id", "session_id", column],
            unique=unique,
            sqlite_where=where,
            postgresql_where=where,
        )
    op.create_table(
        "turns",
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("turn_id", sa.String(64), nullable=False),
        sa.Column("request_id", sa.String(ID), nullable=True),
        sa.Column("author", sa.String(ID), nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("started_at", UTCDateTime, nullable=False),
        sa.Column("ended_at", UTCDateTime, nullable=True),
        sa.Column("first_seq", sa.BigInteger, nullable=True),
        sa.Column("last_seq", sa.BigInteger, nullable=True),
        sa.Column("event_count", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "session_id", "turn_id", name="pk_turns"),
        sa.ForeignKeyConstraint(
            ["user_id", "session_id"],
            ["sessions.user_id", "sessions.session_id"],
            name="fk_turns_sessions",
            ondelete="CASCADE",
        ),
        sqlite_with_rowid=False,
    )
    op.create_table(
        "jobs",
        sa.Column("job_id", BigId, nullable=False, autoincrement=True),
        sa.Column("kind", sa.String(ID), nullable=False),
        sa.Column("user_id", sa.String(ID), nullable=True),
        sa.Column("session_id", sa.String(ID), nullable=True),
        sa.Column("turn_id", sa.String(64), nullable=True),
        sa.Column("payload", JsonColumn, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("max_attempts", sa.Integer, nullable=False),
        sa.Column("run_after", UTCDateTime, nullable=False),
        sa.Column("lease_until", UTCDateTime, nullable=True),
        sa.Column("worker", sa.String(ID), nullable=True),
        sa.Column("last_error", sa.Text, nullable=True),
        sa.Column("dedupe_key", sa.String(256), nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("updated_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("job_id", name="pk_jobs"),
        sa.UniqueConstraint("dedupe_key", name="uq_jobs_dedupe_key"),
    )
    op.create_index("ix_jobs_status_run_after", "jobs", ["status", "run_after"])
    op.create_index("ix_jobs_user_id_session_id", "jobs", ["user_id", "session_id"])
    op.create_table(
        "blobs",
        sa.Column("blob_id", sa.String(64), nullable=False),
        sa.Column("size", sa.BigInteger, nullable=False),
        sa.Column("media_type", sa.String(ID), nullable=False),
        sa.Column("width", sa.Integer, nullable=True),
        sa.Column("height", sa.Integer, nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("blob_id", name="pk_blobs"),
    )
    op.create_table(
        "blob_refs",
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("part_index", sa.Integer, nullable=False),
        sa.Column("blob_id", sa.String(64), nullable=False),
        sa.Column("image_id", sa.String(64), nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint(
            "user_id", "session_id", "event_id", "part_index", name="pk_blob_refs"
        ),
        sa.ForeignKeyConstraint(
            ["user_id", "session_id"],
            ["sessions.user_id", "sessions.session_id"],
            name="fk_blob_refs_sessions",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_blob_refs_blob_id", "blob_refs", ["blob_id"])
    op.create_index("ix_blob_refs_user_id_image_id", "blob_refs", ["user_id", "image_id"])
    op.create_table(
        "audit",
        sa.Column("audit_id", BigId, nullable=False, autoincrement=True),
        sa.Column("ts", UTCDateTime, nullable=False),
        sa.Column("action", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(ID), nullable=True),
        sa.Column("session_id", sa.String(ID), nullable=True),
        sa.Column("request_id", sa.String(ID), nullable=True),
        sa.Column("event_id", sa.String(64), nullable=True),
        sa.Column("event_type", sa.String(32), nullable=True),
        sa.Column("state_version", sa.Integer, nullable=True),
        sa.Column("duration_ms", sa.Float, nullable=True),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("error_code", sa.String(64), nullable=True),
        sa.Column("meta", JsonColumn, nullable=False),
        sa.PrimaryKeyConstraint("audit_id", name="pk_audit"),
    )
    op.create_index("ix_audit_user_id_ts", "audit", ["user_id", "ts"])


def downgrade() -> None:
    for table in ("audit", "blob_refs", "blobs", "jobs", "turns", "events", "sessions", "agents"):
        op.drop_table(table)
