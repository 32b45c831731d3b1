"""Queries over the image index: ``blobs`` (hashes, expiry) and ``blob_refs`` (frames).

Image bytes live in the blob store; these rows are what the database keeps about them
(seed 000's offloaded zone): size, hashes, which events reference an image, the role
of each reference in its ended turn, and whether windows show a placeholder for it.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, bindparam, func, select, update

from agentctx.storage import fastsql
from agentctx.storage.schema import blob_refs, blobs


def latest_image_row(conn: Connection, user_id: str, session_id: str) -> Any:
    """The session's most recent image reference whose bytes are not expired."""
    query = (
        select(
            blob_refs.c.blob_id,
            blob_refs.c.image_id,
            blobs.c.media_type,
            blobs.c.width,
            blobs.c.height,
            blobs.c.size,
            blobs.c.phash,
            blobs.c.dhash,
            blobs.c.ahash,
            blobs.c.mean_color,
        )
        .join(blobs, blobs.c.blob_id == blob_refs.c.blob_id)
        .where(
            blob_refs.c.user_id == user_id,
            blob_refs.c.session_id == session_id,
            blob_refs.c.image_id.is_not(None),
            blobs.c.expired_at.is_(None),
        )
        .order_by(blob_refs.c.seq.desc(), blob_refs.c.part_index.desc())
        .limit(1)
    )
    return conn.execute(query).first()


@dataclass(frozen=True, slots=True)
class ImageState:
    """What visual compaction recorded about one image reference."""

    turn_id: str | None
    seq: int | None
    frame: str | None  # None: its turn has not been compacted (or it has no turn)
    is_compressed: bool


def image_states(
    conn: Connection, user_id: str, session_id: str
) -> dict[tuple[str, int], ImageState]:
    """The compaction state of every image reference of the session that a compaction
    has classified, by (event id, part index)."""
    rows = fastsql.statement(conn, "image_states", _image_states_statement).fetch_values(
        conn, {"user_id": user_id, "session_id": session_id}
    )
    return {
        (event_id, part_index): ImageState(turn_id, seq, frame, bool(compressed))
        for event_id, part_index, turn_id, seq, frame, compressed in rows
    }


def _image_states_statement() -> Any:
    """What :func:`image_states` runs (every window with an image asks: compiled once)."""
    return select(
        blob_refs.c.event_id,
        blob_refs.c.part_index,
        blob_refs.c.turn_id,
        blob_refs.c.seq,
        blob_refs.c.frame,
        blob_refs.c.is_compressed,
    ).where(
        blob_refs.c.user_id == bindparam("user_id"),
        blob_refs.c.session_id == bindparam("session_id"),
        blob_refs.c.frame.is_not(None),
    )


def set_frames(
    conn: Connection,
    user_id: str,
    session_id: str,
    frames: Iterable[tuple[str, int, str, bool]],
    now: datetime,
) -> None:
    """Record (event id, part index, frame, is_compressed) on image references."""
    for event_id, part_index, frame, compressed in frames:
        conn.execute(
            update(blob_refs)
            .where(
                blob_refs.c.user_id == user_id,
                blob_refs.c.session_id == session_id,
                blob_refs.c.event_id == event_id,
                blob_refs.c.part_index == part_index,
            )
            .values(
                frame=frame,
                is_compressed=compressed,
                # The first compaction's time survives reruns.
                compressed_at=func.coalesce(blob_refs.c.compressed_at, now) if compressed else None,
            )
        )


def image_refs_of_turn(
    conn: Connection, user_id: str, session_id: str, turn_id: str
) -> Sequence[Any]:
    """The turn's image references in order: event id, part index, seq, frame, flag."""
    query = (
        select(
            blob_refs.c.event_id,
            blob_refs.c.part_index,
            blob_refs.c.seq,
            blob_refs.c.image_id,
            blob_refs.c.frame,
            blob_refs.c.is_compressed,
        )
        .where(
            blob_refs.c.user_id == user_id,
            blob_refs.c.session_id == session_id,
            blob_refs.c.turn_id == turn_id,
            blob_refs.c.image_id.is_not(None),
        )
        .order_by(blob_refs.c.seq, blob_refs.c.part_index)
    )
    return conn.execute(query).all()


_TURN_IMAGE = (
    select(blob_refs.c.blob_id)
    .where(
        blob_refs.c.user_id == bindparam("u"),
        blob_refs.c.session_id == bindparam("s"),
        blob_refs.c.turn_id == bindparam("t"),
        blob_refs.c.image_id.is_not(None),
    )
    .limit(1)
)


def turn_has_images(conn: Connection, user_id: str, session_id: str, turn_id: str) -> bool:
    """Whether an event of the turn references an image (the visual job's turn-end
    condition, read for turns ended explicitly: see ``compaction.visual.TurnHasImages``)."""
    found = conn.execute(_TURN_IMAGE, {"u": user_id, "s": session_id, "t": turn_id})
    return found.first() is not None
