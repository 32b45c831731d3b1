"""The SQL schema, as SQLAlchemy Core tables.

Migrations (``storage/migrations``) create and change these tables; a test checks
that the migrated database matches this module exactly.

Every table that holds a user's data has a ``user_id`` column: ``delete_user_data``
finds them through :data:`USER_DATA_TABLES`, so a table added later is covered by
listing it there.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import (
    JSON,
    BigInteger,
    Boolean,
    Column,
    DateTime,
    Dialect,
    Float,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    TypeDecorator,
    UniqueConstraint,
    false,
    text,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.types import TypeEngine

NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}
metadata = MetaData(naming_convention=NAMING)

JsonColumn = JSON().with_variant(JSONB(), "postgresql")
# SQLite only autoincrements INTEGER PRIMARY KEY columns.
BigId = BigInteger().with_variant(Integer(), "sqlite")


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC timestamp on every backend.

    PostgreSQL stores ``timestamptz``. SQLite has no date type: values are stored
    as naive UTC text, ``YYYY-MM-DD HH:MM:SS.ffffff`` (the format SQLAlchemy's own
    SQLite DATETIME uses), which sorts and compares correctly as text and parses
    with the C ``datetime.fromisoformat``.
    """

    impl = DateTime(timezone=True)
    cache_ok = True

    def load_dialect_impl(self, dialect: Dialect) -> TypeEngine[Any]:
        if dialect.name == "sqlite":
            return dialect.type_descriptor(String(26))
        return dialect.type_descriptor(DateTime(timezone=True))

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> Any:
        if value is None:
            return None
        if value.tzinfo is None:
            raise ValueError("naive datetime given to a UTC column")
        value = value.astimezone(UTC)
        if dialect.name == "sqlite":
            return value.replace(tzinfo=None).isoformat(sep=" ", timespec="microseconds")
        return value

    def fast_bind_processor(self, dialect: Dialect) -> Callable[[datetime], Any]:
        """One-step bind conversion for the hot write path (same values as below)."""
        return lambda value: self.process_bind_param(value, dialect)

    def fast_result_processor(self, dialect: Dialect) -> Callable[[Any], datetime] | None:
        """One-step result conversion for the hot read path (same values as below)."""
        if dialect.name == "sqlite":
            return lambda value: datetime.fromisoformat(value).replace(tzinfo=UTC)
        return lambda value: value.astimezone(UTC)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        if isinstance(value, str):
            return datetime.fromisoformat(value).replace(tzinfo=UTC)
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)  # type: ignore[no-any-return]
        return value.astimezone(UTC)  # type: ignore[no-any-return]


ID = 128  # length of user-visible identifiers

