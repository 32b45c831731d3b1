"""PostgreSQL: the events' unique event ids indexed event id first.

The unique constraint on (user_id, session_id, event_id) gave PostgreSQL a second index
led by a session's key beside the primary key (user_id, session_id, seq). For a session
the planner estimates at one row (a session newer than the table's statistics) both
look alike, and it took the event id index as often as not for reads by seq: every
event of the session read per seq asked. Led by the event id, the index still serves
lookups by event id and no longer matches a session's reads. SQLite keeps its
constraint: its planner prefers the primary key, and the constraint is part of its
table.

The new index is built before the old constraint is dropped, in the migration's
transaction: the build reads the whole events table, and appends wait for it. On a
large table, upgrade at a quiet moment.

Revision ID: 0019
Revises: 0018
Create Date: 2026-11-30
"""

from __future__ import annotations

from alembic import op

revision = "0019"
down_revision = "0018"
branch_labels = None
depends_on = None

_CONSTRAINT = "uq_events_user_id_session_id_event_id"
_INDEX = "uq_events_event_id"


def upgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.create_index(_INDEX, "events", ["event_id", "user_id", "session_id"], unique=True)
        op.drop_constraint(_CONSTRAINT, "events", type_="unique")


def downgrade() -> None:
    if op.get_bind().dialect.name == "postgresql":
        op.create_unique_constraint(_CONSTRAINT, "events", ["user_id", "session_id", "event_id"])
        op.drop_index(_INDEX, table_name="events")
