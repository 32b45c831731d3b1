"""Jobs of one session run one at a time (the compaction lock), on SQLite and PostgreSQL.

Several job queues, each on its own database connection pool as separate replicas
would be, work one table from threads: a session's jobs never overlap and run in the
order they were queued, different sessions do run at the same time, sessionless jobs
are not held back, and a worker that died holding a session releases it when its
lease expires. On PostgreSQL the instant where two workers claim two different jobs
of one session is forced and only one of them wins.
"""

from __future__ import annotations

import itertools
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import pgserver
import pytest
from sqlalchemy import Connection, RowMapping, select, text, update

from agentctx.events import utcnow
from agentctx.job_statements import session_lock_key
from agentctx.jobs import Job, JobQueue
from agentctx.storage import migrate
from agentctx.storage.database import Database
from agentctx.storage.schema import jobs
from conftest import new_pg_database

PROCS = Path(__file__).parent / "procs"


@pytest.fixture
def databases(db_url: str) -> Iterator[Callable[[], Database]]:
    """Open (and close at the end) independent ``Database`` objects on one migrated URL."""
    opened: list[Database] = []

    def open_db() -> Database:
        db = Database(db_url)
        if not opened:
            migrate.upgrade(db)
        opened.append(db)
        return db

    yield open_db
    for db in opened:
        db.dispose()


def enqueue(db: Database, queue: JobQueue, kind: str, session: str | None, **payload: Any) -> None:
    with db.write() as conn:
        queue.enqueue(
            conn,
            kind,
            user_id="u1" if session is not None else None,
            session_id=session,
            payload=payload,
        )


def rows(db: Database) -> list[RowMapping]:
    with db.read() as conn:
        return list(conn.execute(select(jobs).order_by(jobs.c.job_id)).mappings())


class Recorder:
    """Handler that records, per session, when each job ran and how many ran at once."""

    def __init__(self, hold: float = 0.03) -> None:
        self.hold = hold
        self.lock = threading.Lock()
        self.in_flight: dict[str | None, int] = {}
        self.most_at_once: dict[str | None, int] = {}
        self.runs: list[tuple[str | None, int, float, float]] = []  # session, job, start, end
        self.gates: dict[str, threading.Barrier] = {}

    def __call__(self, job: Job) -> None:
        with self.lock:
            now_running = self.in_flight.get(job.session_id, 0) + 1
            self.in_flight[job.session_id] = now_running
            self.most_at_once[job.session_id] = max(
                now_running, self.most_at_once.get(job.session_id, 0)
            )
        start = time.monotonic()
        gate = self.gates.get(str(job.payload.get("gate")))
        if gate is not None:
            # Passes only when every session's first job is running at the same time.
            gate.wait(timeout=20)
        time.sleep(self.hold)
        end = time.monotonic()
        with self.lock:
            self.in_flight[job.session_id] -= 1
            self.runs.append((job.session_id, job.job_id, start, end))


def work_until_done(queues: list[JobQueue], db: Database, total: int) -> None:
    """Run each queue in its own thread, one job per claim, until ``total`` jobs are done."""
    errors: list[BaseException] = []
    start = threading.Barrier(len(queues))

    def loop(queue: JobQueue) -> None:
        try:
            start.wait(timeout=20)
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if queue.run_pending(limit=1).done == 0:
                    if queue.counts().get("done", 0) >= total:
                        return
                    time.sleep(0.005)
            raise AssertionError("jobs did not finish")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=loop, args=(q,)) for q in queues]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(90)
    assert not errors, errors
    assert [r["status"] for r in rows(db)] == ["done"] * total