agents = Table(
    "agents",
    metadata,
    Column("agent_id", String(ID), primary_key=True),
    Column("config", JsonColumn, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
)

sessions = Table(
    "sessions",
    metadata,
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("agent_id", String(ID), nullable=False),
    Column("state", JsonColumn, nullable=False),
    Column("state_version", Integer, nullable=False),
    Column("last_seq", BigInteger, nullable=False),
    Column("last_hash", String(64), nullable=False),
    Column("config", JsonColumn, nullable=False),
    Column("meta", JsonColumn, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("last_accessed_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=True),
    PrimaryKeyConstraint("user_id", "session_id"),
    Index(None, "user_id", "created_at", "session_id"),
    Index(None, "expires_at"),
)

events = Table(
    "events",
    metadata,
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("event_id", String(64), nullable=False),
    Column("ts", UTCDateTime, nullable=False),
    Column("type", String(32), nullable=False),
    Column("role", String(16), nullable=True),
    Column("author", String(ID), nullable=True),
    Column("turn_id", String(64), nullable=True),
    Column("request_id", String(ID), nullable=True),
    Column("call_id", String(ID), nullable=True),
    Column("idempotency_key", String(256), nullable=True),
    Column("parts", JsonColumn, nullable=False),
    Column("payload", JsonColumn, nullable=False),
    Column("meta", JsonColumn, nullable=False),
    Column("redacted", Boolean, nullable=False),
    Column("redacted_types", JsonColumn, nullable=False),
    Column("token_estimate", Integer, nullable=False),
    Column("hash", String(64), nullable=False),
    PrimaryKeyConstraint("user_id", "session_id", "seq"),
    ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        ondelete="CASCADE",
    ),
    UniqueConstraint("user_id", "session_id", "event_id"),
    # Partial indexes: most events have no idempotency key or call id, so they cost nothing
    # there, and they can never be mistaken for an ordering index by the planner.
    Index(
        None,
        "user_id",
        "session_id",
        "idempotency_key",
        unique=True,
        sqlite_where=text("idempotency_key IS NOT NULL"),
        postgresql_where=text("idempotency_key IS NOT NULL"),
    ),
    Index(
        None,
        "user_id",
        "session_id",
        "turn_id",
        sqlite_where=text("turn_id IS NOT NULL"),
        postgresql_where=text("turn_id IS NOT NULL"),
    ),
    Index(
        None,
        "user_id",
        "session_id",
        "call_id",
        sqlite_where=text("call_id IS NOT NULL"),
        postgresql_where=text("call_id IS NOT NULL"),
    ),
    # On SQLite the table is its primary key b-tree: one write per event, not two, and a
    # session's events sit together on disk.
    sqlite_with_rowid=False,
)

turns = Table(
    "turns",
    metadata,
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("turn_id", String(64), nullable=False),
    Column("request_id", String(ID), nullable=True),
    Column("author", String(ID), nullable=True),
    Column("status", String(16), nullable=False),  # open | ok | error
    Column("started_at", UTCDateTime, nullable=False),
    Column("ended_at", UTCDateTime, nullable=True),
    Column("first_seq", BigInteger, nullable=True),
    Column("last_seq", BigInteger, nullable=True),
    Column("event_count", Integer, nullable=False),
    PrimaryKeyConstraint("user_id", "session_id", "turn_id"),
    ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        ondelete="CASCADE",
    ),
    sqlite_with_rowid=False,
)

jobs = Table(
    "jobs",
    metadata,
    Column("job_id", BigId, primary_key=True, autoincrement=True),
    Column("kind", String(ID), nullable=False),
    Column("user_id", String(ID), nullable=True),
    Column("session_id", String(ID), nullable=True),
    Column("turn_id", String(64), nullable=True),
    Column("payload", JsonColumn, nullable=False),
    Column("status", String(16), nullable=False),  # pending | running | done | failed
    Column("attempts", Integer, nullable=False),
    Column("max_attempts", Integer, nullable=False),
    Column("run_after", UTCDateTime, nullable=False),
    Column("lease_until", UTCDateTime, nullable=True),
    Column("worker", String(ID), nullable=True),
    Column("last_error", Text, nullable=True),
    Column("dedupe_key", String(256), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("dedupe_key"),
    Index(None, "status", "run_after"),
    Index(None, "user_id", "session_id"),
)

blobs = Table(
    "blobs",
    metadata,
    Column("blob_id", String(64), primary_key=True),  # sha256 of the bytes
    Column("size", BigInteger, nullable=False),
    Column("media_type", String(ID), nullable=False),
    Column("width", Integer, nullable=True),
    Column("height", Integer, nullable=True),
    # Images: perceptual hashes (16 hex digits) and mean colour, for deduplication.
    Column("phash", String(16), nullable=True),
    Column("dhash", String(16), nullable=True),
    Column("ahash", String(16), nullable=True),
    Column("mean_color", String(6), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    # Set when cold-storage retention removed the bytes; the row stays, so a restore
    # can say the image expired rather than that it never existed.
    Column("expired_at", UTCDateTime, nullable=True),
)

blob_refs = Table(
    "blob_refs",
    metadata,
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("event_id", String(64), nullable=False),
    Column("part_index", Integer, nullable=False),  # -1: the event's payload
    Column("blob_id", String(64), nullable=False),
    Column("image_id", String(64), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    # Where the referencing event sits (NULL on references written before 0005).
    Column("seq", BigInteger, nullable=True),
    Column("turn_id", String(64), nullable=True),
    # Visual compaction (seed 000): the image's role in its ended turn (anchor, result,
    # error, process) and whether windows show a placeholder instead of it.
    Column("frame", String(16), nullable=True),
    Column("is_compressed", Boolean, nullable=False, server_default=false()),
    Column("compressed_at", UTCDateTime, nullable=True),
    # Perceptual dedup: bits between the submitted image and the one it reused.
    Column("dedup_distance", Integer, nullable=True),
    PrimaryKeyConstraint("user_id", "session_id", "event_id", "part_index"),
    ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        ondelete="CASCADE",
    ),
    Index(None, "blob_id"),
    Index(None, "user_id", "image_id"),
    Index(None, "user_id", "session_id", "seq"),
    Index(None, "user_id", "session_id", "turn_id"),
)

audit = Table(
    "audit",
    metadata,
    Column("audit_id", BigId, primary_key=True, autoincrement=True),
    Column("ts", UTCDateTime, nullable=False),
    Column("action", String(64), nullable=False),
    Column("user_id", String(ID), nullable=True),
    Column("session_id", String(ID), nullable=True),
    Column("request_id", String(ID), nullable=True),
    Column("event_id", String(64), nullable=True),
    Column("event_type", String(32), nullable=True),
    Column("state_version", Integer, nullable=True),
    Column("duration_ms", Float, nullable=True),
    Column("status", String(16), nullable=False),
    Column("error_code", String(64), nullable=True),
    Column("meta", JsonColumn, nullable=False),
    # No index on ts alone: the sweep's retention trim may scan; every append must not pay.
    Index(None, "user_id", "ts"),
)

# The retrieval index (agentctx.retrieval). Its bookkeeping lives in these tables; the
# lexical and vector indexes themselves are derived tables the index creates on first use,
# because their form depends on the database (FTS5 and sqlite-vec, or tsvector and
# pgvector) and on the embedder's vector size: ``search_fts`` and ``search_vec_<id>``
# (see DERIVED_TABLE_PREFIXES). Everything hangs off ``search_sessions`` by ``sid`` with
# ON DELETE CASCADE, so deleting a session's ``search_sessions`` row removes every index
# row of the session, derived tables included (SQLite's virtual tables by a trigger).

search_sessions = Table(
    "search_sessions",
    metadata,
    Column("sid", BigId, primary_key=True, autoincrement=True),  # never reused
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("indexed_seq", BigInteger, nullable=False),  # every event up to it is indexed
    Column("doc_count", BigInteger, nullable=False),
    Column("term_count", BigInteger, nullable=False),  # distinct terms summed over documents
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("user_id", "session_id"),
    ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        ondelete="CASCADE",
    ),
    sqlite_autoincrement=True,
)

search_docs = Table(
    "search_docs",
    metadata,
    Column("doc_id", BigId, primary_key=True, autoincrement=True),  # rowid of derived rows
    Column("sid", BigInteger, nullable=False),
    Column("seq", BigInteger, nullable=False),
    UniqueConstraint("sid", "seq"),
    ForeignKeyConstraint(["sid"], ["search_sessions.sid"], ondelete="CASCADE"),
    sqlite_autoincrement=True,
)

search_terms = Table(
    "search_terms",
    metadata,
    Column("sid", BigInteger, nullable=False),
    Column("term", String(64), nullable=False),
    Column("df", BigInteger, nullable=False),  # documents of the session holding the term
    PrimaryKeyConstraint("sid", "term"),
    ForeignKeyConstraint(["sid"], ["search_sessions.sid"], ondelete="CASCADE"),
    sqlite_with_rowid=False,
)

search_embedders = Table(
    "search_embedders",
    metadata,
    Column("embedder_id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(256), nullable=False),
    Column("dimensions", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("name"),
)

search_dense = Table(
    "search_dense",
    metadata,
    Column("sid", BigInteger, nullable=False),
    Column("embedder_id", Integer, nullable=False),
    Column("embedded_seq", BigInteger, nullable=False),  # every document up to it has a vector
    Column("vector_count", BigInteger, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("sid", "embedder_id"),
    ForeignKeyConstraint(["sid"], ["search_sessions.sid"], ondelete="CASCADE"),
    ForeignKeyConstraint(["embedder_id"], ["search_embedders.embedder_id"], ondelete="CASCADE"),
)

search_codes = Table(
    "search_codes",
    metadata,
    Column("sid", BigInteger, nullable=False),
    Column("embedder_id", Integer, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("doc_id", BigInteger, nullable=False),
    Column("code", LargeBinary, nullable=False),  # the vector's sign bits: a fast first pass
    Column("quantized", LargeBinary, nullable=False),  # the vector as int8: the second pass
    PrimaryKeyConstraint("sid", "embedder_id", "seq"),
    ForeignKeyConstraint(["sid"], ["search_sessions.sid"], ondelete="CASCADE"),
    sqlite_with_rowid=False,
)

# Summaries (agentctx.compaction): derived text that stands for an exact range of a
# session's events, which stay in the log untouched. A summary is never updated: each
# new one is the next ``version``, and the unique version per (user, session, kind) is
# what lets two workers racing on the same summary write it once.

summaries = Table(
    "summaries",
    metadata,
    Column("summary_id", String(64), primary_key=True),
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("kind", String(16), nullable=False),  # thread | fold
    Column("version", Integer, nullable=False),  # 1, 2, … per (user, session, kind)
    # 0 for a summary of events; n + 1 for a summary of level-n summaries (recursive folds).
    Column("level", Integer, nullable=False, server_default=text("0")),
    # The exact covered seqs when they are not the whole of first_seq..last_seq (a fold
    # that keeps key events verbatim covers the ranges between them): [[a, b], …].
    Column("seq_ranges", JsonColumn, nullable=True),
    Column("text", Text, nullable=False),
    Column("first_seq", BigInteger, nullable=False),  # the covered range, inclusive
    Column("last_seq", BigInteger, nullable=False),
    Column("source_event_count", Integer, nullable=False),
    Column("token_count", Integer, nullable=False),
    Column("method", String(256), nullable=False),  # offline | llm:<model> | offline (…)
    Column("created_at", UTCDateTime, nullable=False),
    # Also the "latest per session and kind" index: its last entry is the newest version.
    UniqueConstraint("user_id", "session_id", "kind", "version"),
    ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        ondelete="CASCADE",
    ),
)

# Topic archiving (agentctx.compaction.topics): a topic stands for a contiguous run of a
# session's events. ``topic_events`` is the per-event link (an event with no row there is
# unarchived, ``topic_id IS NULL`` in a per-message design); its primary key means an
# event can be archived once only, so two archivers racing on the same events cannot
# both commit. Event rows themselves are never updated: their hash chain covers them.

topics = Table(
    "topics",
    metadata,
    Column("topic_id", String(64), primary_key=True),
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("title", String(256), nullable=False),
    Column("summary", Text, nullable=False),
    Column("keywords", JsonColumn, nullable=False),  # list of strings
    Column("message_count", Integer, nullable=False),
    Column("status", String(16), nullable=False),  # active | archived
    Column("first_seq", BigInteger, nullable=False),  # the covered range, inclusive
    Column("last_seq", BigInteger, nullable=False),
    Column("token_count", Integer, nullable=False),  # of the summary
    Column("source_tokens", Integer, nullable=False),  # of the events it stands for
    Column("method", String(256), nullable=False),  # offline | llm:<model> | offline (…)
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("user_id", "session_id", "first_seq"),
    ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        ondelete="CASCADE",
    ),
)

topic_events = Table(
    "topic_events",
    metadata,
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("topic_id", String(64), nullable=False),
    PrimaryKeyConstraint("user_id", "session_id", "seq"),
    ForeignKeyConstraint(["topic_id"], ["topics.topic_id"], ondelete="CASCADE"),
    Index(None, "topic_id"),
)

# What a user has told any agent about themselves (preferred name, occupation, …), each
# with where it was learned. The newest fact per (user, field) is the current value; older
# ones are kept as history. Written by topic archiving, read by long-term memory.

profile_facts = Table(
    "profile_facts",
    metadata,
    Column("fact_id", String(64), primary_key=True),
    Column("user_id", String(ID), nullable=False),
    Column("field", String(64), nullable=False),
    Column("value", Text, nullable=False),
    Column("session_id", String(ID), nullable=True),  # provenance: where it was said
    Column("topic_id", String(64), nullable=True),
    Column("first_seq", BigInteger, nullable=True),
    Column("last_seq", BigInteger, nullable=True),
    Column("method", String(256), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Index(None, "user_id", "field", "created_at"),
)

# The agent's inner voice: a short structured reflection written after an assistant
# message by a background job. It annotates that event and never enters a window or the
# user-visible history. One per event: the key makes a rerun of the job a no-op.

reflections = Table(
    "reflections",
    metadata,
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("event_id", String(64), nullable=False),
    Column("reflection", JsonColumn, nullable=False),
    Column("method", String(256), nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("user_id", "session_id", "seq"),
    ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        ondelete="CASCADE",
    ),
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
    ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        ondelete="CASCADE",
    ),
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
    ForeignKeyConstraint(
        ["user_id", "session_id"],
        ["sessions.user_id", "sessions.session_id"],
        ondelete="CASCADE",
    ),
)

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
    Column("action", String(16), nullable=False),  # create|merge|update|stale|delete|restore
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

# API keys of the server (agentctx.server.auth): the secret is stored as its sha256 only.
# Not user data: a key belongs to the operator who issued it, and ``users`` only names
# whom it may act for.
api_keys = Table(
    "api_keys",
    metadata,
    Column("key_id", String(32), primary_key=True),
    Column("secret_hash", String(64), nullable=False),
    Column("tenant", String(128), nullable=False),
    Column("users", JsonColumn, nullable=False),
    Column("scopes", JsonColumn, nullable=False),
    Column("label", String(256), nullable=True),
    Column("created_at", UTCDateTime, nullable=False),
    Column("revoked_at", UTCDateTime, nullable=True),
)

MEMORY_TABLES: tuple[Table, ...] = (
    memory_sources,
    memory_history,
    memory_runs,
    memory_settings,
    memories,
)
"""Tables of long-term memory, children first (``delete_user_data`` empties them)."""


DERIVED_TABLE_PREFIXES = ("search_fts", "search_vec_", "memory_fts", "memory_vec_")
"""Tables the retrieval index creates at run time (with SQLite's FTS5 and sqlite-vec
shadow tables, which share the prefix). They are not in :data:`metadata`; schema
comparisons skip them with :func:`include_name`."""


def include_name(name: str | None, type_: str, _parent_names: Any = None) -> bool:
    """Alembic ``include_name`` hook: everything but the retrieval index's derived tables."""
    if type_ == "table" and name is not None:
        return not name.startswith(DERIVED_TABLE_PREFIXES)
    return True


# Tables deleted by delete_user_data, children before parents. The audit log is kept on
# purpose: it holds ids and outcomes, never content, and is what proves the deletion.
# ``search_sessions`` takes the rest of the retrieval index with it (ON DELETE CASCADE).
USER_DATA_TABLES: tuple[Table, ...] = (
    hitl_flags,
    context_windows,
    reflections,
    profile_facts,
    topic_events,
    topics,
    summaries,
    search_sessions,
    blob_refs,
    jobs,
    turns,
    events,
    sessions,
)

ALL_TABLES = (
    agents,
    sessions,
    events,
    turns,
    jobs,
    blobs,
    blob_refs,
    audit,
    search_sessions,
    search_docs,
    search_terms,
    search_embedders,
    search_dense,
    search_codes,
    summaries,
    topics,
    topic_events,
    profile_facts,
    reflections,
    memories,
    memory_sources,
    memory_history,
    memory_runs,
    memory_settings,
    api_keys,
    hitl_flags,
    context_windows,
)
