"""The job index migrations (0011, 0012) go down and up again on SQLite and PostgreSQL,
each revision leaving the indexes it promises."""

from __future__ import annotations

from sqlalchemy import inspect

from agentctx.storage import migrate
from agentctx.storage.database import Database
from migration_moves import move

HEAD = ["ix_jobs_status_run_after", "ix_jobs_user_id_session_id", "ix_jobs_waiting"]


def _job_indexes(db: Database) -> list[str]:
    with db.engine.connect() as conn:
        names = [str(index["name"]) for index in inspect(conn).get_indexes("jobs")]
    return sorted(name for name in names if name.startswith("ix_"))


def test_job_indexes_down_and_up(db_url: str) -> None:
    db = Database(db_url)
    try:
        migrate.upgrade(db)
        assert _job_indexes(db) == HEAD
        move(db, "0011")
        assert _job_indexes(db) == ["ix_jobs_status_run_after", "ix_jobs_user_id_session_id_status"]
        move(db, "0010")
        assert _job_indexes(db) == ["ix_jobs_status_run_after", "ix_jobs_user_id_session_id"]
        move(db, "head")
        assert _job_indexes(db) == HEAD
        assert migrate.current_revision(db) == migrate.head_revision()
    finally:
        db.dispose()
