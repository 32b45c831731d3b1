"""One build's working state: counting, rendering and fitting pieces into the budget.

:class:`~agentctx.context.builder.ContextBuilder` creates a :class:`Run` per call; the
run renders atoms as messages (``piece``), fits the system, summary and recent-core
sections into their allocations (shortening an oversized turn from its middle), places
the chosen older events, and trims the final messages until they fit.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from agentctx.context.config import ContextConfig
from agentctx.context.counting import RememberingCounter
from agentctx.context.render import event_text, render_events
from agentctx.context.strategies import BLOCK_HEADING, Candidate, compact_lines, piece_of
from agentctx.context.units import Atom, Unit
from agentctx.context.window import (
    ContextReport,
    DroppedEvent,
    SectionReport,
    TruncatedEvent,
)
from agentctx.context.window_images import WindowImages
from agentctx.events import Event, EventType
from agentctx.tokens import TokenCounter, message_tokens

if TYPE_CHECKING:
    from agentctx.context.builder import ContextBuilder

REPLY_PRIMING = 3
"""Tokens every chat request spends priming the reply (OpenAI's counting rules)."""

TOKENS_PER_RECENT = 1000
"""``adaptive``: unless ``min_recent`` is set, the recent core keeps at most one of its
messages per this many tokens of budget (the current turn always)."""


@dataclass
class Piece:
    """Rendered messages of one atom, with their cost."""

    atom: Atom
    messages: list[dict[str, Any]]
    tokens: int


@dataclass
class Plan:
    system: list[dict[str, Any]] = field(default_factory=list)
    system_ids: list[str] = field(default_factory=list)
    summary: list[dict[str, Any]] = field(default_factory=list)
    summary_ids: list[str] = field(default_factory=list)
    memories: dict[str, Any] | None = None
    block: list[Candidate] = field(default_factory=list)  # older events shown as dated lines
    extension: list[Candidate] = field(default_factory=list)  # older turns shown as messages
    recent: list[Piece] = field(default_factory=list)
    tail: list[dict[str, Any]] = field(default_factory=list)
    truncated: list[TruncatedEvent] = field(default_factory=list)
    dropped: dict[int, DroppedEvent] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)


