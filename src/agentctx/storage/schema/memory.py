"""Long-term memory's tables (agentctx.memory)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)

from agentctx.storage.schema.columns import ID, BigId, JsonColumn, UTCDateTime, metadata

# Long-term memory (agentctx.memory). Memories belong to a user (optionally narrowed to an
# agent or a session) and outlive sessions: deleting a session keeps what was learned from
# it (its provenance rows stay as ids); deleting a user's data removes all of it.

memories = Table(
    "memories",
    metadata,
    Column("memory_id", String(64), primary_key=True),
    Column("user_id", String(ID), nullable=False),
    Column("agent_id", String(ID), nullable=True),
    Column("session_id", String(ID), nullable=True),
    Column("kind", String(32), nullable=False),
    # What a contradiction is judged on: two memories of one kind and subject that say
    # different things (e.g. profile field "occupation").
    Column("subject", String(256), nullable=True),
    Column("content", Text, nullable=False),
    Column("data", JsonColumn, nullable=False),
    Column("keywords", JsonColumn, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("support_count", Integer, nullable=False),
    Column("tainted", Boolean, nullable=False),
    Column("version", Integer, nullable=False),
    Column("status", String(16), nullable=False),  # active | stale | deleted
    Column("extractor_version", String(64), nullable=False),
    Column("model", String(ID), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=True),
    # Facts in time: when what it says became true, when it stopped (the time the
    # statement that superseded it was made) and which memory replaced it.
    Column("valid_from", UTCDateTime, nullable=True),
    Column("valid_to", UTCDateTime, nullable=True),
    Column("superseded_by", String(64), nullable=True),
    Index(None, "user_id", "status", "kind"),
    Index(None, "user_id", "kind", "subject"),
)

memory_sources = Table(
    "memory_sources",
    metadata,
    Column("memory_id", String(64), nullable=False),
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("event_id", String(64), nullable=False),
    Column("seq", BigInteger, nullable=True),
    Column("extractor_version", String(64), nullable=False),
    Column("model", String(ID), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("memory_id", "session_id", "event_id"),
    ForeignKeyConstraint(["memory_id"], ["memories.memory_id"], ondelete="CASCADE"),
    Index(None, "user_id", "session_id"),
)

memory_history = Table(
    "memory_history",
    metadata,
    Column("history_id", BigId, primary_key=True, autoincrement=True),
    Column("memory_id", String(64), nullable=False),
    Column("user_id", String(ID), nullable=False),
    Column("version", Integer, nullable=False),
    # create | merge | update | stale | supersede | restore | delete
    Column("action", String(16), nullable=False),
    Column("old_value", JsonColumn, nullable=True),
    Column("new_value", JsonColumn, nullable=True),
    Column("reason", Text, nullable=False),
    Column("source", JsonColumn, nullable=False),
    Column("ts", UTCDateTime, nullable=False),
    Index(None, "memory_id", "history_id"),
    Index(None, "user_id"),
)

# Idempotency of extraction: one row per (user, session, extractor version, kind) run.
memory_runs = Table(
    "memory_runs",
    metadata,
    Column("run_key", String(512), primary_key=True),
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("through_seq", BigInteger, nullable=False),
    Column("memory_ids", JsonColumn, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index(None, "user_id"),
)

memory_settings = Table(
    "memory_settings",
    metadata,
    Column("user_id", String(ID), primary_key=True),
    # Seed 003 A.1.10: no declarative memory (profile, facts, preferences) for this user;
    # procedural statistics are still kept.
    Column("declarative_opt_out", Boolean, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)


MEMORY_TABLES: tuple[Table, ...] = (
    memory_sources,
    memory_history,
    memory_runs,
    memory_settings,
    memories,
)
"""Tables of long-term memory, children first (``delete_user_data`` empties them)."""
