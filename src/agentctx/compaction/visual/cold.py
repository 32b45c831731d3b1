"""Cold-storage retention (seed 000, section 2.4): ``cleanup(retention_days=30)``.

An image's bytes are removed once it is older than the retention and no live window
needs them: every reference to it is compressed (a placeholder) or belongs to a session
that has expired, and no reference is newer than the retention. The ``blobs`` row
stays with ``expired_at`` set, so ``restore_image`` says the image expired rather than
that it never existed; the event log is untouched.

Crash and concurrency safety: the expiry is committed first, then the files are removed
in a second transaction that re-checks the flag, both under the exclusive blob gate. A
writer that references an expired blob meanwhile (the same screenshot again) clears
the flag and re-stores missing bytes under the shared gate, so a file is never removed
under a live reference; a crash between the two steps leaves expired rows whose files
the next cleanup removes.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import and_, exists, or_, select, update

from agentctx.events import utcnow
from agentctx.storage.blobs import BlobStore
from agentctx.storage.database import Database
from agentctx.storage.schema import blob_refs, blobs, sessions


@dataclass(frozen=True, slots=True)
class CleanupReport:
    """What a cold-storage cleanup did."""

    expired: int  # images whose bytes this run removed from cold storage
    bytes_freed: int
    files_removed: int  # including files left by an interrupted earlier run
    retention_days: int


def cleanup_cold_storage(
    db: Database, store: BlobStore, retention_days: int, *, now: datetime | None = None
) -> CleanupReport:
    """Expire the images older than ``retention_days`` that no live window needs."""
    now = now or utcnow()
    cutoff = now - timedelta(days=retention_days)
    recent_ref = exists().where(
        blob_refs.c.blob_id == blobs.c.blob_id, blob_refs.c.created_at >= cutoff
    )
    live_ref = exists().where(
        blob_refs.c.blob_id == blobs.c.blob_id,
        blob_refs.c.is_compressed.is_(False),
        sessions.c.user_id == blob_refs.c.user_id,
        sessions.c.session_id == blob_refs.c.session_id,
        or_(sessions.c.expires_at.is_(None), sessions.c.expires_at > now),
    )
    image_ref = exists().where(
        blob_refs.c.blob_id == blobs.c.blob_id, blob_refs.c.image_id.is_not(None)
    )
    due = and_(blobs.c.expired_at.is_(None), image_ref, ~recent_ref, ~live_ref)
    with db.write() as conn:
        db.blob_gate(conn, exclusive=True)
        rows = conn.execute(select(blobs.c.blob_id, blobs.c.size).where(due)).all()
        if rows:
            conn.execute(
                update(blobs)
                .where(blobs.c.blob_id.in_([row.blob_id for row in rows]))
                .values(expired_at=now)
            )
    removed = 0
    with db.write() as conn:
        db.blob_gate(conn, exclusive=True)
        # Every expired blob, not only this run's: an interrupted run may have left files.
        for blob_id in conn.execute(
            select(blobs.c.blob_id).where(blobs.c.expired_at.is_not(None))
        ).scalars():
            removed += store.delete(blob_id)
    return CleanupReport(
        expired=len(rows),
        bytes_freed=sum(row.size for row in rows),
        files_removed=removed,
        retention_days=retention_days,
    )
