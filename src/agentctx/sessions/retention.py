"""Retention and data control: deleting sessions and users, the sweep, blob collection.

Deleting removes a session's events, turns, jobs, blob references, summaries and
retrieval index rows in one transaction, then the blobs no other event references.
The audit log is kept: it holds ids and outcomes, never content, and is what proves a
deletion.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import delete, select

from agentctx.errors import SessionNotFound, TurnError
from agentctx.events import utcnow
from agentctx.retrieval.sync import read_state
from agentctx.retrieval.tables import purge_deleted
from agentctx.sessions.audit import AuditRecord
from agentctx.sessions.models import DeleteReport, SweepReport
from agentctx.sessions.service import SessionService
from agentctx.storage import repository as repo
from agentctx.storage.schema import audit, blob_refs, blobs, sessions, turns

OnDeleted = Callable[[str, str, int | None], None]
"""Told of each session deleted: (user_id, session_id, its number in the search index)."""


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

    def __init__(self, sessions: SessionService, *, audit_retention: timedelta) -> None:
        self._sessions = sessions
        self.db = sessions.db
        self.audit = sessions.audit
        self.blobs = sessions.blobs
        self.audit_retention = audit_retention

    def delete(
        self, user_id: str, session_id: str, *, on_deleted: OnDeleted | None = None
    ) -> DeleteReport:
        """Delete a session with its events, turns, jobs and unshared blobs.

        ``on_deleted(user_id, session_id, search_sid)`` is called once the deletion
        committed, with the session's number in the search index (None if never indexed).
        """
        record = AuditRecord(action="session_delete", user_id=user_id, session_id=session_id)
        with self.db.write() as conn:
            state = read_state(conn, user_id, session_id, None)  # None: no such session
            report = _delete_report(conn, user_id, [session_id]) if state is not None else None
            if report is not None:
                record.meta = report.model_dump(exclude={"extra"})
                self.audit.write(record, conn)
        if state is None or report is None:
            self.audit.deny(record, SessionNotFound(session_id))
        self.audit.emit(record)
        if on_deleted is not None:
            on_deleted(user_id, session_id, state.sid)
        return report + self.collect_blobs()

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
        on_deleted: OnDeleted | None = None,
    ) -> SweepReport:
        """Delete expired sessions and orphaned blobs, close abandoned turns, trim the audit
        log. ``on_deleted`` is called for each session deleted, as by :meth:`delete`."""
        now = now or utcnow()
        started = time.perf_counter()
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
            if on_deleted is not None and state is not None:
                on_deleted(user_id, session_id, state.sid)
        if report.extra.get("search_sessions"):
            with self.db.write() as conn:
                purge_deleted(conn)  # once for all expired sessions
        abandoned = self._close_abandoned_turns(now - turn_timeout)
        report = report + self.collect_blobs()
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

    def delete_user_data(self, user_id: str) -> DeleteReport:
        """Remove every session, event, turn, job, blob reference (and unshared blob) of a user."""
        started = time.perf_counter()
        with self.db.write() as conn:
            report = _delete_report(conn, user_id, None)
        report = report + self.collect_blobs()
        self.audit.record(
            AuditRecord(
                action="delete_user_data",
                user_id=user_id,
                duration_ms=(time.perf_counter() - started) * 1000,
                meta=report.model_dump(exclude={"extra"}),
            )
        )
        return report
