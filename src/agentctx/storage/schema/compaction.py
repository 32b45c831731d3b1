"""Compaction's tables (agentctx.compaction): summaries, topics and their events, what a
user said about themselves, and reflections."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKeyConstraint,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from agentctx.storage.schema.columns import (
    ID,
    JsonColumn,
    UTCDateTime,
    metadata,
    session_foreign_key,
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
    session_foreign_key(),
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
    session_foreign_key(),
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
    session_foreign_key(),
)
