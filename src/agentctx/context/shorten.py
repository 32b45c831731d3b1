"""Fitting turns into their room: whole turns first, shortened only when they must be.

* :func:`fit_turns` (``semantic``, ``full``, ``compressed``): older turns go whole,
  oldest first; then the newest turn loses its middle events, with a marker.
* :func:`fit_history` (``adaptive``): no turn of an agent loop's history is dropped
  while it can be shortened; the newest turn slides (:func:`slide_turn`), keeping its
  request and showing the events that left it as compact lines.
"""

from __future__ import annotations

from typing import Any

from agentctx.context.lines import compact_block
from agentctx.context.pieces import Piece, marker_piece
from agentctx.context.pricing import Pricer
from agentctx.context.units import Unit
from agentctx.tokens.weight import event_weight

FRONT_VALUES_SHARE = 0.2
"""Share of what an older turn's omitted events took that lists the values they named."""


def fit_turns(turns: list[Unit], pieces: list[Piece], pricer: Pricer, allowed: int) -> list[Piece]:
    """Whole turns within ``allowed``: older turns go first, then the newest turn is
    shortened from its middle, with a marker saying what was left out."""
    kept = list(pieces)
    for unit in turns[:-1]:
        if sum(p.tokens for p in kept) <= allowed:
            break
        atoms = {id(a) for a in unit.atoms}
        for piece in [p for p in kept if id(p.atom) in atoms]:
            kept.remove(piece)
            pricer.drop(piece.atom, "budget")
    if sum(p.tokens for p in kept) <= allowed:
        return kept
    return shorten_turn(kept, pricer, allowed)


def fit_history(
    turns: list[Unit],
    pieces: list[Piece],
    pricer: Pricer,
    allowed: int,
    *,
    low_water: float,
    compact_share: float,
    keep_messages: int = 0,
    ledger_share: float = 0.0,
) -> list[Piece]:
    """Every turn of an agent loop's history within ``allowed``, none dropped while they
    can be shortened: older turns lose their earliest events after the first (their end,
    next to the newest turn, stays), then the newest turn slides (:func:`slide_turn`);
    only then do older turns go whole, oldest first."""
    if sum(p.tokens for p in pieces) <= allowed or not turns:
        return list(pieces)
    by_turn = _by_turn(turns, pieces)
    over = sum(p.tokens for p in pieces) - allowed
    # The newest messages leave only as they would without the values listed.
    protected = {id(p) for p in pieces[_keeping_pieces(pieces, keep_messages) :]}
    for index in range(len(by_turn) - 1):
        if over <= 0:
            break
        shortened = _shorten_front(
            by_turn[index],
            pricer,
            over,
            values_share=FRONT_VALUES_SHARE if ledger_share > 0 else 0.0,
            protected=protected,
        )
        over -= sum(p.tokens for p in by_turn[index]) - sum(p.tokens for p in shortened)
        by_turn[index] = shortened
    older = [p for group in by_turn[:-1] for p in group]
    newest = by_turn[-1]
    if over > 0:
        room = max(0, allowed - sum(p.tokens for p in older))
        newest = slide_turn(
            newest,
            pricer,
            room,
            low_water=low_water,
            compact_share=compact_share,
            keep_messages=keep_messages,
            ledger_share=ledger_share,
        )
    kept = older + newest
    while sum(p.tokens for p in kept) > allowed and len(by_turn) > 1:
        dropped = by_turn.pop(0)
        for piece in dropped:
            if piece.atom.events:
                pricer.drop(piece.atom, "budget")
        kept = [p for group in by_turn[:-1] for p in group] + newest
    return kept


def slide_turn(
    pieces: list[Piece],
    pricer: Pricer,
    allowed: int,
    *,
    low_water: float,
    compact_share: float,
    keep_messages: int = 0,
    ledger_share: float = 0.0,
) -> list[Piece]:
    """The newest turn of an agent loop within ``allowed``: its first message (the request),
    the events it leaves out as compact lines (``compact_share`` of the room), then its
    newest events from a slide point on.

    Like the history (:mod:`agentctx.context.history`), a long turn slides in steps of
    ``1 - low_water`` of its room, measured by the events' history weights from the
    turn's start: the calls of one turn then repeat the same start until the next step,
    and what left stays readable (every id a tool returned, compacted).
    """
    if sum(p.tokens for p in pieces) <= allowed:
        return list(pieces)
    if len(pieces) <= 2:
        return shorten_turn(pieces, pricer, allowed)
    first, rest = pieces[0], pieces[1:]
    compact_room = int(compact_share * allowed)
    keep_room = allowed - first.tokens - compact_room
    if keep_room <= 0:
        return shorten_turn(pieces, pricer, allowed)
    step = max(1, int((1 - low_water) * keep_room))
    start = _slide_start([p.tokens for p in rest], _weights(rest), step, keep_room)
    start = min(start, _keeping_pieces(rest, keep_messages))
    omitted, kept = rest[:start], rest[start:]
    block = compact_block(
        pricer,
        f"[… {sum(len(p.atom.events) for p in omitted)} earlier events of this turn, "
        "compacted (oldest first):]",
        [p.atom for p in omitted],
        compact_room,
        ledger_share=ledger_share,
    )
    shown = {seq for seq, _ in block.shown}
    for piece in omitted:
        pricer.drop_many([e for e in piece.atom.events if e.seq not in shown], "budget")
    middle = [marker_piece(block.message, block.tokens)] if block.message is not None else []
    if omitted and not middle:
        marker = _omitted_marker(omitted)
        middle = [marker_piece(marker, pricer.cost(marker))]
    result = [first, *middle, *kept]
    # Still too big (the newest event alone is): cut its messages.
    while sum(p.tokens for p in result) > allowed:
        biggest = max(kept or result, key=lambda p: p.tokens)
        if not pricer.cut(biggest, sum(p.tokens for p in result) - allowed):
            break
    return result


