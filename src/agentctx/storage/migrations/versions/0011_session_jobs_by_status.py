"""A session's jobs indexed by status too.

After every append outside a turn the writer asks whether the session has a job
pending or running. With the index on (user_id, session_id) alone that read walked
every job the session ever had, done ones included (they stay until the session is
deleted): 8 ms an append for a session with 50,000 finished jobs. With the status in
the index it reads only the jobs still waiting.

Revision ID: 0011
Revises: 0010
Create Date: 2026-11-24
"""

from __future__ import annotations

from alembic import op

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index(
        "ix_jobs_user_id_session_id_status", "jobs", ["user_id", "session_id", "status"]
    )
    op.drop_index("ix_jobs_user_id_session_id", table_name="jobs")


def downgrade() -> None:
    op.create_index("ix_jobs_user_id_session_id", "jobs", ["user_id", "session_id"])
    op.drop_index("ix_jobs_user_id_session_id_status", table_name="jobs")
