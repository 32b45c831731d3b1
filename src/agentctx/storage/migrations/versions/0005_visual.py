"""Visual context: perceptual hashes, visual compaction flags, cold-storage expiry.

* ``blobs``: ``phash``, ``dhash``, ``ahash`` and ``mean_color`` of images (for
  perceptual deduplication), and ``expired_at`` (cold-storage retention removed the
  bytes; the row stays so a restore can say so).
* ``blob_refs``: the referencing event's ``seq`` and ``turn_id``; the image's ``frame``
  in its ended turn, ``is_compressed`` and ``compressed_at`` (visual compaction); and
  ``dedup_distance`` (the image reused a near-duplicate's id).

Revision ID: 0005
Revises: 0004
Create Date: 2026-11-22
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

from agentctx.storage.schema import UTCDateTime

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("blobs") as batch:
        for name in ("phash", "dhash", "ahash"):
            batch.add_column(sa.Column(name, sa.String(16), nullable=True))
        batch.add_column(sa.Column("mean_color", sa.String(6), nullable=True))
        batch.add_column(sa.Column("expired_at", UTCDateTime, nullable=True))
    with op.batch_alter_table("blob_refs") as batch:
        batch.add_column(sa.Column("seq", sa.BigInteger, nullable=True))
        batch.add_column(sa.Column("turn_id", sa.String(64), nullable=True))
        batch.add_column(sa.Column("frame", sa.String(16), nullable=True))
        batch.add_column(
            sa.Column("is_compressed", sa.Boolean, nullable=False, server_default=sa.false())
        )
        batch.add_column(sa.Column("compressed_at", UTCDateTime, nullable=True))
        batch.add_column(sa.Column("dedup_distance", sa.Integer, nullable=True))
    # References written before this revision learn where their event sits.
    op.execute(
        "UPDATE blob_refs SET seq = (SELECT e.seq FROM events e WHERE e.user_id = "
        "blob_refs.user_id AND e.session_id = blob_refs.session_id AND e.event_id = "
        "blob_refs.event_id), turn_id = (SELECT e.turn_id FROM events e WHERE e.user_id = "
        "blob_refs.user_id AND e.session_id = blob_refs.session_id AND e.event_id = "
        "blob_refs.event_id)"
    )
    op.create_index(
        "ix_blob_refs_user_id_session_id_seq", "blob_refs", ["user_id", "session_id", "seq"]
    )
    op.create_index(
        "ix_blob_refs_user_id_session_id_turn_id",
        "blob_refs",
        ["user_id", "session_id", "turn_id"],
    )


def downgrade() -> None:
    op.drop_index("ix_blob_refs_user_id_session_id_turn_id", table_name="blob_refs")
    op.drop_index("ix_blob_refs_user_id_session_id_seq", table_name="blob_refs")
    with op.batch_alter_table("blob_refs") as batch:
        for name in ("dedup_distance", "compressed_at", "is_compressed", "frame", "turn_id", "seq"):
            batch.drop_column(name)
    with op.batch_alter_table("blobs") as batch:
        for name in ("expired_at", "mean_color", "ahash", "dhash", "phash"):
            batch.drop_column(name)
