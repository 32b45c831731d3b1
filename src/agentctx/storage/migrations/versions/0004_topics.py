"""Topic archiving, user profile facts, reflections, and summary levels.

* ``topics`` and ``topic_events``: topics standing for contiguous runs of a session's
  events, and the per-event link (one topic per event at most).
* ``profile_facts``: what users said about themselves, with provenance.
* ``reflections``: the agent's inner voice, one per assistant event.
* ``summaries.level``: 0 for summaries of events, n + 1 for summaries of summaries;
  ``summaries.seq_ranges``: the exact covered seqs when they are not one range.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.storage.schema import JsonColumn, UTCDateTime

revision = "0004"
down_revision = "0003"
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
    with op.batch_alter_table("summaries") as batch:
        batch.add_column(
            sa.Column("level", sa.Integer, nullable=False, server_default=sa.text("0"))
        )
        batch.add_column(sa.Column("seq_ranges", JsonColumn, nullable=True))
    op.create_table(
        "topics",
        sa.Column("topic_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("title", sa.String(256), nullable=False),
        sa.Column("summary", sa.Text, nullable=False),
        sa.Column("keywords", JsonColumn, nullable=False),
        sa.Column("message_count", sa.Integer, nullable=False),
        sa.Column("status", sa.String(16), nullable=False),
        sa.Column("first_seq", sa.BigInteger, nullable=False),
        sa.Column("last_seq", sa.BigInteger, nullable=False),
        sa.Column("token_count", sa.Integer, nullable=False),
        sa.Column("source_tokens", sa.Integer, nullable=False),
        sa.Column("method", sa.String(256), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("topic_id", name="pk_topics"),
        sa.UniqueConstraint(
            "user_id", "session_id", "first_seq", name="uq_topics_user_id_session_id_first_seq"
        ),
        _session_fk("topics"),
    )
    op.create_table(
        "topic_events",
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("topic_id", sa.String(64), nullable=False),
        sa.PrimaryKeyConstraint("user_id", "session_id", "seq", name="pk_topic_events"),
        sa.ForeignKeyConstraint(
            ["topic_id"],
            ["topics.topic_id"],
            name="fk_topic_events_topic_id_topics",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_topic_events_topic_id", "topic_events", ["topic_id"])
    op.create_table(
        "profile_facts",
        sa.Column("fact_id", sa.String(64), nullable=False),
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("field", sa.String(64), nullable=False),
        sa.Column("value", sa.Text, nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=True),
        sa.Column("topic_id", sa.String(64), nullable=True),
        sa.Column("first_seq", sa.BigInteger, nullable=True),
        sa.Column("last_seq", sa.BigInteger, nullable=True),
        sa.Column("method", sa.String(256), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("fact_id", name="pk_profile_facts"),
    )
    op.create_index(
        "ix_profile_facts_user_id_field_created_at",
        "profile_facts",
        ["user_id", "field", "created_at"],
    )
    op.create_table(
        "reflections",
        sa.Column("user_id", sa.String(ID), nullable=False),
        sa.Column("session_id", sa.String(ID), nullable=False),
        sa.Column("seq", sa.BigInteger, nullable=False),
        sa.Column("event_id", sa.String(64), nullable=False),
        sa.Column("reflection", JsonColumn, nullable=False),
        sa.Column("method", sa.String(256), nullable=False),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.PrimaryKeyConstraint("user_id", "session_id", "seq", name="pk_reflections"),
        _session_fk("reflections"),
    )


def downgrade() -> None:
    op.drop_table("reflections")
    op.drop_index("ix_profile_facts_user_id_field_created_at", table_name="profile_facts")
    op.drop_table("profile_facts")
    op.drop_index("ix_topic_events_topic_id", table_name="topic_events")
    op.drop_table("topic_events")
    op.drop_table("topics")
    with op.batch_alter_table("summaries") as batch:
        batch.drop_column("seq_ranges")
        batch.drop_column("level")
