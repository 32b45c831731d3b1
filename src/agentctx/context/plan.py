"""A window being planned: its sections in their final order, and the fitting of each into
what it was given.

Every strategy fills a :class:`Plan`; the order of its sections is the window's:

1. ``system``: the system prompt and the session's own system events;
2. ``summary``: the compacted past (topic, fold and thread summaries; the digest of turns
   that left the history);
3. ``recent``: the history as chat messages, whole turns;
4. ``block``: older events relevant to the query, as dated lines;
5. ``memories``: long-term memories;
6. ``tail``: the active task and the pinned instruction.

The first three change only when the history slides or compaction runs; what varies
per call comes after them, so consecutive windows share their start.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentctx.context.budget import allocate
from agentctx.context.lines import BLOCK_HEADING, block_text, piece_of
from agentctx.context.pieces import Candidate, Piece
from agentctx.context.pricing import Pricer

REPLY_PRIMING = 3
"""Tokens every chat request spends priming the reply (OpenAI's counting rules)."""


@dataclass
class Plan:
    """The sections of a window as planned, with what each was allotted."""

    system: list[dict[str, Any]] = field(default_factory=list)
    summary: list[dict[str, Any]] = field(default_factory=list)
    summary_ids: list[str] = field(default_factory=list)
    recent: list[Piece] = field(default_factory=list)
    block: list[Candidate] = field(default_factory=list)  # older events shown as dated lines
    extension: list[Candidate] = field(default_factory=list)  # older turns shown as messages
    memories: dict[str, Any] | None = None
    tail: list[dict[str, Any]] = field(default_factory=list)
    allocated: dict[str, int] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    block_heading: str = BLOCK_HEADING
    _block: tuple[tuple[Candidate, ...], dict[str, Any]] | None = None

    def block_message(self) -> dict[str, Any] | None:
        """The retrieved block: every chosen older event as a dated line, oldest first."""
        if not self.block:
            return None
        # Asked for several times per build (fitting, the final count, the report), and
        # rendering sorts every line: the last rendering is kept for the same lines.
        key = tuple(self.block)
        if self._block is None or self._block[0] != key:
            lines = [line for candidate in self.block for line in candidate.lines]
            self._block = (
                key,
                {"role": "system", "content": block_text(self.block_heading, lines)},
            )
        return self._block[1]

    def varying(self) -> list[dict[str, Any]]:
        """The messages after the history: the retrieved block and the memories."""
        block = self.block_message()
        return [m for m in (block, self.memories) if m is not None]

    def messages(self) -> list[dict[str, Any]]:
        """The window's messages as planned so far, in their final order."""
        return (
            self.system
            + self.summary
            + [m for p in self.recent for m in p.messages]
            + self.varying()
            + self.tail
        )

    def tokens(self, pricer: Pricer) -> int:
        """What :meth:`messages` cost, reply priming included. A piece's tokens are its
        messages' costs (kept so when it is cut), so the history, often hundreds of
        messages, is not counted again on each pass of :func:`finish`."""
        fixed = self.system + self.summary + self.varying() + self.tail
        return pricer.cost_all(fixed) + sum(p.tokens for p in self.recent) + REPLY_PRIMING


# Fitting the stable sections ------------------------------------------------------------


def fit_system(plan: Plan, pricer: Pricer, allowed: int) -> None:
    """Cut the system messages (the prompt first, from its middle) to ``allowed``."""
    while plan.system and pricer.cost_all(plan.system) > allowed:
        longest = max(plan.system, key=lambda m: len(str(m.get("content") or "")))
        over = pricer.cost_all(plan.system) - allowed
        content = str(longest.get("content") or "")
        keep = pricer.counter.count(content) - over - 1
        if keep < 8 or (len(plan.system) > 1 and keep < 32):
            plan.system.remove(longest)
            plan.notes.append("a system message was left out: the budget is too small")
            continue
        longest["content"] = pricer.counter.truncate(content, keep)
        plan.notes.append("the system prompt was cut in its middle to fit its share")


def fit_tail(plan: Plan, pricer: Pricer, allowed: int) -> None:
    """Drop the pinned instruction, then the task, until the tail fits ``allowed``."""
    while plan.tail and pricer.cost_all(plan.tail) > allowed:
        plan.notes.append("left out to fit: " + plan.tail[-1]["content"].split("]")[0][1:])
        plan.tail.pop()


def fit_summary(plan: Plan, pricer: Pricer, allowed: int) -> None:
    """Oldest summaries go first when they do not all fit."""
    costs = [pricer.cost(message) for message in plan.summary]  # each counted once
    total = sum(costs)
    left_out = 0
    while left_out < len(costs) and total > allowed:
        total -= costs[left_out]
        left_out += 1
    if left_out:
        del plan.summary[:left_out]
        del plan.summary_ids[:left_out]
        plan.notes.append(
            "a summary was left out to fit"
            if left_out == 1
            else f"{left_out} summaries were left out to fit"
        )


def fit_by_shares(
    plan: Plan, pricer: Pricer, split: dict[str, float], demands: dict[str, int]
) -> dict[str, int]:
    """Seed 002's split of the budget among sections that may need less than their share
    (``budget.allocate``); the system section (with the tail), the summaries fitted to
    theirs. Returns the allocations; the history's is ``recent`` plus ``input``."""
    alloc = allocate(pricer.budget - REPLY_PRIMING, split, demands)
    plan.allocated = {
        "system": alloc["system"],
        "summary": alloc["summary"],
        "retrieved": alloc["retrieved"],
        "recent": alloc["recent"] + alloc["input"],
    }
    fit_tail(plan, pricer, alloc["system"])
    fit_system(plan, pricer, max(0, alloc["system"] - pricer.cost_all(plan.tail)))
    fit_summary(plan, pricer, alloc["summary"])
    return alloc


# Older events ---------------------------------------------------------------------------


def place_older(
    plan: Plan, pricer: Pricer, chosen: list[Candidate], core_start: int | None
) -> None:
    """Chosen older atoms adjoining the history extend it as messages; the rest go,
    oldest first and dated, into the retrieved block."""
    by_seq = sorted(chosen, key=lambda c: c.atom.first_seq)
    extending: list[Candidate] = []
    boundary = core_start
    for candidate in reversed(by_seq):
        if boundary is not None and candidate.contiguous_before == boundary:
            piece_of(pricer, candidate)
            extending.insert(0, candidate)
            boundary = candidate.atom.first_seq
    extended = {id(c) for c in extending}
    block = [c for c in by_seq if id(c) not in extended and c.lines]
    for candidate in by_seq:
        if id(candidate) not in extended and not candidate.lines:
            pricer.drop(candidate.atom, "budget")
    plan.recent = [c.piece for c in extending if c.piece is not None] + plan.recent
    plan.extension = [c for c in extending if c.piece is not None]
    plan.block = block


def first_seq(pieces: list[Piece]) -> int | None:
    """The first seq the history shows (markers have none)."""
    return next((p.atom.first_seq for p in pieces if p.atom.events), None)


# Finishing ------------------------------------------------------------------------------


def finish(plan: Plan, pricer: Pricer) -> tuple[list[dict[str, Any]], int]:
    """The final messages, counted; trimmed until they fit the budget.

    Tokenizers do not add up exactly (a long block is priced from its lines), so the
    window is counted whole and, if over, the least important pieces go: lines of the
    block or the oldest turn extending the history, then memories, then the oldest
    turns of the history, the tail, the summaries, the newest turn cut, and at last the
    system prompt.
    """
    budget = pricer.budget
    while True:
        tokens = plan.tokens(pricer)
        if tokens <= budget:
            return plan.messages(), tokens
        removable = plan.block + plan.extension[:1]
        if removable:
            excess = tokens - budget
            for weakest in sorted(removable, key=lambda c: (c.score, c.atom.first_seq)):
                pricer.drop(weakest.atom, "budget")
                excess -= max(1, weakest.tokens or 0)
                if weakest in plan.extension:
                    plan.extension.remove(weakest)
                    plan.recent = [p for p in plan.recent if p is not weakest.piece]
                    break  # the next oldest extension becomes removable only now
                plan.block.remove(weakest)
                if excess <= 0:
                    break
        elif plan.memories is not None:
            plan.memories = None
            plan.notes.append("memories left out to fit")
        elif len(plan.recent) > 1:
            piece = plan.recent.pop(0)
            pricer.drop(piece.atom, "budget")
        elif plan.tail:
            plan.tail.pop()
        elif plan.summary:
            plan.summary.pop(0)
            if plan.summary_ids:
                plan.summary_ids.pop(0)
        elif plan.recent and pricer.cut(plan.recent[0], tokens - budget):
            continue
        elif plan.system:
            plan.system.pop()
        elif plan.recent:
            piece = plan.recent.pop()
            pricer.drop(piece.atom, "budget")
        else:
            return [], REPLY_PRIMING