def _keeping_pieces(pieces: list[Piece], messages: int) -> int:
    """The index of the oldest piece the newest ``messages`` messages reach into."""
    index, count = len(pieces), 0
    while index > 0 and count < messages:
        index -= 1
        count += len(pieces[index].messages)
    return index


def _weights(pieces: list[Piece]) -> list[int]:
    return [sum(event_weight(e) for e in p.atom.events) for p in pieces]


def _slide_start(costs: list[int], weights: list[int], step: int, room: int) -> int:
    """The index the kept part of a long turn starts at: the oldest slide point (the first
    piece after each multiple of ``step`` of weight, and the first piece) from which the
    pieces cost at most ``room``; else the oldest from which they fit; else the last."""
    points, position, previous = {0}, 0, 0
    for index, weight in enumerate(weights):
        if index and position // step > previous // step:
            points.add(index)
        previous = position
        position += weight
    start: int | None = None
    fitting = len(costs) - 1
    total = 0
    for index in range(len(costs) - 1, -1, -1):
        total += costs[index]
        if total > room and index < len(costs) - 1:
            break
        fitting = index
        if index in points:
            start = index
    return start if start is not None else fitting


def _by_turn(turns: list[Unit], pieces: list[Piece]) -> list[list[Piece]]:
    """``pieces`` grouped by the turn of ``turns`` their first event belongs to."""
    starts = [unit.first_seq for unit in turns]
    groups: list[list[Piece]] = [[] for _ in turns]
    index = 0
    for piece in pieces:
        if piece.atom.events:
            seq = piece.atom.first_seq
            while index + 1 < len(starts) and seq >= starts[index + 1]:
                index += 1
        groups[index].append(piece)
    return [group for group in groups if group]


def _shorten_front(
    pieces: list[Piece],
    pricer: Pricer,
    over: int,
    *,
    values_share: float = 0.0,
    protected: set[int] | frozenset[int] = frozenset(),
) -> list[Piece]:
    """A turn without its earliest events after the first, about ``over`` tokens fewer
    (at most all but its first and last), with a marker where they were.

    With ``values_share``, the marker lists the values the omitted events named
    (:mod:`agentctx.context.ledger`) in that share of what they took, a room that
    depends only on which events left (so the marker changes only when more leave); to
    make that room, more events leave, but never a piece whose ``id`` is in
    ``protected`` (the newest messages): then the room is what the omission spared."""
    if len(pieces) <= 2:
        return pieces
    omitted: list[Piece] = []
    freed = 0

    def more(enough: int) -> bool:
        return len(pieces) - len(omitted) > 2 and freed < enough

    while more(over):
        omitted.append(pieces[1 + len(omitted)])
        freed += omitted[-1].tokens
    if not omitted:
        return pieces
    while more(over + int(values_share * freed)) and id(pieces[1 + len(omitted)]) not in protected:
        omitted.append(pieces[1 + len(omitted)])
        freed += omitted[-1].tokens
    for piece in omitted:
        pricer.drop(piece.atom, "budget")
    marker = _omitted_marker(omitted)
    block = compact_block(
        pricer,
        str(marker["content"]),
        [p.atom for p in omitted],
        min(int(values_share * freed), freed - over),
        ledger_share=1.0,
    )
    if block.message is not None:
        return [pieces[0], marker_piece(block.message, block.tokens), *pieces[1 + len(omitted) :]]
    return [pieces[0], marker_piece(marker, pricer.cost(marker)), *pieces[1 + len(omitted) :]]


def shorten_turn(pieces: list[Piece], pricer: Pricer, allowed: int) -> list[Piece]:
    """A turn too long for ``allowed`` without its middle events (the first and the last
    stay), with a marker; a single atom still too long has its longest message cut."""
    omitted: list[Piece] = []
    kept = list(pieces)
    total = sum(p.tokens for p in kept)
    # The marker's cost with the largest count it could show: an upper bound, so the
    # loop needs no recount per step (a turn of thousands of events stays linear).
    marker_bound = pricer.cost(_omitted_marker(pieces))
    while len(kept) > 2 and total + (marker_bound if omitted else 0) > allowed:
        middle = kept.pop(len(kept) // 2)
        total -= middle.tokens
        omitted.append(middle)
        pricer.drop(middle.atom, "budget")
    if omitted:
        first_omitted = min(p.atom.first_seq for p in omitted)
        marker = _omitted_marker(omitted)
        position = next(
            (i for i, p in enumerate(kept) if p.atom.first_seq > first_omitted), len(kept)
        )
        kept.insert(position, marker_piece(marker, pricer.cost(marker)))
    # Still too big (one or two huge atoms): cut their messages.
    while sum(p.tokens for p in kept) > allowed:
        biggest = max(kept, key=lambda p: p.tokens)
        over = sum(p.tokens for p in kept) - allowed
        if not pricer.cut(biggest, over):
            kept.remove(biggest)
            if biggest.atom.events:
                pricer.drop(biggest.atom, "budget")
            if not kept:
                break
    return kept


def _omitted_marker(omitted: list[Piece]) -> dict[str, Any]:
    events = sum(len(p.atom.events) for p in omitted)
    return {
        "role": "system",
        "content": f"[… {events} events of this turn omitted to fit the budget …]",
    }
