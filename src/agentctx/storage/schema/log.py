"""The event log's tables: agents, sessions, their events and turns, background jobs,
blobs and their references, the audit log, the erasure feed, and the server's API keys."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Float,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    false,
    text,
)

from agentctx.storage.schema.columns import (
    ID,
    BigId,
    JsonColumn,
    UTCDateTime,
    metadata,
    only_on,
    session_foreign_key,
)

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
    # The running total of the events' history weights (agentctx.tokens.weight).
    Column("weight_total", BigInteger, nullable=False, default=0, server_default=text("0")),
    Column("config", JsonColumn, nullable=False),
    Column("meta", JsonColumn, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("last_accessed_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=True),
    # The session's own TTL (create_session(ttl=…)); null: the engine's session_ttl.
    Column("ttl_ms", BigInteger, nullable=True),
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
    session_foreign_key(),
    # An event id is unique in its session. On PostgreSQL the index leads with the event
    # id (migration 0019): led by the session's key, it matched every read of a session
    # as well as the primary key does, and for a session the planner estimates at one
    # row (one newer than the table's statistics) it was as likely to be taken, then
    # read whole for a seq the primary key finds directly.
    only_on("sqlite", UniqueConstraint("user_id", "session_id", "event_id")),
    only_on(
        "postgresql", Index("uq_events_event_id", "event_id", "user_id", "session_id", unique=True)
    ),
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
    # A session's own system events (its instructions), read by every window: few, so
    # the partial index is small, and a window never scans the log for them.
    Index(
        "ix_events_system",
        "user_id",
        "session_id",
        "seq",
        sqlite_where=text("type = 'system'"),
        postgresql_where=text("type = 'system'"),
    ),
    # A search reads the token estimates of hundreds of ranked events per window. SQLite
    # keeps a row's columns in order, and the estimate comes after an event's parts and
    # payload (kilobytes of tool output, in overflow pages), so reading it from the table
    # reads every row whole; this narrow index answers it alone (migration 0018).
    # PostgreSQL keeps large values apart from the row and needs no such index.
    only_on("sqlite", Index("ix_events_tokens", "user_id", "session_id", "seq", "token_estimate")),
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
    session_foreign_key(),
    sqlite_with_rowid=False,
)

WAITING_STATUSES = ("pending", "running")
WAITING_JOBS = "status IN ({})".format(", ".join(f"'{s}'" for s in WAITING_STATUSES))
"""The jobs that can still run: the predicate of the partial index ``ix_jobs_waiting``."""

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
    # A session's waiting jobs, asked after every append outside a turn: a partial index
    # holds only those, however many finished jobs the session keeps.
    Index(
        "ix_jobs_waiting",
        "user_id",
        "session_id",
        sqlite_where=text(WAITING_JOBS),
        postgresql_where=text(WAITING_JOBS),
    ),
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
    session_foreign_key(),
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

# One row per delete_user_data or delete_session, written in the deleting transaction: the
# feed from which every other process sharing the database learns to drop what it holds of
# that user or session in memory (agentctx.sessions.erasures). Kept for a while, then
# trimmed by the sweep.
erasures = Table(
    "erasures",
    metadata,
    Column("erasure_id", BigId, primary_key=True, autoincrement=True),
    Column("user_id", String(ID), nullable=False),
    # None until the deletion committed (agentctx.sessions.erasures): unread till then.
    Column("erased_at", UTCDateTime, nullable=True),
    Column("session_id", String(ID), nullable=True),  # None: all the user's data
    # The session's number in the search index, which keys the cached vectors.
    Column("search_sid", BigInteger, nullable=True),
    Index(None, "erased_at"),
    sqlite_autoincrement=True,
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
