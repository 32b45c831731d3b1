"""``build_context``: the window an agent sends before every model call.

The order of work:

1. read the newest events (enough to fill the budget, never the whole history) and
   group them into turns and atoms (``units``);
2. measure every section's demand: system prompt, active task and pinned instruction
   (``system``), summaries, memories and older events (``retrieved``), the recent core
   (the current turn and the minimum recent messages) and the current input;
3. split the budget (``budget.allocate``): shares from configuration, unused shares
   flow to sections that want more;
4. fill: the core first (the current turn shortened from its middle if it alone is
   too big), then older events by the strategy's order (``strategies``), then render;
5. count the final messages with the configured tokenizer, including message framing,
   and drop the least important pieces until the total is within budget.

Rendering is deterministic, and the stable parts (system prompt, summaries) come
first so provider prompt caches hit; dated, query-dependent parts come after them.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentctx.context.budget import allocate
from agentctx.context.config import ContextConfig
from agentctx.context.images import RenderedImageCache
from agentctx.context.run import (
    REPLY_PRIMING,
    Piece,
    Plan,
    Run,
    elapsed_ms,
    first_seq,
    goal_of,
    input_tokens,
)
from agentctx.context.sources import (
    MemoryItem,
    MemorySource,
    Retriever,
    SummaryItem,
    SummarySource,
    ToolOutput,
)
from agentctx.context.strategies import (
    BLOCK_HEADING,
    choose_older,
    estimated_tokens,
    least_cost,
    line_limit,
    measure,
    older_candidates,
    query_terms_of,
)
from agentctx.context.task import render_pinned_instruction, render_task, task_from_state
from agentctx.context.units import Atom, units_of
from agentctx.context.window import (
    ContextWindow,
    DroppedEvent,
)
from agentctx.errors import InvalidInput
from agentctx.events import Event, ImagePart
from agentctx.storage.images import ImageState
from agentctx.tokens import TokenCounter

MIN_BUDGET = 50

RECENT_READ_WHEN_SEARCHING = 1 / 3
"""With a query, the part of the recent share read from the newest events.

Beyond the recent core those events compete with the search's hits on recency alone (a
tenth of a hit's weight), and the search covers their span as well, finding the ones
that matter. On the development chats reading the whole share put more unrelated recent
turns in 8k windows (evidence recall 0.938, against 0.946 reading a third) and read
twice as many events.
"""

EventLoader = Callable[..., list[Event]]


SUMMARY_LABELS = {
    "topic": "Topic summary",
    "thread": "Conversation summary",
    "fold": "Earlier conversation, folded",
}
"""How each kind of summary is introduced in the summary section."""


RETRACTED_KEY = "retracted_events"


def retracted_seqs(state: Mapping[str, Any]) -> Callable[[int], bool] | None:
    """Whether a seq is one the session state lists as retracted (None: none is).

    The log is append-only: an item an agent takes back (the OpenAI Agents SDK's
    ``pop_item``) stays stored, and ``state["retracted_events"]`` (``[{"event_id",
    "seq"}]``) keeps it out of every window, recent and retrieved.
    """
    entries = state.get(RETRACTED_KEY)
    retracted = {
        int(entry["seq"])
        for entry in entries or ()
        if isinstance(entry, Mapping) and isinstance(entry.get("seq"), int)
    }
    return retracted.__contains__ if retracted else None


def folded(items: Sequence[SummaryItem]) -> Callable[[int], bool] | None:
    """Whether a seq is covered by one of the fold summaries in ``items`` (None: none).

    A fold stands for the events it covers, so the recent window leaves them out; other
    summaries (thread, topic) sit beside the events they cover.
    """
    ranges: list[tuple[int, int]] = []
    for start, end in sorted(r for item in items if item.kind == "fold" for r in item.seq_ranges):
        if ranges and start <= ranges[-1][1] + 1:  # overlapping or adjacent: one range
            ranges[-1] = (ranges[-1][0], max(ranges[-1][1], end))
        else:
            ranges.append((start, end))
    if not ranges:
        return None
    starts = [start for start, _ in ranges]

    def covered(seq: int) -> bool:
        i = bisect.bisect_right(starts, seq) - 1
        return i >= 0 and ranges[i][0] <= seq <= ranges[i][1]

    return covered


MEMORY_LIMIT = 20
"""Most memories a window asks its memory source for."""
MEMORY_HEADING = (
    "## Memory (Verified)\n"
    "Learned from earlier sessions; suggestions, not facts about this conversation."
)


def memory_line(item: MemoryItem) -> str:
    """One memory as the window shows it, citing where it came from (seed 003 A.1.9)."""
    facts = [item.kind]
    if item.support is not None:
        facts.append(f"{item.support} session{'s' if item.support != 1 else ''}")
    if item.confidence is not None:
        facts.append(f"confidence {item.confidence:.2f}")
    if item.provenance:
        facts.append(f"from {item.provenance}")
    return f"- {item.text} ({'; '.join(facts)})"


def memory_block(
    run: Run, items: Sequence[MemoryItem], max_tokens: int | None
) -> dict[str, Any] | None:
    """The ``## Memory (Verified)`` message: the best memories that fit ``max_tokens``."""
    lines: list[str] = []
    message: dict[str, Any] | None = None
    for item in items:
        candidate = {
            "role": "system",
            "content": "\n".join([MEMORY_HEADING, *lines, memory_line(item)]),
        }
        if max_tokens is not None and run.cost(candidate) > max_tokens:
            break
        lines.append(memory_line(item))
        message = candidate
    return message


