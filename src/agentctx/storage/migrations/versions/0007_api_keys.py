"""API keys of the server: stored hashed, scoped to users and a tenant.

Revision ID: 0007
Revises: 0006
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.storage.schema import JsonColumn, UTCDateTime

revision = "0007"
down_revision = "0006"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "api_keys",
        sa.Column("key_id", sa.String(32), nullable=False),
        sa.Column("secret_hash", sa.String(64), nullable=False),
        sa.Column("tenant", sa.String(128), nullable=False),
        sa.Column("users", JsonColumn, nullable=False),
        sa.Column("scopes", JsonColumn, nullable=False),
        sa.Column("label", sa.String(256), nullable=True),
        sa.Column("created_at", UTCDateTime, nullable=False),
        sa.Column("revoked_at", UTCDateTime, nullable=True),
        sa.PrimaryKeyConstraint("key_id", name="pk_api_keys"),
    )


def downgrade() -> None:
    op.drop_table("api_keys")