def test_jobs_of_a_session_never_overlap_while_sessions_run_concurrently(
    databases: Callable[[], Database],
) -> None:
    db = databases()
    queues = [JobQueue(databases()) for _ in range(4)]
    recorder = Recorder()
    for queue in queues:
        queue.register("compact", recorder)
    sessions = ["s1", "s2", "s3"]
    recorder.gates["first"] = threading.Barrier(len(sessions))
    for step in range(4):  # interleaved, as turns of several sessions end
        for session in sessions:
            enqueue(db, queues[0], "compact", session, gate="first" if step == 0 else None)
    enqueue(db, queues[0], "compact", None)
    enqueue(db, queues[0], "compact", None)

    work_until_done(queues, db, total=14)

    for session in sessions:
        assert recorder.most_at_once[session] == 1
        runs = sorted(
            (start, end, job_id) for s, job_id, start, end in recorder.runs if s == session
        )
        assert len(runs) == 4
        for (_, end, _), (next_start, _, _) in itertools.pairwise(runs):
            assert end <= next_start  # the next one started after this one ended
        # ... and in the order they were queued.
        assert [job_id for _, _, job_id in runs] == sorted(job_id for _, _, job_id in runs)
    # The first jobs of the three sessions met at the gate: they ran at the same time.
    assert not recorder.gates["first"].broken
    assert len([r for r in recorder.runs if r[0] is None]) == 2


def test_a_busy_session_holds_its_jobs_not_other_sessions_or_sessionless_jobs(
    databases: Callable[[], Database],
) -> None:
    db = databases()
    queue, other = JobQueue(db), JobQueue(databases())
    started, release = threading.Event(), threading.Event()
    seen: list[tuple[str | None, int]] = []

    def handler(job: Job) -> None:
        seen.append((job.session_id, job.job_id))
        if job.payload.get("slow"):
            started.set()
            assert release.wait(20)

    queue.register("compact", handler)
    other.register("compact", handler)
    enqueue(db, queue, "compact", "s1", slow=True)
    enqueue(db, queue, "compact", "s1")
    enqueue(db, queue, "compact", "s2")
    enqueue(db, queue, "compact", None)
    enqueue(db, queue, "compact", None)
    first, second, third, free1, free2 = (r["job_id"] for r in rows(db))

    worker = threading.Thread(target=lambda: queue.run_pending(limit=1))
    worker.start()
    try:
        assert started.wait(20)
        # s1 is busy: its second job waits; s2 and the sessionless jobs run.
        stats = other.run_pending()
        assert stats.done == 3
        assert sorted(job_id for _, job_id in seen[1:]) == [third, free1, free2]
        statuses = {r["job_id"]: r["status"] for r in rows(db)}
        assert (statuses[first], statuses[second]) == ("running", "pending")
    finally:
        release.set()
        worker.join(30)
    # Once the session is free its next job is claimed.
    assert other.run_pending().done == 1
    assert seen[-1] == ("s1", second)


def test_one_claim_takes_at_most_one_job_per_session(
    databases: Callable[[], Database],
) -> None:
    db = databases()
    queue = JobQueue(db)
    order: list[tuple[str | None, int]] = []
    queue.register("compact", lambda job: order.append((job.session_id, job.job_id)))
    for session in ("s1", "s1", "s2", None, "s1", None):
        enqueue(db, queue, "compact", session)
    ids = [r["job_id"] for r in rows(db)]

    claimed = queue._claim(20, None)
    # s1's first job, s2's job, both sessionless jobs; not s1's later jobs.
    assert [j.job_id for j in claimed] == [ids[0], ids[2], ids[3], ids[5]]
    for job in claimed:
        queue._finish(job, None)
    # run_pending keeps claiming, so one call still drains the session, in order.
    assert queue.run_pending().done == 2
    assert order == [("s1", ids[1]), ("s1", ids[4])]
    # A one-session run (inline mode) claims that session's jobs one at a time as well.
    enqueue(db, queue, "compact", "s3")
    enqueue(db, queue, "compact", "s3")
    enqueue(db, queue, "compact", "s4")
    s3_claim = queue._claim(20, ("u1", "s3"))
    assert [j.session_id for j in s3_claim] == ["s3"]
    assert queue._claim(20, ("u1", "s3")) == []  # busy with the first
    queue._finish(s3_claim[0], None)
    assert queue.run_pending(session=("u1", "s3")).done == 1
    assert [r["status"] for r in rows(db)][-3:] == ["done", "done", "pending"]


