"""The sweep deletes jobs that finished successfully longer ago than ``job_retention``
and keeps everything else. On SQLite and PostgreSQL."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from sqlalchemy import insert, select

from agentctx import ContextEngine
from agentctx.events import utcnow
from agentctx.storage.schema import jobs
from job_rows import job_row


def _statuses(engine: ContextEngine) -> list[tuple[str, str]]:
    with engine.db.read() as conn:
        rows = conn.execute(select(jobs.c.turn_id, jobs.c.status).order_by(jobs.c.turn_id))
        return [(row[0], row[1]) for row in rows]


def _seed(engine: ContextEngine) -> None:
    old, recent = timedelta(days=8), timedelta(days=6)
    with engine.db.write() as conn:
        conn.execute(
            insert(jobs),
            [
                job_row("a-old-done", status="done", age=old),
                job_row("b-old-done", status="done", age=old),
                job_row("c-recent-done", status="done", age=recent),
                job_row("d-old-failed", status="failed", age=old),
                job_row("e-old-pending", status="pending", age=old),
                job_row("f-old-running", status="running", age=old),
            ],
        )


def test_the_sweep_deletes_old_finished_jobs_only(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home) as engine:
        _seed(engine)
        report = engine.sweep()
        assert report.finished_jobs == 2
        assert _statuses(engine) == [
            ("c-recent-done", "done"),
            ("d-old-failed", "failed"),
            ("e-old-pending", "pending"),
            ("f-old-running", "running"),
        ]
        assert engine.sweep().finished_jobs == 0  # nothing more to trim


def test_without_retention_finished_jobs_stay(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, job_retention=None) as engine:
        _seed(engine)
        assert engine.sweep().finished_jobs == 0
        assert len(_statuses(engine)) == 6


def test_a_backlog_goes_in_batches_and_all_of_it(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home) as engine:
        with engine.db.write() as conn:
            conn.execute(
                insert(jobs),
                [job_row(f"t{i:02}", status="done", age=timedelta(days=30)) for i in range(25)],
            )
            conn.execute(insert(jobs), [job_row("z-fresh", age=timedelta(hours=1))])
        removed = engine.jobs.trim_finished(utcnow() - timedelta(days=7), batch=4)
        assert removed == 25
        assert _statuses(engine) == [("z-fresh", "done")]
