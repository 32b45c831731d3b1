"""Retention and data control: deleting sessions and users, the sweep, blob collection.

Deleting removes a session's events, turns, jobs, blob references, summaries and
retrieval index rows in one transaction, with the row that tells the other processes
on the database to forget them (:mod:`agentctx.sessions.erasures`); then the blobs no
other event references. A user's deletion takes their memories in that same
transaction: a crash leaves all of it or none. The audit log is kept: it holds ids and
outcomes, never content, and is what proves a deletion.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, delete, select

from agentctx.errors import SessionNotFound, TurnError
from agentctx.events import utcnow
from agentctx.retrieval.sync import read_state
from agentctx.retrieval.tables import purge_deleted
from agentctx.sessions.audit import AuditRecord
from agentctx.sessions.erasures import Erasure, Erasures
from agentctx.sessions.models import DeleteReport, SweepReport
from agentctx.sessions.service import SessionService
from agentctx.storage import repository as repo
from agentctx.storage.schema import audit, blob_refs, blobs, sessions, turns

AlsoDelete = Callable[[Connection], Mapping[str, int]]
"""More of a user's rows to delete in their deletion's transaction; counts by table."""


def _delete_report(
    conn: Any, user_id: str, session_ids: Sequence[str] | None, *, purge: bool = True
) -> DeleteReport:
    counts = repo.delete_session_rows(conn, user_id, session_ids)
    indexed = counts["search_sessions"]  # the rest of their index rows go by cascade
    if indexed and purge:
        purge_deleted(conn)  # and their terms leave the full-text index's pages now
    derived = {"search_sessions": indexed, "summaries": counts["summaries"]}
    return DeleteReport(
        sessions=counts["sessions"],
        events=counts["events"],
        turns=counts["turns"],
        jobs=counts["jobs"],
        blob_refs=counts["blob_refs"],
        extra={name: count for name, count in derived.items() if count},
    )


class Retention:
    """Deletes sessions and users' data, sweeps expired sessions, collects orphaned blobs."""

    def __init__(
        self,
        sessions: SessionService,
        erasures: Erasures,
        *,
        audit_retention: timedelta,
        scrub: Callable[[bool], object] | None = None,
    ) -> None:
        self._sessions = sessions
        self.erasures = erasures
        self.db = sessions.db
        self.audit = sessions.audit
        self.blobs = sessions.blobs
        self.audit_retention = audit_retention
        # Run once a deletion committed and its blobs went: purges what the deleted rows
        # left in the database's files (agentctx.storage.scrub); True for a user's erasure.
        self._scrub = scrub or (lambda user: None)

    def delete(self, user_id: str, session_id: str) -> DeleteReport:
        """Delete a session with its events, turns, jobs and unshared blobs; every
        process on the database then forgets what it holds of it."""
        record = AuditRecord(action="session_delete", user_id=user_id, session_id=session_id)
        with self.db.write() as conn:
            state = read_state(conn, user_id, session_id, None)  # None: no such session
            if state is not None:
                report = _delete_report(conn, user_id, [session_id])
                erasure = Erasure(user_id, session_id, state.sid)
                erasure_id = self.erasures.within(conn, erasure)
                record.meta = report.model_dump(exclude={"extra"})
                self.audit.write(record, conn)
        if state is None:
            self.audit.deny(record, SessionNotFound(session_id))
        self.audit.emit(record)
        self.erasures.committed(erasure_id, erasure)
        report = report + self.collect_blobs()
        self._scrub(False)
        return report

    def collect_blobs(self) -> DeleteReport:
        """Delete blobs no event references any more (rows, then bytes)."""
        orphaned = (
            ~select(blob_refs.c.blob_id).where(blob_refs.c.blob_id == blobs.c.blob_id).exists()
        )
        removed = 0
        with self.db.write() as conn:
            # Exclusive gate: no writer is between inserting a reference and committing it.
            self.db.blob_gate(conn, exclusive=True)
            ids = [row[0] for row in conn.execute(select(blobs.c.blob_id).where(orphaned))]
            if ids:
                conn.execute(delete(blobs).where(blobs.c.blob_id.in_(ids)))
                # Files go inside the transaction: a writer waiting on the gate re-stores
                # any file it needs once we commit.
                removed = sum(self.blobs.delete(blob_id) for blob_id in ids)
        return DeleteReport(blobs=removed)

    def sweep(
        self,
        *,
        now: datetime | None = None,
        turn_timeout: timedelta = timedelta(hours=1),
    ) -> SweepReport:
        """Delete expired sessions and orphaned blobs, close abandoned turns, trim the audit
        log; publish the deletions of engines that died before publishing them."""
        now = now or utcnow()
        started = time.perf_counter()
        self.erasures.feed.stamp_pending()
        with self.db.read() as conn:
            expired = [
                (row.user_id, row.session_id)
                for row in conn.execute(
                    select(sessions.c.user_id, sessions.c.session_id).where(
                        sessions.c.expires_at <= now
                    )
                )
            ]
        report = DeleteReport()
        for user_id, session_id in expired:
            with self.db.write() as conn:
                # Re-check under the write lock: a write may have renewed it meanwhile.
                if not repo.session_expired(conn, user_id, session_id, now):
                    continue
                state = read_state(conn, user_id, session_id, None)
                report = report + _delete_report(conn, user_id, [session_id], purge=False)
                erasure = Erasure(user_id, session_id, state.sid if state is not None else None)
                erasure_id = self.erasures.within(conn, erasure)
            self.erasures.committed(erasure_id, erasure)
        if report.extra.get("search_sessions"):
            with self.db.write() as conn:
                purge_deleted(conn)  # once for all expired sessions
        abandoned = self._close_abandoned_turns(now - turn_timeout)
        report = report + self.collect_blobs()
        if report.sessions:
            self._scrub(False)
        with self.db.write() as conn:
            trimmed = int(
                conn.execute(delete(audit).where(audit.c.ts < now - self.audit_retention)).rowcount
                or 0
            )
        result = SweepReport(
            expired_sessions=report.sessions,
            deleted=report,
            abandoned_turns=abandoned,
            audit_records=trimmed,
        )
        self.audit.record(
            AuditRecord(
                action="sweep",
                duration_ms=(time.perf_counter() - started) * 1000,
                meta={
                    "expired_sessions": report.sessions,
                    "events": report.events,
                    "blobs": report.blobs,
                    "abandoned_turns": abandoned,
                    "audit_records": trimmed,
                },
            )
        )
        return result

    def _close_abandoned_turns(self, started_before: datetime) -> int:
        with self.db.read() as conn:
            stale = list(
                conn.execute(
                    select(turns.c.user_id, turns.c.session_id, turns.c.turn_id).where(
                        turns.c.status == "open", turns.c.started_at < started_before
                    )
                )
            )
        closed = 0
        for user_id, session_id, turn_id in stale:
            try:
                self._sessions.end_turn(user_id, session_id, turn_id, "abandoned")
                closed += 1
            except TurnError:
                pass  # ended by its owner meanwhile
        return closed

    def delete_user_data(self, user_id: str, *, also: AlsoDelete | None = None) -> DeleteReport:
        """Remove every session, event, turn, job, blob reference (and unshared blob) of a
        user, and what ``also`` deletes in the same transaction (counted in ``extra``);
        every process on the database then forgets what it holds of the user."""
        started = time.perf_counter()
        erasure = Erasure(user_id)
        with self.db.write() as conn:
            report = _delete_report(conn, user_id, None)
            if also is not None:
                counts = {name: n for name, n in also(conn).items() if n}
                report = report.model_copy(update={"extra": {**report.extra, **counts}})
            erasure_id = self.erasures.within(conn, erasure)
        self.erasures.committed(erasure_id, erasure)
        report = report + self.collect_blobs()
        self._scrub(True)
        self.audit.record(
            AuditRecord(
                action="delete_user_data",
                user_id=user_id,
                duration_ms=(time.perf_counter() - started) * 1000,
                meta=report.model_dump(exclude={"extra"}),
            )
        )
        return report
