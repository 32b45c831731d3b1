"""Erasure rows written in the deleting transaction, stamped once it committed: the
stamp may be null meanwhile.

Revision ID: 0013
Revises: 0012
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.events import utcnow
from agentctx.storage.schema import UTCDateTime

revision = "0013"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("erasures") as batch:
        batch.alter_column("erased_at", existing_type=UTCDateTime, nullable=True)


def downgrade() -> None:
    # Rows left unstamped by a process that died are stamped now: they name committed
    # deletions, and the older schema has no way to hold them otherwise.
    rows = sa.table("erasures", sa.column("erased_at", UTCDateTime))
    op.execute(rows.update().where(rows.c.erased_at.is_(None)).values(erased_at=utcnow()))
    with op.batch_alter_table("erasures") as batch:
        batch.alter_column("erased_at", existing_type=UTCDateTime, nullable=False)
