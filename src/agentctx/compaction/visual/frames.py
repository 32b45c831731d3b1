"""Which images of an ended turn stay in full (seed 000, section 2.3).

In the compact zone (ended turns) a turn's first image is its anchor (the screen the
turn started from) and its last image its result (the proof of what the turn did);
both stay. So does every error frame: an image attached to a failed tool result or to
an error event, which is what debugging the turn needs. Images whose event carries
``keep_images: true`` in its metadata are pinned (the seed's manual marking). Every
other image is a process frame and becomes a placeholder.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentctx.events import Event, EventType, ImagePart

FrameKind = Literal["anchor", "result", "error", "pinned", "process"]
KEPT_FRAMES: frozenset[str] = frozenset({"anchor", "result", "error", "pinned"})
PIN_METADATA_KEY = "keep_images"


@dataclass(frozen=True, slots=True)
class Frame:
    """One image reference of a turn and what compaction does with it."""

    event_id: str
    part_index: int
    seq: int
    image_id: str
    kind: FrameKind

    @property
    def compressed(self) -> bool:
        """Whether windows show a placeholder for it."""
        return self.kind not in KEPT_FRAMES


def is_error_event(event: Event) -> bool:
    """An error event, or a tool result that failed."""
    return event.type is EventType.ERROR or (
        event.type is EventType.TOOL_RESULT and event.meta.status == "error"
    )


def classify_frames(events: Sequence[Event]) -> list[Frame]:
    """The frames of one ended turn's images, in order (``events`` in seq order)."""
    images = [
        (event, index, part)
        for event in events
        for index, part in enumerate(event.parts)
        if isinstance(part, ImagePart)
    ]
    last = len(images) - 1
    frames: list[Frame] = []
    for position, (event, index, part) in enumerate(images):
        kind: FrameKind
        if is_error_event(event):
            kind = "error"
        elif event.meta.extra.get(PIN_METADATA_KEY) is True:
            kind = "pinned"
        elif position == 0:
            kind = "anchor"
        elif position == last:
            kind = "result"
        else:
            kind = "process"
        frames.append(Frame(event.event_id, index, event.seq, part.image_id, kind))
    return frames