class ContextBuilder:
    """Assembles windows for one engine. Keeps only caches between calls (images
    rendered, token counts of short texts); thread-safe."""

    def __init__(
        self,
        *,
        load_events: EventLoader,
        counter_for: Callable[[str], TokenCounter],
        image_bytes: Callable[[str, ImagePart], bytes] | None = None,
        retriever: Retriever | None = None,
        summaries: SummarySource | None = None,
        memories: MemorySource | None = None,
        tool_output: ToolOutput | None = None,
        archived_through: Callable[[str, str], int | None] | None = None,
        image_states: Callable[[str, str], Mapping[tuple[str, int], ImageState]] | None = None,
    ) -> None:
        self._load = load_events
        self._counter_for = counter_for
        self._image_bytes = image_bytes
        self.retriever = retriever
        self.summaries = summaries
        self.memories = memories
        self.tool_output = tool_output
        # Topic archiving: events up to this seq are stood for by topic summaries, and
        # the recent window begins after them (seed 001: topics + unarchived messages).
        self.archived_through = archived_through
        # Visual compaction: the frame and flag of each image of ended turns, by (event
        # id, part index); and the downscaled copies of the images windows show.
        self.image_states = image_states
        self.rendered_images = RenderedImageCache()
        # Token counts of short texts, per tokenizer spec (see RememberingCounter).
        self._known_counts: dict[str, dict[str, int]] = {}

    def build(
        self,
        *,
        user_id: str,
        session_id: str,
        agent_id: str,
        state: dict[str, Any],
        config: ContextConfig,
        query: str | None,
        budget: int,
        system_prompt: str | None,
    ) -> ContextWindow:
        """The window for one model call (see the module docstring for the steps)."""
        if budget < MIN_BUDGET:
            raise InvalidInput(f"budget must be at least {MIN_BUDGET} tokens, got {budget}")
        started = time.perf_counter()
        timings: dict[str, float] = {}
        counter = self._counter_for(config.tokenizer)
        run = Run(
            self,
            counter,
            config=config,
            user_id=user_id,
            session_id=session_id,
            budget=budget,
            known_counts=self._known_counts.setdefault(config.tokenizer, {}),
        )

        # With a query and an index, older events come from the search (which covers the
        # recent span too): the newest events are read only for part of the recent share.
        searching = (
            query is not None
            and self.retriever is not None
            and config.sections.retrieved
            and config.strategy in ("adaptive", "semantic")
        )
        recent_share = config.budget_split.get("recent", 0.0) + config.budget_split.get(
            "input", 0.0
        )
        through = (
            self.archived_through(user_id, session_id)
            if self.archived_through is not None and config.sections.summaries
            else None
        )
        summary_items = (
            list(self.summaries.summaries(user_id, session_id))
            if config.sections.summaries and self.summaries is not None
            else []
        )
        retracted = retracted_seqs(state)
        hidden = folded(summary_items)
        if retracted is not None:
            fold_hidden = hidden
            hidden = (
                retracted if fold_hidden is None else lambda seq: retracted(seq) or fold_hidden(seq)
            )
        events, complete = run.load_recent(
            int(budget * recent_share * RECENT_READ_WHEN_SEARCHING) if searching else budget,
            after_seq=through,
            hidden=hidden,
        )
        timings["load_ms"] = elapsed_ms(started)
        units = units_of(events)
        if not complete and len(units) > 1:
            dropped_partial = units.pop(0)  # may begin mid-turn: the window never does
            run.skipped = len(dropped_partial.events)
        last_seq = events[-1].seq if events else 0

        plan = Plan()
        sections = config.sections
        wants_task = sections.active_task or sections.pinned_instruction
        task = task_from_state(state) if wants_task else None
        if sections.system and system_prompt:
            plan.system.append({"role": "system", "content": system_prompt})
        for item in summary_items:
            label = SUMMARY_LABELS.get(item.kind, "Conversation summary")
            plan.summary.append({"role": "system", "content": f"[{label}] {item.text}"})
            plan.summary_ids.append(item.summary_id)
        memory_items: list[MemoryItem] = []
        if sections.memories and self.memories is not None:
            memories_started = time.perf_counter()
            try:
                memory_items = list(
                    self.memories.memories(user_id, agent_id, query, limit=MEMORY_LIMIT)
                )
            except TimeoutError as exc:
                # Seed 002: retrieval has a deadline; past it the window goes without.
                plan.notes.append(f"memories left out: {exc}")
            timings["memories_ms"] = elapsed_ms(memories_started)
        if task is not None and sections.active_task:
            plan.tail.append({"role": "system", "content": render_task(task)})
        if sections.pinned_instruction:
            goal, status = goal_of(task, units, query)
            if goal:
                plan.tail.append(
                    {"role": "system", "content": render_pinned_instruction(goal, status)}
                )

        # With a query, the events that answer it outrank summaries of the past: the
        # summaries take only the room retrieval leaves, so compaction never costs a
        # window its evidence (in 1k-token windows for questions, a summary share had
        # cost 0.05-0.06 of evidence recall).
        deferred_summary = (plan.summary, plan.summary_ids) if searching else None
        if deferred_summary is not None:
            plan.summary, plan.summary_ids = [], []

        core, rest = run.split_core(units) if sections.recent else ([], units)
        core_pieces = [run.piece(atom) for unit in core for atom in unit.atoms]
        input_cost = input_tokens(core, core_pieces)
        memories_message = (
            memory_block(run, memory_items, self.memories.max_tokens)
            if memory_items and self.memories is not None
            else None
        )
        memory_tokens = run.cost(memories_message) if memories_message else 0

        timings["retrieve_ms"] = 0.0
        retrieve_started = time.perf_counter()
        candidates = older_candidates(
            run,
            rest,
            core_start=core[0].first_seq if core else last_seq + 1,
            query=query if sections.retrieved else None,
            retriever=self.retriever if sections.retrieved else None,
            hidden=hidden,
            retracted=retracted,
        )
        timings["retrieve_ms"] = elapsed_ms(retrieve_started)
        timings["search_ms"] = round(run.search_ms, 3)  # the index lookup within retrieve_ms

        demands = {
            "system": run.cost_all(plan.system) + run.cost_all(plan.tail),
            "summary": run.cost_all(plan.summary),
            "retrieved": (0 if searching else memory_tokens)
            + sum(estimated_tokens(c) for c in candidates),
            "recent": sum(p.tokens for p in core_pieces) - input_cost,
            "input": input_cost,
        }
        shares = config.budget_split
        alloc = allocate(budget - REPLY_PRIMING, shares, demands)

        run.fit_system(plan, alloc["system"])
        run.fit_summary(plan, alloc["summary"])
        core_budget = alloc["recent"] + alloc["input"]
        plan.recent = run.fit_core(core, core_pieces, core_budget)
        used = (
            run.cost_all(plan.system)
            + run.cost_all(plan.tail)
            + run.cost_all(plan.summary)
            + sum(p.tokens for p in plan.recent)
        )
        room = budget - REPLY_PRIMING - used
        # With a query, memories (like summaries) take only the room retrieval leaves:
        # evidence from this session's log outranks what was learned elsewhere.
        deferred_memories = memories_message if searching else None
        if deferred_memories is None and memories_message is not None and memory_tokens <= room:
            plan.memories = memories_message
            room -= memory_tokens
        heading = {"role": "system", "content": BLOCK_HEADING + "\n"}
        terms = query_terms_of(query)
        limit = line_limit(run)
        chosen, not_chosen = choose_older(
            candidates,
            room,
            config,
            run.cost(heading),
            cost_of=lambda c: measure(run, c, terms),
            least_cost_of=lambda c: least_cost(c, limit),
            heading_cost=lambda day: run.counter.count(f"## {day}"),
        )
        for candidate in not_chosen:
            for event in candidate.atom.events:
                plan.dropped[event.seq] = DroppedEvent(
                    event_id=event.event_id, seq=event.seq, reason=candidate.drop_reason
                )
        run.place_older(plan, chosen, core_start=first_seq(plan.recent))
        if deferred_memories is not None:
            left = budget - run.planned_tokens(plan)
            if memory_tokens <= left:
                plan.memories = deferred_memories
        if deferred_summary is not None:
            left = budget - run.planned_tokens(plan)
            plan.summary, plan.summary_ids = deferred_summary
            run.fit_summary(plan, max(0, left))
        shown_from = first_seq(plan.recent)
        if config.strategy == "full" and shown_from is not None and shown_from > 1:
            earlier = shown_from - 1
            marker = {
                "role": "system",
                "content": f"[Earlier conversation truncated: {earlier} events]",
            }
            plan.recent.insert(0, Piece(Atom([]), [marker], run.cost(marker)))

        messages, tokens = run.finish(plan)
        timings["total_ms"] = elapsed_ms(started)
        considered = len(events) + len(run.fetched)
        report = run.report(
            plan,
            alloc,
            messages,
            tokens,
            query=query,
            not_considered=max(0, last_seq - considered),
            timings=timings,
        )
        return ContextWindow(messages, tokens, report)