class Run:
    """The working state of one build: counting, rendering, fitting."""

    def __init__(
        self,
        builder: ContextBuilder,
        counter: TokenCounter,
        *,
        config: ContextConfig,
        user_id: str,
        session_id: str,
        budget: int,
        known_counts: dict[str, int] | None = None,
    ) -> None:
        self.builder = builder
        self.counter: TokenCounter = RememberingCounter(counter, known_counts)
        self._raw_counter = counter  # handed to tool output compaction as configured
        self.config = config
        self.user_id = user_id
        self.session_id = session_id
        self.budget = budget
        self.max_message_tokens = config.max_message_tokens or max(32, budget // 2)
        self.skipped = 0
        self.search_ms = 0.0  # time in the retriever's index lookup (see older_candidates)
        self.fetched: dict[int, Event] = {}
        self.truncations: list[TruncatedEvent] = []
        self.dropped_events: dict[int, DroppedEvent] = {}
        self._tool_texts: dict[str, str] = {}  # event id -> window text, once per build
        self._tool_output: Callable[[Event, TokenCounter], str] | None = None
        # A flag, not the bound method: a method kept on self would make a reference
        # cycle, and every run (with all the events it read) would wait for the cyclic
        # garbage collector instead of being freed when the build returns.
        self._shortens_tool_output = builder.tool_output is not None
        self.images = WindowImages(builder, config, user_id, session_id)
        self._days: dict[date, str] = {}
        self._block: tuple[tuple[Candidate, ...], dict[str, Any]] | None = None

    # Reading ------------------------------------------------------------------------------

    def load_recent(
        self,
        needed_tokens: int,
        *,
        after_seq: int | None = None,
        hidden: Callable[[int], bool] | None = None,
    ) -> tuple[list[Event], bool]:
        """The newest events, enough to fill ``needed_tokens``; and whether that is all.

        ``after_seq``: only events after it (those before are archived into topics, which
        stand for them in the summary section). ``hidden``: seqs left out (folded into a
        summary that stands for them); they do not count towards ``needed_tokens``.
        """
        limit = 64
        first = (after_seq or 0) + 1
        start = first if after_seq else None
        read = self.builder._load(self.user_id, self.session_id, last=limit, start_seq=start)
        while True:
            events = [e for e in read if not hidden(e.seq)] if hidden is not None else read
            if len(read) < limit or (read and read[0].seq == first):
                return events, True
            have = sum(e.token_estimate for e in events)
            if have >= needed_tokens * 1.25:
                return events, False
            if self.config.strategy != "full" and limit >= 4096:
                return events, False
            # Jump to about as many events as the tokens still missing need (at what
            # the events read so far cost), rather than growing the tail step by step;
            # only the events before those already read are read.
            per_event = max(1.0, have / max(1, len(events)))
            wanted = int(needed_tokens * 1.25 / per_event * 1.2) + 1
            limit = max(limit * 2, min(wanted, limit * 16))
            older = self.builder._load(
                self.user_id,
                self.session_id,
                last=limit - len(read),
                start_seq=start,
                end_seq=read[0].seq - 1,
            )
            read = older + read

    def fetch(self, seqs: Sequence[int]) -> list[Event]:
        """Older events by seq (retrieved hits and their neighbours)."""
        wanted = [s for s in seqs if s not in self.fetched]
        if wanted:
            for event in self.builder._load(self.user_id, self.session_id, seqs=wanted):
                self.fetched[event.seq] = event
        return [self.fetched[s] for s in sorted(set(seqs)) if s in self.fetched]

    # Counting -----------------------------------------------------------------------------

    def cost(self, message: dict[str, Any]) -> int:
        """A message's tokens, framing included; images by the provider's formula."""
        content = message.get("content")
        if isinstance(content, list) and any(p.get("type") == "image_url" for p in content):
            text_only = dict(message)
            text_only["content"] = [p for p in content if p.get("type") != "image_url"]
            images = sum(
                self.images.cost(p["image_url"]["url"])
                for p in content
                if p.get("type") == "image_url"
            )
            return message_tokens(self.counter, text_only) + images
        return message_tokens(self.counter, message)

    def cost_all(self, messages: Sequence[dict[str, Any]]) -> int:
        return sum(self.cost(m) for m in messages)

    # Rendering ----------------------------------------------------------------------------

    def day_of(self, ts: datetime) -> str:
        """The day heading a block line goes under ("2024-03-01 (Friday)")."""
        day = ts.date()
        text = self._days.get(day)
        if text is None:
            text = self._days[day] = ts.strftime("%Y-%m-%d (%A)")
        return text

    def piece(self, atom: Atom) -> Piece:
        """An atom rendered as messages, over-long messages cut in the middle."""
        tool_text = self._shortened_tool_output if self._shortens_tool_output else None
        messages = render_events(atom.events, self.images.show, tool_text)
        for message in messages:
            self._limit_message(message, atom)
        return Piece(atom, messages, sum(self.cost(m) for m in messages))

    def tool_result_text(self, event: Event) -> str:
        """What a window shows of a tool result: compressed or previewed by its tool's
        strategy when tool output compaction is on, else its whole text."""
        if self._shortens_tool_output:
            return self._shortened_tool_output(event)
        return event_text(event)

    def _shortened_tool_output(self, event: Event) -> str:
        text = self._tool_texts.get(event.event_id)
        if text is None:
            if self._tool_output is None:
                assert self.builder.tool_output is not None
                self._tool_output = self.builder.tool_output(self.user_id, self.session_id)
            text = self._tool_texts[event.event_id] = self._tool_output(event, self._raw_counter)
        return text

    def _limit_message(self, message: dict[str, Any], atom: Atom) -> None:
        content = message.get("content")
        if not isinstance(content, str) or not content:
            return
        before = self.counter.count(content)
        if before <= self.max_message_tokens:
            return
        message["content"] = self.counter.truncate(content, self.max_message_tokens)
        event = atom.events[0] if len(atom.events) == 1 else _owner(atom, content)
        self.truncations.append(
            TruncatedEvent(
                event_id=event.event_id,
                seq=event.seq,
                tokens_before=before,
                tokens_after=self.counter.count(message["content"]),
            )
        )

    # Fitting ------------------------------------------------------------------------------

    def split_core(self, units: list[Unit]) -> tuple[list[Unit], list[Unit]]:
        """The recent core (always kept) and the units older than it."""
        if not units:
            return [], []
        strategy = self.config.strategy
        if strategy == "full":
            want = self.config.full.max_messages
        elif strategy == "compressed":
            want = self.config.compressed.recent_messages
        else:
            # By default a small window guarantees fewer messages: at 1,000 tokens three
            # chat messages can take a fifth of it. The others still compete for the
            # room (by recency, and by relevance when there is a query). A min_recent
            # that was set is kept as set.
            adaptive = self.config.adaptive
            want = adaptive.min_recent
            if "min_recent" not in adaptive.model_fields_set:
                want = min(want, max(1, self.budget // TOKENS_PER_RECENT))
        core = [units[-1]]
        count = _message_count(units[-1])
        index = len(units) - 2
        while index >= 0 and count < want:
            core.insert(0, units[index])
            count += _message_count(units[index])
            index -= 1
        return core, units[: index + 1]

    def fit_system(self, plan: Plan, allowed: int) -> None:
        """Drop the pinned instruction, then the task, then cut the system prompt."""
        while plan.tail and self.cost_all(plan.system) + self.cost_all(plan.tail) > allowed:
            plan.notes.append("left out to fit: " + plan.tail[-1]["content"].split("]")[0][1:])
            plan.tail.pop()
        if plan.system and self.cost_all(plan.system) + self.cost_all(plan.tail) > allowed:
            prompt = plan.system[0]
            framing = self.cost(prompt) - self.counter.count(prompt["content"])
            room = allowed - self.cost_all(plan.tail) - framing
            prompt["content"] = self.counter.truncate(prompt["content"], max(1, room))
            plan.notes.append("system prompt cut to fit its share")
            if self.cost_all(plan.system) + self.cost_all(plan.tail) > allowed:
                plan.system.clear()
                plan.notes.append("system prompt left out: the budget is too small")

    def fit_summary(self, plan: Plan, allowed: int) -> None:
        """Oldest summaries go first when they do not all fit."""
        costs = [self.cost(message) for message in plan.summary]  # each counted once
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

    def fit_core(self, core: list[Unit], pieces: list[Piece], allowed: int) -> list[Piece]:
        """The recent core within ``allowed``: older core turns go first, then the current
        turn is shortened from its middle, with a marker saying what was left out."""
        kept = list(pieces)
        # Whole turns go, oldest first; the current turn stays.
        for unit in core[:-1]:
            if sum(p.tokens for p in kept) <= allowed:
                break
            atoms = {id(a) for a in unit.atoms}
            for piece in [p for p in kept if id(p.atom) in atoms]:
                kept.remove(piece)
                self._drop(piece.atom, "budget")
        if sum(p.tokens for p in kept) <= allowed:
            return kept
        return self._shorten_turn(kept, allowed)

    def _shorten_turn(self, pieces: list[Piece], allowed: int) -> list[Piece]:
        omitted: list[Piece] = []
        kept = list(pieces)
        total = sum(p.tokens for p in kept)
        # The marker's cost with the largest count it could show: an upper bound, so the
        # loop needs no recount per step (a turn of thousands of events stays linear).
        marker_bound = self.cost(self._marker(pieces))
        while len(kept) > 2 and total + (marker_bound if omitted else 0) > allowed:
            middle = kept.pop(len(kept) // 2)
            total -= middle.tokens
            omitted.append(middle)
            self._drop(middle.atom, "budget")
        if omitted:
            first_omitted = min(p.atom.first_seq for p in omitted)
            marker = self._marker(omitted)
            position = next(
                (i for i, p in enumerate(kept) if p.atom.first_seq > first_omitted), len(kept)
            )
            marker_atom = Atom([])
            kept.insert(position, Piece(marker_atom, [marker], self.cost(marker)))
        # Still too big (one or two huge atoms): cut their messages.
        while sum(p.tokens for p in kept) > allowed:
            biggest = max(kept, key=lambda p: p.tokens)
            over = sum(p.tokens for p in kept) - allowed
            if not self._cut(biggest, over):
                kept.remove(biggest)
                if biggest.atom.events:
                    self._drop(biggest.atom, "budget")
                if not kept:
                    break
        return kept

    def _marker(self, omitted: list[Piece]) -> dict[str, Any]:
        events = sum(len(p.atom.events) for p in omitted)
        return {
            "role": "system",
            "content": f"[… {events} events of this turn omitted to fit the budget …]",
        }

    def _cut(self, piece: Piece, over: int) -> bool:
        """Shorten the longest text message of ``piece`` by about ``over`` tokens."""
        texts = [m for m in piece.messages if isinstance(m.get("content"), str) and m["content"]]
        if not texts:
            return False
        message = max(texts, key=lambda m: len(m["content"]))
        current = self.counter.count(message["content"])
        target = current - over - 1
        if target < 8:
            return False
        message["content"] = self.counter.truncate(message["content"], target)
        piece.tokens = sum(self.cost(m) for m in piece.messages)
        if piece.atom.events:
            event = piece.atom.events[0]
            self.truncations.append(
                TruncatedEvent(
                    event_id=event.event_id,
                    seq=event.seq,
                    tokens_before=current,
                    tokens_after=self.counter.count(message["content"]),
                )
            )
        return True

    def _drop(self, atom: Atom, reason: str) -> None:
        for event in atom.events:
            self.dropped_events[event.seq] = DroppedEvent(
                event_id=event.event_id,
                seq=event.seq,
                reason=reason,
            )

    def place_older(self, plan: Plan, chosen: list[Candidate], core_start: int | None) -> None:
        """Chosen older atoms adjoining the recent window extend it as messages; the rest
        go, oldest first and dated, into one retrieved block."""
        by_seq = sorted(chosen, key=lambda c: c.atom.first_seq)
        extending: list[Candidate] = []
        boundary = core_start
        for candidate in reversed(by_seq):
            if boundary is not None and candidate.contiguous_before == boundary:
                piece_of(self, candidate)
                extending.insert(0, candidate)
                boundary = candidate.atom.first_seq
        extended = {id(c) for c in extending}
        block = [c for c in by_seq if id(c) not in extended and c.lines]
        for candidate in by_seq:
            if id(candidate) not in extended and not candidate.lines:
                self._drop(candidate.atom, "budget")
        plan.recent = [c.piece for c in extending if c.piece is not None] + plan.recent
        plan.extension = [c for c in extending if c.piece is not None]
        plan.block = block

    def block_message(self, plan: Plan) -> dict[str, Any] | None:
        """The retrieved block: every chosen older event as a dated line, oldest first."""
        if not plan.block:
            return None
        # Asked for several times per build (fitting, the final count, the report), and
        # rendering sorts every line: the last rendering is kept for the same lines.
        key = tuple(plan.block)
        if self._block is None or self._block[0] != key:
            lines = compact_lines(plan.block, self.config)
            self._block = (
                key,
                {"role": "system", "content": BLOCK_HEADING + "\n" + "\n".join(lines)},
            )
        return self._block[1]

    def retrieved_messages(self, plan: Plan) -> list[dict[str, Any]]:
        block = self.block_message(plan)
        return [m for m in (plan.memories, block) if m is not None]

    def messages_of(self, plan: Plan) -> list[dict[str, Any]]:
        """The window's messages as planned so far, in their final order."""
        return (
            plan.system
            + plan.summary
            + self.retrieved_messages(plan)
            + [m for p in plan.recent for m in p.messages]
            + plan.tail
        )

    def planned_tokens(self, plan: Plan) -> int:
        """What :meth:`messages_of` would cost, reply priming included. A piece's tokens
        are its messages' costs (kept so when it is cut), so the recent window, often
        hundreds of messages, is not counted again on each pass of :meth:`finish`."""
        fixed = plan.system + plan.summary + self.retrieved_messages(plan) + plan.tail
        return self.cost_all(fixed) + sum(p.tokens for p in plan.recent) + REPLY_PRIMING

    def finish(self, plan: Plan) -> tuple[list[dict[str, Any]], int]:
        """The final messages, counted; trimmed until they fit the budget."""
        while True:
            tokens = self.planned_tokens(plan)
            if tokens <= self.budget:
                return self.messages_of(plan), tokens
            # Over (tokenizers do not add up exactly, and a long block is estimated from
            # samples): drop the least important pieces, lines of the block or the oldest
            # turn extending the recent window, about as many as the excess, then count
            # again (one at a time would count the whole window once per line).
            removable = plan.block + plan.extension[:1]
            if removable:
                excess = tokens - self.budget
                for weakest in sorted(removable, key=lambda c: (c.score, c.atom.first_seq)):
                    self._drop(weakest.atom, "budget")
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
                self._drop(piece.atom, "budget")
            elif plan.tail:
                plan.tail.pop()
            elif plan.summary:
                plan.summary.pop(0)
            elif plan.recent and self._cut(plan.recent[0], tokens - self.budget):
                continue
            elif plan.system:
                plan.system.pop()
            elif plan.recent:
                piece = plan.recent.pop()
                self._drop(piece.atom, "budget")
            else:
                return [], REPLY_PRIMING

    def report(
        self,
        plan: Plan,
        alloc: dict[str, int],
        messages: list[dict[str, Any]],
        tokens: int,
        *,
        query: str | None,
        not_considered: int,
        timings: dict[str, float],
    ) -> ContextReport:
        recent_ids = [e.event_id for p in plan.recent for e in p.atom.events]
        retrieved_ids = [e.event_id for c in plan.block for e in c.atom.events]
        included = set(recent_ids) | set(retrieved_ids)
        sections = [
            SectionReport(
                name="system",
                allocated=alloc["system"],
                tokens=self.cost_all(plan.system) + self.cost_all(plan.tail),
                messages=len(plan.system) + len(plan.tail),
            ),
            SectionReport(
                name="summary",
                allocated=alloc["summary"],
                tokens=self.cost_all(plan.summary),
                messages=len(plan.summary),
                event_ids=tuple(plan.summary_ids),
            ),
            SectionReport(
                name="retrieved",
                allocated=alloc["retrieved"],
                tokens=self.cost_all(self.retrieved_messages(plan)),
                messages=len(self.retrieved_messages(plan)),
                event_ids=tuple(retrieved_ids),
            ),
            SectionReport(
                name="recent",
                allocated=alloc["recent"] + alloc["input"],
                tokens=sum(p.tokens for p in plan.recent),
                messages=sum(len(p.messages) for p in plan.recent),
                event_ids=tuple(recent_ids),
            ),
        ]
        dropped = {**plan.dropped, **self.dropped_events}
        return ContextReport(
            strategy=self.config.strategy,
            budget=self.budget,
            tokens=tokens,
            tokenizer=self.counter.name,
            query=query,
            sections=tuple(sections),
            included_event_ids=tuple(
                e.event_id
                for e in sorted(
                    [e for p in plan.recent for e in p.atom.events]
                    + [e for c in plan.block for e in c.atom.events],
                    key=lambda e: e.seq,
                )
            ),
            dropped=tuple(d for seq, d in sorted(dropped.items()) if d.event_id not in included),
            truncated=tuple(self.truncations),
            not_considered=not_considered + self.skipped,
            notes=tuple(plan.notes),
            timings_ms=timings,
            images=self.images.report(messages),
        )


def first_seq(pieces: list[Piece]) -> int | None:
    """The first seq the recent window shows (markers have none)."""
    return next((p.atom.first_seq for p in pieces if p.atom.events), None)


def _owner(atom: Atom, content: str) -> Event:
    for event in atom.events:
        if event.text and event.text[:50] in content:
            return event
    return atom.events[0]


def _message_count(unit: Unit) -> int:
    return sum(1 for e in unit.events if e.type not in (EventType.STATE_DELTA, EventType.SUMMARY))


def input_tokens(core: list[Unit], pieces: list[Piece]) -> int:
    """Tokens of the current input: the newest turn's opening user message."""
    if not core or not pieces:
        return 0
    first = core[-1].atoms[0]
    if first.events[0].type is not EventType.USER_INPUT:
        return 0
    return next((p.tokens for p in pieces if p.atom is first), 0)


def goal_of(task: Any, units: list[Unit], query: str | None = None) -> tuple[str | None, str]:
    """The goal the pinned instruction names: the active task's, else the query the
    window is built for, else the latest user input."""
    if task is not None:
        return task.goal, task.status
    if query and query.strip():
        return query.strip()[:500], "active"
    for unit in reversed(units):
        for event in reversed(unit.events):
            if event.type is EventType.USER_INPUT and event.text:
                return event.text[:500], "active"
    return None, "active"


def elapsed_ms(since: float) -> float:
    return round((time.perf_counter() - since) * 1000, 3)
