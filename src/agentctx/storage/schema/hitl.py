"""Human in the loop's tables (agentctx.hitl)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)

from agentctx.storage.schema.columns import (
    ID,
    JsonColumn,
    UTCDateTime,
    metadata,
    session_foreign_key,
)

# Human in the loop (agentctx.hitl): one flag row per evaluated session, and the last
# context window built per (session, turn) for repro packages. ``turn_id`` is ``""`` for a
# window built outside any turn.
hitl_flags = Table(
    "hitl_flags",
    metadata,
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("status", String(16), nullable=False),  # none | needed | resolved
    Column("trigger", String(64), nullable=True),
    Column("reason", Text, nullable=True),
    Column("event_ids", JsonColumn, nullable=False),  # what caused the current flag
    Column("turn_id", String(64), nullable=True),  # the failing turn
    Column("hitl_event_id", String(64), nullable=True),  # the hitl event that marked it
    Column("checked_seq", BigInteger, nullable=False),
    Column("baseline_seq", BigInteger, nullable=False),
    Column("streaks", JsonColumn, nullable=False),  # {tool name: [event ids]}
    Column("note", Text, nullable=True),  # the resolution note (redacted)
    Column("flagged_at", UTCDateTime, nullable=True),
    Column("resolved_at", UTCDateTime, nullable=True),
    Column("updated_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("user_id", "session_id"),
    Index(None, "user_id", "status"),
    session_foreign_key(),
)

context_windows = Table(
    "context_windows",
    metadata,
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("turn_id", String(64), nullable=False),
    Column("query", Text, nullable=True),  # redacted
    Column("budget", Integer, nullable=False),
    Column("strategy", String(32), nullable=False),
    Column("messages", JsonColumn, nullable=False),
    Column("tokens", Integer, nullable=False),
    Column("report", JsonColumn, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("user_id", "session_id", "turn_id"),
    session_foreign_key(),
)
