"""Data control for one engine: deleting a session's or a user's data, the retention
sweep, and forgetting, in this process's memory, what another process deleted.

The engine's public calls (``delete_session``, ``delete_user_data``, ``forget_erased``,
``sweep``) come here. It holds the erasure feed (:mod:`agentctx.sessions.erasures`) and
the retention rules (:mod:`agentctx.sessions.retention`), and adds what a sweep trims
beyond the sessions: the erasure feed, finished jobs, and memories past their time to live.
"""

from __future__ import annotations

from collections.abc import Callable

from agentctx.config import Settings
from agentctx.events import utcnow
from agentctx.ids import check_id
from agentctx.jobs import JobQueue
from agentctx.memory import MemoryService
from agentctx.sessions.erasures import Erasure, Erasures, HeldCopies
from agentctx.sessions.models import DeleteReport, SweepReport
from agentctx.sessions.retention import Retention
from agentctx.sessions.service import SessionService
from agentctx.storage.scrub import scrub_erased


class DataControl:
    """Deletions and retention, with what this process holds of deleted data."""

    def __init__(
        self,
        settings: Settings,
        service: SessionService,
        *,
        held: HeldCopies,
        jobs: JobQueue,
        memory: MemoryService,
    ) -> None:
        """``held``: what this process keeps of users' data in memory, dropped when
        their data is deleted, whichever process sharing the database deleted it."""
        self._settings = settings
        self._db = service.db
        self._jobs = jobs
        self._memory = memory
        poll = settings.erasure_poll.total_seconds() if settings.erasure_poll is not None else None
        self.erasures = Erasures(service.db, held, retention=settings.erasure_retention, poll=poll)
        scrub: Callable[[bool], None] | None = (
            None if settings.erasure_scrub == "off" else self._scrub_erased
        )
        self.retention = Retention(
            service, self.erasures, audit_retention=settings.audit_retention, scrub=scrub
        )

    def delete_session(self, user_id: str, session_id: str) -> DeleteReport:
        """See ``ContextEngine.delete_session``."""
        return self.retention.delete(user_id, session_id)

    def delete_user_data(self, user_id: str) -> DeleteReport:
        """See ``ContextEngine.delete_user_data``: the user's long-term memories go in the
        same transaction."""
        check_id("user_id", user_id)
        memory = self._memory
        memory.ready()  # its index tables exist before the deletion's transaction
        return self.retention.delete_user_data(
            user_id, also=lambda conn: memory.purge_user(conn, user_id)
        )

    def forget_erased(self) -> list[Erasure]:
        """See ``ContextEngine.forget_erased``."""
        return self.erasures.catch_up()

    def sweep(self) -> SweepReport:
        """See ``ContextEngine.sweep``."""
        report = self.retention.sweep()
        now = utcnow()
        self.erasures.feed.trim(now)
        retention = self._settings.job_retention
        if retention is not None:
            trimmed = self._jobs.trim_finished(now - retention)
            report = report.model_copy(update={"finished_jobs": trimmed})
        expired = self._memory.purge_expired()
        if expired:
            extra = {**report.deleted.extra, "memories": expired}
            report = report.model_copy(
                update={"deleted": report.deleted.model_copy(update={"extra": extra})}
            )
        return report

    def collect_blobs(self) -> None:
        """Delete the blobs no event references any more."""
        self.retention.collect_blobs()

    def close(self) -> None:
        """Stop polling the erasure feed."""
        self.erasures.close()

    def _scrub_erased(self, user: bool) -> None:
        mode = self._settings.erasure_scrub
        scrub_erased(self._db, rewrite=mode == "rewrite" or (mode == "user" and user))
