"""What a build handles: events rendered as messages (:class:`Piece`) and older events that
may go into the window (:class:`Candidate`). Plain data, shared by every stage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agentctx.context.layout import BlockLine
from agentctx.context.units import Atom, Unit


@dataclass
class Piece:
    """Rendered messages of one atom (or a whole turn), with their cost in tokens."""

    atom: Atom
    messages: list[dict[str, Any]]
    tokens: int


@dataclass(eq=False)  # compared by identity: events are large, and equal ones are the same
class Candidate:
    """An older atom (or a whole turn) that may go into the window.

    What it costs is measured only when the choice reaches it (``lines.measure``): most
    candidates of a long session are never looked at.
    """

    atom: Atom
    score: float
    tokens: int | None = None  # None: not measured yet
    piece: Piece | None = None  # rendered as messages, when it may extend the recent window
    contiguous_before: int | None = None  # first seq of what it directly precedes
    drop_reason: str = "budget"
    lines: tuple[BlockLine, ...] = ()  # one per event shown as a block line
    unit: Unit | None = None  # its whole turn, when it may extend the recent window
    as_messages: bool = False  # priced as messages (no query) rather than as block lines


def marker_piece(message: dict[str, Any], tokens: int) -> Piece:
    """A piece that is only a marker (no events), such as "[… 12 events omitted …]"."""
    return Piece(Atom([]), [message], tokens)
