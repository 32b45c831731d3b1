"""Turn-end visual compaction (seed 000, Phase 2): the compact zone.

When a turn ends its images leave the active zone: anchor, result, error and pinned
frames stay in full, every other image becomes ``[Visual_Placeholder: img_…]`` in
windows (see :mod:`agentctx.compaction.visual.frames`). Nothing is deleted: the
event log never changes (its hash chain covers it); the image references in
``blob_refs`` carry the frame and an ``is_compressed`` flag, and the bytes stay in the
blob store (the offloaded zone) until cold-storage retention.

Guarantees:

* Runs at turn end as a durable job; jobs of one session never overlap (the job queue
  runs one job per session at a time: the seed's lock, with the queue for when busy).
* The active (open) turn is never compacted, and neither are events without a turn id
  (legacy data): their references have no turn to belong to.
* Idempotent and atomic: a turn's flags are written in one transaction, from a pure
  function of the turn's events, so a crash leaves the turn as it was and a rerun (or
  two racing runs) ends in the same flags: no image lost, no placeholder twice.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, select

from agentctx.compaction.visual.config import VisualConfig
from agentctx.compaction.visual.frames import Frame, classify_frames
from agentctx.errors import TurnError, TurnNotFound
from agentctx.events import Event, ImagePart, utcnow
from agentctx.jobs import Job
from agentctx.sessions.turn_end import WrittenEvent
from agentctx.storage import images as image_index
from agentctx.storage.database import Database
from agentctx.storage.images import ImageState
from agentctx.storage.schema import blob_refs, turns

VISUAL_JOB = "visual"
"""The name of the turn-end job (``ContextEngine.on_turn_end``)."""

EventLoader = Callable[..., list[Event]]


class TurnHasImages:
    """The visual job's turn-end condition: an event of the turn references an image
    (only those turns have frames to compact)."""

    def __call__(self, conn: Connection, user_id: str, session_id: str, turn_id: str) -> bool:
        """The answer read from the turn's stored image references."""
        return image_index.turn_has_images(conn, user_id, session_id, turn_id)

    def written(self, events: Sequence[WrittenEvent]) -> bool:
        """The same answer from the events a transaction wrote as the whole turn."""
        return any(event.image_ids for event in events)


turn_has_images = TurnHasImages()
"""The visual job's turn-end condition (see :class:`TurnHasImages`)."""


@dataclass(frozen=True, slots=True)
class VisualCompaction:
    """What compacting one turn did."""

    turn_id: str
    images: int  # image references in the turn
    kept: int  # anchor, result, error and pinned frames
    compressed: int  # shown as placeholders
    newly_compressed: int  # of those, not compressed before this run
    duration_ms: float


@dataclass(frozen=True, slots=True)
class ImageFrame:
    """One image reference of a session as the index records it."""

    image_id: str
    blob_id: str
    event_id: str
    seq: int | None
    part_index: int
    turn_id: str | None
    frame: str | None  # None until its turn is compacted
    is_compressed: bool
    dedup_distance: int | None


KeptFrames = Callable[[str, str, Sequence[ImagePart]], None]
"""Told, after a turn's images were compacted, of the frames it kept (user id, session id,
their parts): windows show them in the history from then on."""