def test_claims_take_the_jobs_due_oldest_first_one_per_session(
    databases: Callable[[], Database],
) -> None:
    """SQLite claims with one UPDATE ... RETURNING, PostgreSQL selects and then updates
    (under its session locks): both take the same jobs, oldest first, one per session,
    and leave the same rows."""
    db = databases()
    queue = JobQueue(db)
    queue.register("compact", lambda job: None)
    for session in ("s1", "s1", "s2", None, "s3", "s3"):
        enqueue(db, queue, "compact", session, n=1)
    enqueue(db, queue, "unhandled", "s4")
    with db.write() as conn:
        queue.enqueue(conn, "compact", user_id="u1", session_id="s5", delay=timedelta(hours=1))
    ids = [r["job_id"] for r in rows(db)]
    claimed = queue._claim(20, None)
    # A worker that died holding s3's first job: its lease lapses, and the job is
    # claimed again with its attempts counted.
    make_due(db, ids[4], "lease_until")
    again = [(j.job_id - ids[0], j.attempts) for j in queue._claim(20, None)]
    one_session = queue._claim(20, ("u1", "s1"))  # s1 is busy with its first job
    queue._finish(claimed[0], None)
    after = [(j.job_id - ids[0], j.attempts) for j in queue._claim(20, ("u1", "s1"))]
    first = [(j.job_id - ids[0], j.kind, j.session_id, j.attempts, j.payload) for j in claimed]
    stored = [(r["status"], r["attempts"], r["worker"] is not None) for r in rows(db)]
    leased = all(r["lease_until"] is not None for r in rows(db) if r["status"] == "running")
    # s1's first job, s2's, the sessionless one and s3's first; not the unhandled kind,
    # not the job due in an hour, not s1's or s3's second.
    assert first == [
        (0, "compact", "s1", 1, {"n": 1}),
        (2, "compact", "s2", 1, {"n": 1}),
        (3, "compact", None, 1, {"n": 1}),
        (4, "compact", "s3", 1, {"n": 1}),
    ]
    assert again == [(4, 2)] and one_session == [] and after == [(1, 1)]
    assert stored == [
        ("done", 1, False),
        ("running", 1, True),
        ("running", 1, True),
        ("running", 1, True),
        ("running", 2, True),
        ("pending", 0, False),
        ("pending", 0, False),
        ("pending", 0, False),
    ]
    assert leased


def make_due(db: Database, job_id: int, column: str) -> None:
    with db.write() as conn:
        past = utcnow() - timedelta(seconds=1)
        conn.execute(update(jobs).where(jobs.c.job_id == job_id).values({column: past}))


def test_a_dead_worker_releases_its_session_when_the_lease_expires(
    databases: Callable[[], Database], db_url: str, tmp_path: Path
) -> None:
    db = databases()
    queue = JobQueue(db)
    ran: list[int] = []
    queue.register("turn_end:index", lambda job: ran.append(job.job_id))
    enqueue(db, queue, "turn_end:index", "s1")
    enqueue(db, queue, "turn_end:index", "s1")
    first, second = (r["job_id"] for r in rows(db))

    # A worker process claims the first job and is killed inside its handler.
    child = subprocess.Popen(
        [
            sys.executable,
            str(PROCS / "job_child.py"),
            "claim",
            db_url,
            str(tmp_path / "home"),
            *("u1", "s1", "index"),
        ],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline().split()
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGKILL)
        child.communicate(timeout=30)
    assert line == ["running", str(first), "1"]
    by_id = {r["job_id"]: r for r in rows(db)}
    assert (by_id[first]["status"], by_id[second]["status"]) == ("running", "pending")

    # The lease still holds: the session stays busy, its other job waits.
    assert queue.run_pending().done == 0
    assert ran == []

    make_due(db, first, "lease_until")
    assert queue.run_pending().done == 2
    assert ran == [first, second]  # the abandoned job first, then the one that waited
    assert [(r["status"], r["attempts"]) for r in rows(db)] == [("done", 2), ("done", 1)]


# PostgreSQL: the instant two workers claim two jobs of one session ---------------------


class PausingQueue(JobQueue):
    """A queue that stops inside its claim, after reading candidates, before the session lock."""

    def __init__(self, db: Database, pause: Callable[[], None]) -> None:
        super().__init__(db)
        self.pause = pause

    def _lock_sessions(  # type: ignore[override]
        self, conn: Connection, rows: list[RowMapping], now: datetime
    ) -> list[RowMapping]:
        self.pause()
        return JobQueue._lock_sessions(conn, rows, now)


