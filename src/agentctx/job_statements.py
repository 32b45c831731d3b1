"""The job queue's SQL: what a claim takes, how a job is queued and finished.

Every statement here is built once (per set of handled kinds, for claims) and then
only executed: building a Core statement costs more than running it, and a claim's
transaction holds SQLite's one writer, which the agent's next append waits for.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import (
    Connection,
    RowMapping,
    and_,
    bindparam,
    exists,
    func,
    insert,
    literal_column,
    or_,
    select,
    update,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from agentctx.storage.schema import jobs
from agentctx.storage.schema.log import WAITING_STATUSES


def enqueue_statement(conn: Connection, deduped: bool) -> Any:
    """The INSERT of a job; with ``deduped``, one that skips a job whose key is queued."""
    if not deduped:
        return insert(jobs)
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    return dialect_insert(jobs).on_conflict_do_nothing(index_elements=["dedupe_key"])


def waiting(table: Any) -> Any:
    """``table``'s jobs that can still run, stated as the partial index ``ix_jobs_waiting``
    states them (constants, not parameters), so that both databases read that index
    (only waiting jobs) rather than every job a session ever had. Redundant beside a
    condition on one status; it is there for the index."""
    return table.c.status.in_([literal_column(f"'{status}'") for status in WAITING_STATUSES])


SESSION_HAS_JOBS = (
    select(jobs.c.job_id)
    .where(
        jobs.c.user_id == bindparam("u"),
        jobs.c.session_id == bindparam("s"),
        waiting(jobs),
    )
    .limit(1)
)
"""Whether a session has a job that could be claimed now or later (a cheap first look)."""


def runnable(table: Any) -> Any:
    """Due pending jobs, and running jobs whose worker let the lease lapse (at ``:now``)."""
    return or_(
        and_(table.c.status == "pending", table.c.run_after <= bindparam("now")),
        and_(table.c.status == "running", table.c.lease_until < bindparam("now")),
    )


def session_busy(table: Any = jobs) -> Any:
    """``table``'s rows (``jobs`` or an alias of it) whose session has another job
    running under a live lease (at ``:now``)."""
    other = jobs.alias("busy")
    return exists().where(
        other.c.user_id == table.c.user_id,
        other.c.session_id == table.c.session_id,
        other.c.job_id != table.c.job_id,
        other.c.status == "running",
        waiting(other),
        other.c.lease_until >= bindparam("now"),
    )


def claimable(kinds: Sequence[str], session: bool, table: Any = jobs) -> Any:
    """The jobs a claim may take: runnable at ``:now``, of a handled kind, and at most one
    per session (rows of ``table``: ``jobs`` or an alias of it).

    A session's candidate is its lowest runnable ``job_id`` (so its jobs run in the
    order they were queued), and only while no other job of the session is running.
    With ``session``, only the jobs of the session ``:u``, ``:s``.
    """
    first = jobs.alias("first")
    first_per_session = (
        select(func.min(first.c.job_id))
        .where(
            runnable(first),
            waiting(first),
            first.c.kind.in_(kinds),
            first.c.session_id.is_not(None),
        )
        .group_by(first.c.user_id, first.c.session_id)
    )
    if session:
        first_per_session = first_per_session.where(
            first.c.user_id == bindparam("u"), first.c.session_id == bindparam("s")
        )
        return and_(
            runnable(table),
            waiting(table),
            table.c.user_id == bindparam("u"),
            table.c.session_id == bindparam("s"),
            table.c.job_id.in_(first_per_session),
            ~session_busy(table),
        )
    return and_(
        runnable(table),
        table.c.kind.in_(kinds),
        or_(
            table.c.session_id.is_(None),
            and_(table.c.job_id.in_(first_per_session), ~session_busy(table)),
        ),
    )


CLAIMED_COLUMNS = ("job_id", "kind", "user_id", "session_id", "turn_id", "payload", "attempts")


@dataclass(frozen=True, slots=True)
class ClaimStatements:
    """A claim's statements for one set of handled kinds, built once: building them
    cost more than running them (a claim follows every turn that queues a job)."""

    check: Any  # is there a claimable job? (a read, before taking the write lock)
    claim: Any  # the claimable jobs, oldest first, up to ``:limit``, locked
    take: Any  # SQLite: the same jobs marked running in one statement, returned

    @classmethod
    def build(cls, kinds: Sequence[str], session: bool) -> ClaimStatements:
        where = claimable(kinds, session)
        # SQLite holds one writer for the whole database, and the agent's next append
        # waits for the claim's transaction. Between its statements a background thread
        # waits for the interpreter lock while the agent's thread runs Python, so one
        # statement (UPDATE ... RETURNING, SQLite 3.35+) holds the writer for less time
        # than a SELECT, then an UPDATE built from its rows.
        candidate = jobs.alias("candidate")
        chosen = (
            select(candidate.c.job_id)
            .where(claimable(kinds, session, candidate))
            .order_by(candidate.c.job_id)
            .limit(bindparam("limit"))
        )
        return cls(
            check=select(jobs.c.job_id).where(where).limit(1),
            claim=select(jobs)
            .where(where)
            .order_by(jobs.c.job_id)
            .limit(bindparam("limit"))
            .with_for_update(skip_locked=True),
            take=update(jobs)
            .where(jobs.c.job_id.in_(chosen))
            .values(
                status="running",
                lease_until=bindparam("claim_lease_until", type_=jobs.c.lease_until.type),
                worker=bindparam("claim_worker"),
                attempts=jobs.c.attempts + 1,
                updated_at=bindparam("now", type_=jobs.c.updated_at.type),
            )
            .returning(*(jobs.c[name] for name in CLAIMED_COLUMNS)),
        )


# A job finished as it should: one statement built once (its transaction holds SQLite's
# writer; see ClaimStatements). Only the worker holding the lease may finish the job.
FINISH_DONE = (
    update(jobs)
    .where(jobs.c.job_id == bindparam("finished_job"), jobs.c.worker == bindparam("by_worker"))
    .values(
        status="done",
        lease_until=None,
        worker=None,
        updated_at=bindparam("finished_at", type_=jobs.c.updated_at.type),
    )
)


def session_lock_key(row: RowMapping) -> int:
    """A stable signed 64-bit advisory lock key for a job's session."""
    name = f"agentctx-job-session\0{row['user_id']}\0{row['session_id']}".encode()
    return int.from_bytes(hashlib.blake2b(name, digest_size=8).digest(), "big", signed=True)