class VisualCompactor:
    """Compacts the images of ended turns; reads the flags windows honour."""

    def __init__(
        self,
        db: Database,
        load_events: EventLoader,
        *,
        config: VisualConfig,
        on_kept: KeptFrames | None = None,
    ) -> None:
        self.db = db
        self._load = load_events
        self.config = config
        # The engine starts the copies the history shows of them (render-ahead).
        self._on_kept = on_kept

    def compact_turn(self, user_id: str, session_id: str, turn_id: str) -> VisualCompaction:
        """Compact one ended turn's images (raises TurnError for an open turn)."""
        started = time.perf_counter()
        with self.db.read() as conn:
            status = conn.execute(
                select(turns.c.status).where(
                    turns.c.user_id == user_id,
                    turns.c.session_id == session_id,
                    turns.c.turn_id == turn_id,
                )
            ).scalar()
            if status is None:
                raise TurnNotFound(f"turn {turn_id!r} not found in session {session_id!r}")
            if status == "open":
                raise TurnError(f"turn {turn_id} is still active: its images stay in full")
            refs = image_index.image_refs_of_turn(conn, user_id, session_id, turn_id)
        if not refs:
            return VisualCompaction(turn_id, 0, 0, 0, 0, _ms(started))
        events = self._load(user_id, session_id, seqs=sorted({ref.seq for ref in refs}))
        frames = classify_frames(events)
        current = {(ref.event_id, ref.part_index): ref for ref in refs}
        changes = [
            (f.event_id, f.part_index, f.kind, f.compressed)
            for f in frames
            if (ref := current.get((f.event_id, f.part_index))) is not None
            and (ref.frame != f.kind or bool(ref.is_compressed) != f.compressed)
        ]
        newly = sum(
            1
            for event_id, index, _, compressed in changes
            if compressed and not current[(event_id, index)].is_compressed
        )
        if changes:
            with self.db.write() as conn:
                image_index.set_frames(conn, user_id, session_id, changes, utcnow())
        if self._on_kept is not None:
            self._on_kept(user_id, session_id, _kept_parts(events, frames))
        compressed = sum(1 for f in frames if f.compressed)
        return VisualCompaction(
            turn_id, len(frames), len(frames) - compressed, compressed, newly, _ms(started)
        )

    def on_turn_end(self, job: Job) -> None:
        """The turn-end job: compact the turn that just ended."""
        if not self.config.compaction or not job.user_id or not job.session_id:
            return
        if job.turn_id is None:
            return  # legacy data: never compacted
        self.compact_turn(job.user_id, job.session_id, job.turn_id)

    def image_states(self, user_id: str, session_id: str) -> dict[tuple[str, int], ImageState]:
        """The compaction state of the session's classified images, by (event id, part
        index): what windows read to show placeholders and history frames."""
        with self.db.read() as conn:
            return image_index.image_states(conn, user_id, session_id)

    def frames(self, user_id: str, session_id: str) -> list[ImageFrame]:
        """Every image reference of the session, in log order, with its compaction state."""
        query = (
            select(
                blob_refs.c.image_id,
                blob_refs.c.blob_id,
                blob_refs.c.event_id,
                blob_refs.c.seq,
                blob_refs.c.part_index,
                blob_refs.c.turn_id,
                blob_refs.c.frame,
                blob_refs.c.is_compressed,
                blob_refs.c.dedup_distance,
            )
            .where(
                blob_refs.c.user_id == user_id,
                blob_refs.c.session_id == session_id,
                blob_refs.c.image_id.is_not(None),
            )
            .order_by(blob_refs.c.seq, blob_refs.c.part_index)
        )
        with self.db.read() as conn:
            return [
                ImageFrame(
                    image_id=row.image_id,
                    blob_id=row.blob_id,
                    event_id=row.event_id,
                    seq=row.seq,
                    part_index=row.part_index,
                    turn_id=row.turn_id,
                    frame=row.frame,
                    is_compressed=bool(row.is_compressed),
                    dedup_distance=row.dedup_distance,
                )
                for row in conn.execute(query)
            ]


def _kept_parts(events: Sequence[Event], frames: Sequence[Frame]) -> list[ImagePart]:
    """The image parts of the frames a compaction kept (not compressed)."""
    kept = {(f.event_id, f.part_index) for f in frames if not f.compressed}
    return [
        part
        for event in events
        for index, part in enumerate(event.parts)
        if isinstance(part, ImagePart) and (event.event_id, index) in kept
    ]


def _ms(started: float) -> float:
    return (time.perf_counter() - started) * 1000
