"""Durable background work.

Follow-up work (turn-end compaction, summaries, memory extraction) is written to
the ``jobs`` table in the same transaction as the change that caused it, so a
crash can never lose it: after a restart, :meth:`JobQueue.run_pending` picks it
up. A job is claimed with a lease; a worker that dies mid-job leaves a lease
that expires, and the job is claimed again. Failures are retried with
exponential backoff up to ``max_attempts``, then marked ``failed`` with the
error kept. Handlers must therefore be idempotent.

On PostgreSQL, claims use ``FOR UPDATE SKIP LOCKED`` so any number of replicas
can work the same queue.

Jobs of one session run one at a time (the compaction lock). While a job of
(user_id, session_id) is ``running`` with an unexpired lease, no other job of that
session is claimed, by any worker in any process; those jobs stay ``pending`` and
are claimed after it finishes, lowest ``job_id`` first. A claim takes at most one
job per session, so two jobs of a session are never held at once, not even by one
worker. A worker that dies mid-job releases its session when its lease expires.
The guarantee assumes handlers finish within the lease (``job_lease``): a job that
outlives its lease is treated as abandoned, as before. Jobs without a session are
not affected and are claimed many at a time.

The check-and-claim is atomic: on SQLite every write transaction is exclusive, so
checking "is the session busy?" and marking the job ``running`` cannot interleave
with another claim (SQLite does both in one ``UPDATE … RETURNING``, as the erasures'
``INSERT … RETURNING`` needs SQLite 3.35 or later anyway; the statements are in
:mod:`agentctx.job_statements`). On PostgreSQL (READ COMMITTED)
two workers could each see the session idle and claim two different jobs of it in the
same instant, so a claim takes a transaction-scoped advisory lock per session
(``pg_try_advisory_xact_lock``) and checks again under it. Every claimer of the
session checks under the same lock, and the lock is released only when the
claiming transaction commits, so the re-check sees any claim made before it. The
lock is tried, never waited for: a worker that finds the session's lock taken
skips the session this round instead of queuing behind another claim. An advisory
lock was chosen over locking the ``sessions`` row (appends lock that row, and a
claim should neither wait for nor delay a write) and over a conditional
``UPDATE … WHERE NOT EXISTS`` (under READ COMMITTED two such updates of different
rows do not see each other and both succeed).

A job skipped because its session is busy is not lost: the worker holding the
session claims again when its job finishes, and sees it.

Shutdown (:meth:`JobQueue.close`, from ``ContextEngine.close``): from the moment it
begins no job starts, neither in the worker nor in ``run_pending``; jobs claimed but not
started go back to ``pending``. The job running, if any, has a bounded time to finish;
past it, it is abandoned to its lease: the row stays ``running`` under this worker's
name and, once the lease lapses, another engine claims it like any abandoned job. The
closed engine refuses the abandoned handler's later reads and writes (``EngineClosed``),
so it cannot write an event, nor queue work, after ``close`` returned.
"""

from __future__ import annotations

import logging
import os
import threading
import traceback
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import (
    Connection,
    RowMapping,
    delete,
    func,
    select,
    update,
)

from agentctx import job_statements as sql
from agentctx.errors import EngineClosed
from agentctx.events import utcnow
from agentctx.ids import new_id
from agentctx.priority import lower_this_thread
from agentctx.privacy.redactor import PassThroughRedactor, Redactor
from agentctx.storage import fastsql
from agentctx.storage.database import Database
from agentctx.storage.schema import jobs

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Job:
    """A claimed job, as handed to its handler."""

    job_id: int
    kind: str
    user_id: str | None
    session_id: str | None
    turn_id: str | None
    payload: dict[str, Any]
    attempts: int


JobHandler = Callable[[Job], None]


@dataclass(frozen=True, slots=True)
class JobRunStats:
    """What one :meth:`JobQueue.run_pending` call did."""

    done: int = 0
    retried: int = 0
    failed: int = 0


