"""A partial index of the jobs that can still run, by session.

0011 put the status into the session index of jobs, so that the question asked after
every append outside a turn (has the session a job pending or running?) no longer
walks the session's finished jobs. PostgreSQL 16 still did: it filters a list of
statuses on a later index column row by row (5 ms an append beside 50,000 finished
jobs). An index holding only the waiting jobs answers from a handful of entries on
both databases; the session index goes back to (user_id, session_id).

Revision ID: 0012
Revises: 0011
Create Date: 2026-11-24
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None

WAITING_JOBS = "status IN ('pending', 'running')"


def upgrade() -> None:
    op.create_index("ix_jobs_user_id_session_id", "jobs", ["user_id", "session_id"])
    op.drop_index("ix_jobs_user_id_session_id_status", table_name="jobs")
    op.create_index(
        "ix_jobs_waiting",
        "jobs",
        ["user_id", "session_id"],
        sqlite_where=sa.text(WAITING_JOBS),
        postgresql_where=sa.text(WAITING_JOBS),
    )


def downgrade() -> None:
    op.drop_index("ix_jobs_waiting", table_name="jobs")
    op.create_index(
        "ix_jobs_user_id_session_id_status", "jobs", ["user_id", "session_id", "status"]
    )
    op.drop_index("ix_jobs_user_id_session_id", table_name="jobs")
