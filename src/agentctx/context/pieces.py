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


@dataclass
class CompactBlock:
    """Events shown as compact lines under a heading: the message, and what it shows
    (the events' seqs and ids, not the events: blocks are kept between builds, and a
    tool result's event may be tens of kilobytes)."""

    message: dict[str, Any] | None = None
    shown: tuple[tuple[int, str], ...] = ()  # (seq, event id) of the events shown, by seq
    tokens: int = 0

    def copy(self) -> CompactBlock:
        """A copy a build may change without changing this one."""
        message = dict(self.message) if self.message is not None else None
        return CompactBlock(message, self.shown, self.tokens)


BlockKey = tuple[str, tuple[str, ...], int, float]
"""What a compact block is made of: its heading, its events' ids, its room and the
ledger's share of it."""

LinesKey = tuple[tuple[str, ...], tuple[str, ...], int, bool]
"""What an atom's block lines are made of: its events' ids, the query's terms, sorted
(which sentences a shortened line keeps), the most tokens a line may take, and whether
JSON tool output shows as its leaves."""

KeptLines = tuple[tuple[Any, ...], ...]
"""An atom's block lines as kept between builds: each line's fields, in order. Tuples of
strings and numbers only, which the garbage collector stops tracking: thousands are kept,
and every object it tracks lengthens its full collections, which pause the agent."""
