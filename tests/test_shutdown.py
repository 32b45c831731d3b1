"""Closing an engine while a background job runs: no job starts once ``close`` began, the
running job is abandoned to its lease, nothing writes through the closed engine, and a
new engine on the database runs the abandoned job once its lease lapsed."""

from __future__ import annotations

import threading
import time
from datetime import timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from agentctx import ContextEngine, EngineClosed
from agentctx.jobs import Job
from agentctx.storage.schema import jobs

# Long enough that the steps between the claim and the second engine's first look (two
# engines started, a close, a released job) finish within it on a loaded machine.
LEASE = timedelta(seconds=6)
SLOW = "turn_end:slow"


class SlowJob:
    """A turn-end handler that blocks until released, then writes an event (whose turn
    queues another job of the same kind)."""

    def __init__(self, engine: ContextEngine) -> None:
        self.engine = engine
        self.started: list[int] = []
        self.running = threading.Event()
        self.release = threading.Event()
        self.failure: BaseException | None = None
        self.finished = threading.Event()

    def __call__(self, job: Job) -> None:
        self.started.append(job.job_id)
        self.running.set()
        self.release.wait(30)
        try:
            assert job.user_id is not None and job.session_id is not None
            session = self.engine.get_session(job.session_id, user_id=job.user_id)
            session.add_message("assistant", "written by the job")
        except BaseException as exc:
            self.failure = exc
            raise
        finally:
            self.finished.set()


def job_rows(engine: ContextEngine, kind: str) -> list[tuple[int, str, str | None]]:
    with engine.db.read() as conn:
        rows = conn.execute(
            select(jobs.c.job_id, jobs.c.status, jobs.c.worker)
            .where(jobs.c.kind == kind)
            .order_by(jobs.c.job_id)
        )
        return [(row.job_id, row.status, row.worker) for row in rows]


def test_close_abandons_a_running_job_and_refuses_later_writes(
    db_url: str, home: Path, tmp_path: Path
) -> None:
    engine = ContextEngine(
        url=db_url, home=home, jobs="background", job_lease=LEASE, erasure_poll=None
    )
    slow = SlowJob(engine)
    engine.on_turn_end("slow", slow)
    session = engine.create_session("u1")
    memory = engine.memory
    session.add_message("user", "hello")  # ends a turn: the job is queued and started
    assert slow.running.wait(10)
    claimed_at = time.monotonic()  # just after the claim: the lease ends before +LEASE
    [(job_id, status, worker)] = job_rows(engine, SLOW)
    assert status == "running" and worker is not None

    started = time.monotonic()
    engine.close(timeout=0.3)
    assert time.monotonic() - started < 5  # bounded: the job did not finish
    slow.release.set()  # the abandoned job wakes and tries to write through the engine
    assert slow.finished.wait(10)
    assert isinstance(slow.failure, EngineClosed)
    assert slow.failure.code == "engine_closed"
    time.sleep(0.5)  # a worker still alive would have started the next job by now
    assert slow.started == [job_id]

    # Nothing reads or writes through the closed engine: no pool reopens behind it.
    with pytest.raises(EngineClosed):
        session.add_message("user", "after close")
    with pytest.raises(EngineClosed):
        memory.add("u1", "the user likes trains")
    with pytest.raises(EngineClosed):
        engine.create_session("u1")
    assert engine.jobs.run_pending().done == 0  # no job starts
    assert slow.started == [job_id]
    engine.close()  # a second close is harmless

    # A new engine on the database: the job is still claimed by the closed one (its
    # lease holds), and is claimed again, and runs, once the lease lapsed.
    with ContextEngine(
        url=db_url, home=tmp_path / "next", jobs="manual", job_lease=LEASE, erasure_poll=None
    ) as after:
        ran: list[int] = []
        after.on_turn_end("slow", lambda job: ran.append(job.job_id))
        assert job_rows(after, SLOW) == [(job_id, "running", worker)]
        after.jobs.run_pending()
        assert ran == []
        assert len(list(after.get_session(session.id, user_id="u1").events())) == 1
        assert time.monotonic() - claimed_at < LEASE.total_seconds()  # it did hold
        time.sleep(max(0.0, claimed_at + LEASE.total_seconds() + 0.2 - time.monotonic()))
        after.jobs.run_pending()
        assert ran == [job_id]
        assert job_rows(after, SLOW) == [(job_id, "done", None)]


def test_jobs_claimed_but_not_started_go_back_to_the_queue(db_url: str, home: Path) -> None:
    """Several jobs claimed in one batch: close stops the batch after the running one and
    releases the rest as they were (not left to their lease)."""
    with ContextEngine(url=db_url, home=home, jobs="manual", erasure_poll=None) as engine:
        ran: list[int] = []
        for i in range(3):
            with engine.db.write() as conn:
                engine.jobs.enqueue(conn, "batch", payload={"i": i})

        def handler(job: Job) -> None:
            ran.append(job.job_id)
            engine.jobs._closing.set()  # close begins while the first job runs

        engine.jobs.register("batch", handler)
        assert engine.jobs.run_pending().done == 1
        rows = job_rows(engine, "batch")
        assert [status for _, status, _ in rows] == ["done", "pending", "pending"]
        with engine.db.read() as conn:
            attempts = list(conn.execute(select(jobs.c.attempts).order_by(jobs.c.job_id)).scalars())
        assert attempts == [1, 0, 0]
        assert ran == [rows[0][0]]