@pytest.fixture
def pg_databases(pg_server: pgserver.PostgresServer) -> Iterator[Callable[[], Database]]:
    url = new_pg_database(pg_server)
    opened: list[Database] = []

    def open_db() -> Database:
        db = Database(url)
        if not opened:
            migrate.upgrade(db)
        opened.append(db)
        return db

    yield open_db
    for db in opened:
        db.dispose()


def two_kind_session(db: Database) -> tuple[int, int]:
    """Session s1 with a job of kind ``a`` and one of kind ``b`` (each worker handles one)."""
    enqueue(db, JobQueue(db), "a", "s1")
    enqueue(db, JobQueue(db), "b", "s1")
    first, second = (r["job_id"] for r in rows(db))
    return first, second


def test_pg_claim_seen_after_the_snapshot_is_caught_by_the_recheck(
    pg_databases: Callable[[], Database],
) -> None:
    db = pg_databases()
    job_a, job_b = two_kind_session(db)
    b_read, a_running, b_claimed = threading.Event(), threading.Event(), threading.Event()
    b_stats: list[int] = []

    def b_pause() -> None:
        b_read.set()  # b has read s1 as idle ...
        assert a_running.wait(20)  # ... and goes on only once a's claim has committed

    queue_a = PausingQueue(pg_databases(), lambda: b_read.wait(20) and None)
    queue_b = PausingQueue(pg_databases(), b_pause)

    def handle_a(job: Job) -> None:
        a_running.set()
        assert b_claimed.wait(20)  # a is still running while b claims

    queue_a.register("a", handle_a)
    queue_b.register("b", lambda job: None)

    def run_b() -> None:
        b_stats.append(queue_b.run_pending(limit=1).done)
        b_claimed.set()

    thread_b = threading.Thread(target=run_b)
    thread_b.start()
    assert queue_a.run_pending(limit=1).done == 1
    thread_b.join(30)
    # b's candidate query saw s1 idle, but under the session lock it saw a's claim.
    assert b_stats == [0]
    statuses = {r["job_id"]: r["status"] for r in rows(db)}
    assert (statuses[job_a], statuses[job_b]) == ("done", "pending")
    queue_b.pause = lambda: None
    assert queue_b.run_pending().done == 1


def race_two_claims(open_db: Callable[[], Database]) -> list[Job]:
    """Two workers (one per kind) both read session s1 as idle, then both go on at once."""
    both_read = threading.Barrier(2)
    queues = [PausingQueue(open_db(), lambda: both_read.wait(20) and None) for _ in range(2)]
    for queue, kind in zip(queues, "ab", strict=True):
        queue.register(kind, lambda job: None)
    results: list[list[Job]] = []
    threads = [
        threading.Thread(target=lambda q=q: results.append(q._claim(1, None))) for q in queues
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    return [job for batch in results for job in batch]


def test_pg_two_claims_of_one_session_in_the_same_instant_one_wins(
    pg_databases: Callable[[], Database],
) -> None:
    db = pg_databases()
    for _ in range(5):
        with db.write() as conn:
            conn.execute(jobs.delete())
        two_kind_session(db)
        claimed = race_two_claims(pg_databases)
        assert len(claimed) == 1, claimed
        running = [r for r in rows(db) if r["status"] == "running"]
        assert [r["job_id"] for r in running] == [claimed[0].job_id]


def test_pg_a_session_whose_lock_is_held_is_skipped_not_waited_for(
    pg_databases: Callable[[], Database],
) -> None:
    db = pg_databases()
    queue = JobQueue(db)
    queue.register("compact", lambda job: None)
    enqueue(db, queue, "compact", "s1")
    enqueue(db, queue, "compact", "s2")
    s1_job, s2_job = rows(db)
    holder = pg_databases()
    with holder.engine.connect() as conn, conn.begin():
        # Another claim of s1 is in progress: it holds s1's lock.
        key = session_lock_key(s1_job)
        assert conn.execute(text("SELECT pg_try_advisory_xact_lock(:k)"), {"k": key}).scalar()
        started = time.monotonic()
        claimed = queue._claim(20, None)
        assert time.monotonic() - started < 5
        assert [j.job_id for j in claimed] == [s2_job["job_id"]]
    # Released: s1 is claimed on the next round.
    assert [j.job_id for j in queue._claim(20, None)] == [s1_job["job_id"]]
