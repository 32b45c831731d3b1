"""Seed 004's sequential strategies: the newest messages, as many as they allow.

* ``full``: the newest whole turns, up to ``full.max_messages`` messages and, for the
  whole window, ``full.max_tokens`` tokens; what does not fit is counted in a marker
  ("[Earlier conversation truncated: N events]").
* ``compressed``: the newest turns holding ``compressed.recent_messages`` messages whole,
  the turns before them holding ``medium_recent`` more shortened to
  ``compression_ratio`` of their tokens, and older ones left to the summaries (topic
  summaries only with ``preserve_topics``). Older events no summary covers are counted in
  a marker and a note, never dropped silently.

Both lay out the window like every strategy (system, summaries, history, memories,
tail) and split the budget by seed 002's shares, a section that needs less giving the
rest to those that need more.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence

from agentctx.context.assembly import Assembly
from agentctx.context.gather import tail_messages
from agentctx.context.lines import unit_piece
from agentctx.context.pieces import Piece, marker_piece
from agentctx.context.plan import (
    Plan,
    fit_by_shares,
)
from agentctx.context.semantic import core_of
from agentctx.context.shorten import fit_turns
from agentctx.context.sources import SummaryItem
from agentctx.context.units import Unit, message_count


def assemble_full(build: Assembly) -> Plan:
    """The newest whole turns that fit (see the module docstring)."""
    settings = build.request.config.full
    turns = _read(build, build.pricer.budget, unbounded=True)
    shown: list[Unit] = []
    messages = 0
    for unit in reversed(turns):
        count = message_count(unit)
        if shown and messages + count > settings.max_messages:
            break
        shown.insert(0, unit)
        messages += count
    pieces = [piece for unit in shown for piece in build.pricer.pieces(unit.atoms)]
    plan = _fit(build, shown, pieces)
    _mark_earlier(build, plan, "[Earlier conversation truncated: {n} events]")
    return plan


def assemble_compressed(build: Assembly) -> Plan:
    """Recent turns whole, the ones before shortened, older ones left to the summaries."""
    settings = build.request.config.compressed
    turns = _read(build, build.pricer.budget, unbounded=False)
    core, rest = core_of(turns, settings.recent_messages) if turns else ([], [])
    medium: list[Unit] = []
    messages = 0
    for unit in reversed(rest):
        count = message_count(unit)
        if messages + count > settings.medium_recent:
            break
        medium.insert(0, unit)
        messages += count
    pieces = [
        unit_piece(build.pricer, unit, shorten=True, ratio=settings.compression_ratio)
        for unit in medium
    ] + [piece for unit in core for piece in build.pricer.pieces(unit.atoms)]
    plan = _fit(build, medium + core, pieces)
    covered = _covered(build.sources.summaries)
    older = [e for unit in rest[: len(rest) - len(medium)] for e in unit.events]
    build.pricer.drop_many([e for e in older if covered(e.seq)], "compacted")
    _mark_earlier(
        build,
        plan,
        "[Earlier conversation: {n} events not shown, no summary covers them]",
        covered=covered,
    )
    return plan


def _read(build: Assembly, budget: int, *, unbounded: bool) -> list[Unit]:
    sources = build.sources
    started = time.perf_counter()
    recent = build.reader.newest(
        budget, after_seq=sources.archived_through, hidden=sources.hidden, unbounded=unbounded
    )
    build.time("load_ms", started)
    return build.turns(recent)


def _fit(build: Assembly, turns: list[Unit], pieces: list[Piece]) -> Plan:
    """System, summaries, the turns and the tail within the budget by seed 002's shares."""
    request, pricer = build.request, build.pricer
    plan = build.new_plan()
    plan.tail = tail_messages(request, build.sources, turns)
    memories = build.memories_message()
    demands = {
        "system": pricer.cost_all(plan.system) + pricer.cost_all(plan.tail),
        "summary": pricer.cost_all(plan.summary),
        "retrieved": pricer.cost(memories) if memories is not None else 0,
        "recent": sum(p.tokens for p in pieces),
        "input": 0,
    }
    alloc = fit_by_shares(plan, pricer, request.config.budget_split, demands)
    plan.recent = fit_turns(turns, pieces, pricer, alloc["recent"] + alloc["input"])
    if memories is not None and pricer.cost(memories) <= pricer.budget - plan.tokens(pricer):
        plan.memories = memories
    return plan


def _mark_earlier(
    build: Assembly, plan: Plan, text: str, *, covered: Callable[[int], bool] | None = None
) -> None:
    """Put a marker before the history counting the earlier events it does not show (those
    ``covered`` by a summary excepted) and say so in the notes; record them as dropped."""
    first = next((p.atom.first_seq for p in plan.recent if p.atom.events), None)
    last = build.last_seq
    start = (build.sources.archived_through or 0) + 1
    end = first - 1 if first is not None else last
    if end < start:
        return
    is_covered = covered or (lambda _seq: False)
    hidden = build.sources.hidden
    shown = {e.seq for p in plan.recent for e in p.atom.events}
    missing = [
        seq
        for seq in range(start, end + 1)
        if seq not in shown and not is_covered(seq) and (hidden is None or not hidden(seq))
    ]
    if not missing:
        return
    marker = {"role": "system", "content": text.format(n=len(missing))}
    plan.recent.insert(0, marker_piece(marker, build.pricer.cost(marker)))
    plan.notes.append(text.format(n=len(missing)).strip("[]"))


def _covered(items: Sequence[SummaryItem]) -> Callable[[int], bool]:
    """Whether a seq lies in the ranges one of ``items`` covers."""
    ranges = [r for item in items for r in item.seq_ranges]
    return lambda seq: any(start <= seq <= end for start, end in ranges)
