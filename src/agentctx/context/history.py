"""The recent history of an agent loop: whole turns as recorded, sliding in steps that the
next calls repeat, so a provider's prompt cache keeps hitting.

Between two calls the window should only grow at the end of the history. When the
history outgrows its capacity, whole turns leave from its old end in one step, down to
about the low-water mark, and the next calls append again. Where the history may start
is fixed along the session's log, not chosen per call:

* every event has a *position*: the history weight of all events before it (the session
  row keeps the running total, ``agentctx.tokens.weight``), which appending never moves;
* a turn that begins the first after a multiple of the *step* (``(1 - low_water)`` of
  the recent share of the budget) is a *slide point*; so is the first turn of the
  history (after archived topics);
* the history starts at the oldest slide point from which the turns up to the newest fit
  its capacity, as counted by the window's own tokenizer.

The same log and budget give the same start whatever was built before (no state is
kept), and the start moves only forward as the log grows, by whole steps. A turn too long
for the capacity on its own is shortened from its middle; a history with no slide point
that fits starts at the oldest turn that does.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from agentctx.context.assembly import Assembly
from agentctx.context.pieces import Piece
from agentctx.context.units import Unit, message_count
from agentctx.events import Event


@dataclass
class History:
    """The turns a window shows as history, and what lies before them."""

    turns: list[Unit] = field(default_factory=list)
    pieces: list[Piece] = field(default_factory=list)
    earlier: list[Unit] = field(default_factory=list)  # read, older than the history
    start: int | None = None  # the first seq the history shows
    slid: bool = False  # whether turns before it left the history
    complete: bool = True  # whether everything after the archive was read

    @property
    def tokens(self) -> int:
        return sum(p.tokens for p in self.pieces)


def stable_history(build: Assembly, capacity: int, step: int, *, keep: int = 0) -> History:
    """The history within ``capacity`` tokens, starting at a slide point ``step`` weights
    apart (see the module docstring), and holding at least the newest ``keep`` messages
    (their turns whole, even past a slide point, even over ``capacity``)."""
    needed = capacity + 2 * step
    while True:
        found = _history(build, capacity, step, needed, keep)
        if found is not None:
            return found
        needed *= 4  # everything read fits, and there is more: read further back


def _history(build: Assembly, capacity: int, step: int, needed: int, keep: int) -> History | None:
    """The history from the newest events weighing ``needed``; None when all of them fit
    and older ones were not read (the start may lie further back)."""
    sources, head = build.sources, build.request.head
    recent = build.reader.newest(
        needed, after_seq=sources.archived_through, hidden=sources.hidden, unbounded=True
    )
    turns = build.turns(recent)
    if not turns:
        return History(complete=recent.complete)
    positions = _positions(recent.read, head.last_seq, head.weight_total, build.reader.weight)
    points = _slide_points(turns, positions, step, first_is_start=recent.complete)
    pieces: dict[int, list[Piece]] = {}
    cost = 0
    start_index: int | None = None  # oldest slide point that fits
    fitting = len(turns)  # oldest turn from which everything fits
    for index in range(len(turns) - 1, -1, -1):
        rendered = build.pricer.pieces(turns[index].atoms)
        cost += sum(p.tokens for p in rendered)
        if cost > capacity and index < len(turns) - 1:
            break
        pieces[index] = rendered
        fitting = index
        if index in points:
            start_index = index
    else:
        if not recent.complete:
            return None
    if start_index is None:
        start_index = fitting  # no slide point fits: the newest turns that do
    kept = _keeping(turns, keep)
    for index in range(kept, start_index):
        pieces[index] = build.pricer.pieces(turns[index].atoms)
    start_index = min(start_index, kept)
    shown = turns[start_index:]
    return History(
        turns=shown,
        pieces=[p for index in range(start_index, len(turns)) for p in pieces[index]],
        earlier=turns[:start_index],
        start=shown[0].first_seq,
        slid=start_index > 0 or not recent.complete,
        complete=recent.complete,
    )


def _keeping(turns: list[Unit], messages: int) -> int:
    """The index of the oldest turn the newest ``messages`` messages reach into."""
    index, count = len(turns), 0
    while index > 0 and count < messages:
        index -= 1
        count += message_count(turns[index])
    return index


def _positions(
    read: list[Event], last_seq: int, weight_total: int, weight: Callable[[Event], int]
) -> dict[int, int]:
    """Each read event's position: the weight of every event before it. ``weight_total``
    counts the events through ``last_seq``; events read beyond it (written since the
    session row was read) add theirs."""
    total = weight_total + sum(weight(e) for e in read if e.seq > last_seq)
    positions: dict[int, int] = {}
    for event in reversed(read):
        total -= weight(event)
        positions[event.seq] = total
    return positions


def _slide_points(
    turns: list[Unit], positions: dict[int, int], step: int, *, first_is_start: bool
) -> set[int]:
    """Indexes of the turns that are slide points: each first after a multiple of
    ``step``, and the history's first turn when it was read (``first_is_start``)."""
    points = {0} if first_is_start else set()
    previous: int | None = None
    for index, turn in enumerate(turns):
        position = positions.get(turn.first_seq, 0)
        if previous is not None and position // step > previous // step:
            points.add(index)
        previous = position
    return points
