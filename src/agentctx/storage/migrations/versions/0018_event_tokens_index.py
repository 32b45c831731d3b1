"""A covering index of the events' token estimates, on SQLite only.

A window's search reads the token estimate of every event it ranks (hundreds per
window). On SQLite the estimate is stored after an event's parts and payload, so reading
it from the table walks each row's overflow pages; the index holds it next to the key.
PostgreSQL stores large values apart from the row and gets no index.

Revision ID: 0018
Revises: 0017
Create Date: 2026-11-28
"""

from __future__ import annotations

from alembic import op

revision = "0018"
down_revision = "0017"
branch_labels = None
depends_on = None

_COLUMNS = ["user_id", "session_id", "seq", "token_estimate"]


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.create_index("ix_events_tokens", "events", _COLUMNS)


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        op.drop_index("ix_events_tokens", table_name="events")