class JobQueue:
    """The durable job table and the handlers that run its jobs.

    A job is queued in the transaction that makes it due (durably, with that
    transaction). Its bookkeeping afterwards (the claim, the outcome, a release) is
    committed without a disk sync of its own (``Database.write(durable=False)``): on
    SQLite the agent's own writes would otherwise wait behind a sync per job. A power
    cut can undo such a commit (never corrupt it), which leaves the job to run again:
    pending again, or running until its lease lapses. That is what a process that dies
    inside a handler leaves too, so handlers are written to run more than once
    (at-least-once), and nothing new can happen.
    """

    def __init__(
        self,
        db: Database,
        *,
        max_attempts: int = 5,
        lease: timedelta = timedelta(minutes=5),
        redactor: Redactor | None = None,
    ) -> None:
        self._db = db
        # A failed job's error text (kept in ``last_error``) can quote the data it worked
        # on: it is stored redacted, like everything else.
        self._redactor: Redactor = redactor or PassThroughRedactor()
        self._max_attempts = max_attempts
        self._lease = lease
        self._handlers: dict[str, JobHandler] = {}
        # Claim statements per (handled kinds, one session or all): see sql.ClaimStatements.
        self._statements: dict[tuple[tuple[str, ...], bool], sql.ClaimStatements] = {}
        self._worker_name = f"{os.getpid()}-{new_id()[-12:]}"
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._closing = threading.Event()  # set once: no job starts after it
        self._thread: threading.Thread | None = None

    def register(self, kind: str, handler: JobHandler) -> None:
        """Run ``handler`` for jobs of ``kind``. Jobs of unknown kinds wait until registered."""
        self._handlers[kind] = handler

    @property
    def kinds(self) -> tuple[str, ...]:
        """The kinds that have a handler."""
        return tuple(self._handlers)

    def enqueue(
        self,
        conn: Connection,
        kind: str,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        turn_id: str | None = None,
        payload: dict[str, Any] | None = None,
        dedupe_key: str | None = None,
        delay: timedelta = timedelta(0),
    ) -> None:
        """Add a job inside the caller's transaction (so it commits with the change)."""
        now = utcnow()
        row = {
            "kind": kind,
            "user_id": user_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "payload": payload or {},
            "status": "pending",
            "attempts": 0,
            "max_attempts": self._max_attempts,
            "run_after": now + delay,
            "lease_until": None,
            "worker": None,
            "last_error": None,
            "dedupe_key": dedupe_key,
            "created_at": now,
            "updated_at": now,
        }
        # A job with this key queued already (by a retry, or by another writer first):
        # nothing to add. One statement; PostgreSQL waits for a concurrent writer of the
        # same key to finish and then skips, with no error to catch. Compiled once and
        # reading nothing back, so it may run in a pipelined append (Database.pipeline).
        deduped = dedupe_key is not None
        fastsql.statement(
            conn, ("enqueue_job", deduped), lambda: sql.enqueue_statement(conn, deduped), list(row)
        ).execute(conn, row).close()

    @staticmethod
    def session_has_jobs(conn: Connection, user_id: str, session_id: str) -> bool:
        """Whether the session has a job pending or running (claimable now or later), read
        in the caller's transaction with a statement built once."""
        return JobQueue.send_session_has_jobs(conn, user_id, session_id).result()

    @staticmethod
    def send_session_has_jobs(
        conn: Connection, user_id: str, session_id: str
    ) -> fastsql.Sent[bool]:
        """:meth:`session_has_jobs`, its answer read later."""
        found = fastsql.statement(conn, "session_has_jobs", lambda: sql.SESSION_HAS_JOBS)
        return found.send(conn, {"u": user_id, "s": session_id}).answer(bool)

    def _claim(self, limit: int, session: tuple[str, str] | None) -> list[Job]:
        if not self._handlers:
            return []  # jobs of kinds nobody handles wait for a handler
        now = utcnow()
        # Most turns queue nothing: look first with a read, so an empty queue never takes
        # the write lock (on SQLite that would serialize every caller); for one session,
        # first whether it has any waiting job at all (the partial index answers).
        key = (tuple(self._handlers), session is not None)
        statements = self._statements.get(key)
        if statements is None:
            statements = self._statements[key] = sql.ClaimStatements.build(*key)
        params: dict[str, Any] = {"now": now}
        if session is not None:
            params.update(u=session[0], s=session[1])
        with self._db.read() as conn:
            if session is not None and not self.session_has_jobs(conn, *session):
                return []
            if conn.execute(statements.check, params).first() is None:
                return []
        if self._db.dialect == "sqlite":
            return self._take(statements, params, limit, now)
        with self._db.write(durable=False) as conn:
            rows = list(conn.execute(statements.claim, {**params, "limit": limit}).mappings())
            if self._db.dialect == "postgresql":
                rows = self._lock_sessions(conn, rows, now)
            if not rows:
                return []
            conn.execute(
                update(jobs)
                .where(jobs.c.job_id.in_([row["job_id"] for row in rows]))
                .values(
                    status="running",
                    lease_until=now + self._lease,
                    worker=self._worker_name,
                    attempts=jobs.c.attempts + 1,
                    updated_at=now,
                )
            )
        return [_job(row, attempts=row["attempts"] + 1) for row in rows]

    def _take(
        self, statements: sql.ClaimStatements, params: dict[str, Any], limit: int, now: datetime
    ) -> list[Job]:
        """SQLite: claim the claimable jobs in one statement (see sql.ClaimStatements)."""
        values = {
            **params,
            "limit": limit,
            "claim_lease_until": now + self._lease,
            "claim_worker": self._worker_name,
        }
        with self._db.write(durable=False) as conn:
            rows = conn.execute(statements.take, values).mappings().all()
        # RETURNING gives rows in no promised order; jobs run oldest first.
        return sorted(
            (_job(row, attempts=row["attempts"]) for row in rows), key=lambda job: job.job_id
        )

    @staticmethod
    def _lock_sessions(conn: Connection, rows: list[RowMapping], now: datetime) -> list[RowMapping]:
        """PostgreSQL: keep the rows whose session lock this claim holds and that are still free.

        The first query ran on a snapshot that may predate another worker's claim of the
        same session. Under the session's advisory lock a new statement sees every claim
        of that session committed before, so the session is checked again here.
        """
        session_rows = [row for row in rows if row["session_id"] is not None]
        if not session_rows:
            return rows
        locked = [
            row
            for row in session_rows
            if conn.execute(
                select(func.pg_try_advisory_xact_lock(sql.session_lock_key(row)))
            ).scalar()
        ]
        still_free: set[int] = set()
        if locked:
            recheck = select(jobs.c.job_id).where(
                jobs.c.job_id.in_([row["job_id"] for row in locked]), ~sql.session_busy()
            )
            still_free = {job_id for (job_id,) in conn.execute(recheck, {"now": now})}
        return [row for row in rows if row["session_id"] is None or row["job_id"] in still_free]

    def _finish(self, job: Job, error: BaseException | None) -> str:
        now = utcnow()
        values: dict[str, Any] = {"updated_at": now, "lease_until": None, "worker": None}
        if error is None:
            values["status"] = "done"
            outcome = "done"
        else:
            message = "".join(traceback.format_exception_only(error)).strip()
            values["last_error"] = self._redactor.redact_text(message).value[:4000]
            log.warning("job %s (%s) failed: %s", job.job_id, job.kind, values["last_error"])
            if job.attempts >= self._max_attempts:
                values["status"] = "failed"
                outcome = "failed"
            else:
                values["status"] = "pending"
                values["run_after"] = now + timedelta(seconds=min(2**job.attempts, 300))
                outcome = "retried"
        with self._db.write(durable=False) as conn:
            if error is None:
                conn.execute(
                    sql.FINISH_DONE,
                    {
                        "finished_job": job.job_id,
                        "by_worker": self._worker_name,
                        "finished_at": now,
                    },
                )
            else:
                # Only the worker holding the lease may finish the job.
                conn.execute(
                    update(jobs)
                    .where(jobs.c.job_id == job.job_id, jobs.c.worker == self._worker_name)
                    .values(**values)
                )
        return outcome

    def run_pending(
        self, *, limit: int = 100, session: tuple[str, str] | None = None
    ) -> JobRunStats:
        """Claim and run due jobs (optionally only one session's, as (user_id, session_id)).

        Once :meth:`close` began no job starts: jobs claimed and not yet started go back
        to the queue, and the call returns.
        """
        done = retried = failed = 0
        while not self._closing.is_set():
            batch = self._claim(min(limit - done - retried - failed, 20), session)
            if not batch:
                break
            for index, job in enumerate(batch):
                if self._closing.is_set():
                    self._release(batch[index:])
                    break
                try:
                    self._handlers[job.kind](job)
                    error: BaseException | None = None
                except EngineClosed:
                    # Closed under the job: it stays claimed until its lease lapses, and
                    # another engine on the database runs it again then.
                    raise
                except Exception as exc:
                    error = exc  # logged, redacted, as it is recorded
                outcome = self._finish(job, error)
                done += outcome == "done"
                retried += outcome == "retried"
                failed += outcome == "failed"
            if done + retried + failed >= limit:
                break
        return JobRunStats(done, retried, failed)

    def _release(self, claimed: Sequence[Job]) -> None:
        """Put claimed jobs that never started back in the queue, as they were."""
        with self._db.write(durable=False) as conn:
            for job in claimed:
                conn.execute(
                    update(jobs)
                    .where(jobs.c.job_id == job.job_id, jobs.c.worker == self._worker_name)
                    .values(
                        status="pending",
                        lease_until=None,
                        worker=None,
                        attempts=job.attempts - 1,
                        updated_at=utcnow(),
                    )
                )

    def counts(self) -> dict[str, int]:
        """How many jobs are in each status."""
        with self._db.read() as conn:
            rows = conn.execute(select(jobs.c.status, func.count()).group_by(jobs.c.status))
            return {row[0]: int(row[1]) for row in rows}

    def trim_finished(self, before: datetime, *, batch: int = 10_000) -> int:
        """Delete the jobs that finished successfully before ``before``; how many went.

        Done jobs otherwise stay until their session is deleted (a long session's turns
        leave several each). Failed jobs stay: they are what an operator inspects and
        retries. Deleted in batches of ``batch``, each its own transaction, so a large
        backlog never holds the write lock for long.
        """
        finished = (
            select(jobs.c.job_id)
            .where(
                jobs.c.status == "done",
                jobs.c.run_after < before,  # done after it was due: narrows the index range
                jobs.c.updated_at < before,
            )
            .limit(batch)
        )
        removed = 0
        while True:
            with self._db.write() as conn:
                ids = list(conn.execute(finished).scalars())
                if ids:
                    conn.execute(delete(jobs).where(jobs.c.job_id.in_(ids)))
            removed += len(ids)
            if len(ids) < batch:
                return removed

    def next_due(self) -> datetime | None:
        """When the earliest pending job becomes due."""
        with self._db.read() as conn:
            return conn.execute(
                select(func.min(jobs.c.run_after)).where(jobs.c.status == "pending")
            ).scalar()

    # Background worker -----------------------------------------------------------------

    def notify(self) -> None:
        """Wake the background worker (called after a transaction enqueued work)."""
        self._wake.set()

    def start_worker(self, poll_interval: float = 1.0) -> None:
        """Run jobs in a daemon thread until :meth:`stop_worker`."""
        if self._thread is not None or self._closing.is_set():
            return
        self._stop.clear()

        def loop() -> None:
            lower_this_thread()  # summaries and extraction yield to the agent's thread
            while not self._stop.is_set():
                try:
                    self.run_pending()
                except EngineClosed:
                    return  # closed while a job ran: it is left to its lease
                except Exception:  # keep the worker alive; the error is in the log
                    log.exception("job worker iteration failed")
                self._wake.wait(poll_interval)
                self._wake.clear()

        self._thread = threading.Thread(target=loop, name="agentctx-jobs", daemon=True)
        self._thread.start()

    def stop_worker(self, timeout: float = 10.0) -> bool:
        """Stop the background worker, letting the current job finish within ``timeout``
        seconds; returns whether the worker ended in time."""
        if self._thread is None:
            return True
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)
        ended = not self._thread.is_alive()
        self._thread = None
        return ended

    def close(self, timeout: float = 10.0) -> bool:
        """Start no job from now on (in the worker or in :meth:`run_pending`), and wait up
        to ``timeout`` seconds for the worker's current job. Returns whether it ended; if
        not, the job is abandoned to its lease: its row stays ``running`` until the lease
        lapses, and then any engine on the database claims it again (handlers are
        idempotent). Writes it still makes through a closed engine raise
        ``EngineClosed``."""
        self._closing.set()
        ended = self.stop_worker(timeout)
        if not ended:
            log.warning(
                "a job was still running when the engine closed; it is left to its lease "
                "(%s) and runs again in the next engine to claim it",
                self._lease,
            )
        return ended


def _job(row: RowMapping, *, attempts: int) -> Job:
    """The job of a claimed row, ``attempts`` counting the claim."""
    return Job(
        job_id=row["job_id"],
        kind=row["kind"],
        user_id=row["user_id"],
        session_id=row["session_id"],
        turn_id=row["turn_id"],
        payload=row["payload"],
        attempts=attempts,
    )
