"""Reading what events reference in the blob store: offloaded content, images by id, a
session's latest image (the baseline of screenshot dedup).

A blob is read only for a user one of whose events references it; any other id, and an
image whose bytes have expired, is refused the same way as a missing one, and the
attempt is written to the audit log.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import select

from agentctx.errors import BlobNotFound, ImageExpired
from agentctx.ids import check_id, check_optional_id
from agentctx.perception import ImageHashes, StoredImage
from agentctx.sessions.audit import AuditLog, AuditRecord
from agentctx.storage import images as image_index
from agentctx.storage.blobs import BlobStore
from agentctx.storage.database import Database
from agentctx.storage.schema import blob_refs, blobs


class BlobReads:
    """The blob reads of one database and blob store."""

    def __init__(self, db: Database, blob_store: BlobStore, audit_log: AuditLog) -> None:
        self.db = db
        self.blobs = blob_store
        self.audit = audit_log

    def get_blob(self, user_id: str, blob_id: str) -> bytes:
        """Blob bytes, if an event of this user references the blob."""
        check_id("user_id", user_id)
        check_id("blob_id", blob_id)
        query = select(blob_refs.c.blob_id).where(
            blob_refs.c.user_id == user_id, blob_refs.c.blob_id == blob_id
        )
        return self._read(user_id, query, blob_id)

    def restore_image(self, user_id: str, image_id: str, session_id: str | None = None) -> bytes:
        """The original bytes of an image (e.g. behind a ``[Visual_Placeholder: img_…]``),
        if an event of this user (of ``session_id``, when given) references it."""
        check_id("user_id", user_id)
        check_id("image_id", image_id)
        check_optional_id("session_id", session_id)
        query = select(blob_refs.c.blob_id).where(
            blob_refs.c.user_id == user_id, blob_refs.c.image_id == image_id
        )
        if session_id is not None:
            query = query.where(blob_refs.c.session_id == session_id)
        return self._read(user_id, query, image_id)

    def latest_image(self, user_id: str, session_id: str) -> StoredImage | None:
        """The session's most recent image whose bytes are still stored."""
        with self.db.read() as conn:
            row = image_index.latest_image_row(conn, user_id, session_id)
        if row is None:
            return None
        hashes = (
            ImageHashes(row.phash, row.dhash, row.ahash, row.mean_color)
            if row.phash and row.dhash and row.ahash and row.mean_color
            else None
        )
        return StoredImage(
            blob_id=row.blob_id,
            image_id=row.image_id,
            media_type=row.media_type,
            width=row.width or 0,
            height=row.height or 0,
            size=row.size,
            hashes=hashes,
        )

    def _read(self, user_id: str, query: Any, name: str) -> bytes:
        query = query.add_columns(blobs.c.expired_at).join(
            blobs, blobs.c.blob_id == blob_refs.c.blob_id
        )
        with self.db.read() as conn:
            row = conn.execute(query.limit(1)).first()
        if row is None:
            self.audit.deny(
                AuditRecord(action="blob_read", user_id=user_id, meta={"id": name}),
                BlobNotFound(name),
            )
        if row.expired_at is not None:
            self.audit.deny(
                AuditRecord(action="blob_read", user_id=user_id, meta={"id": name}),
                ImageExpired(name, row.expired_at),
            )
        return self.blobs.get(row[0])
