"""Stage 1: what a window can be made of, read from what is already prepared.

:func:`gather` reads the system prompt and the session's own system events, the
summaries that stand for compacted events, which seqs a window must leave out (folded,
retracted), the active task and the long-term memories relevant to the query. Nothing
here waits for a model: summaries and memories were made off the call path. The
history itself is read by each strategy, which knows how much of it it needs.
"""

from __future__ import annotations

import bisect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentctx.context.config import ContextConfig
from agentctx.context.reader import LogReader
from agentctx.context.render import event_text
from agentctx.context.sources import LogHead, MemoryItem, MemorySource, SummaryItem, SummarySource
from agentctx.context.task import (
    ActiveTask,
    render_pinned_instruction,
    render_task,
    task_from_state,
)
from agentctx.context.units import Unit
from agentctx.events import EventType

RETRACTED_KEY = "retracted_events"

SUMMARY_LABELS = {
    "topic": "Topic summary",
    "thread": "Conversation summary",
    "fold": "Earlier conversation, folded",
}
"""How each kind of summary is introduced in the summary section."""

MEMORY_LIMIT = 20
"""Most memories a window asks its memory source for."""

MEMORY_HEADING = (
    "## Memory (Verified)\n"
    "Learned from earlier sessions; suggestions, not facts about this conversation."
)


@dataclass(frozen=True)
class Request:
    """One call of ``build_context``: whose window, for what, within what."""

    user_id: str
    session_id: str
    agent_id: str
    state: Mapping[str, Any]
    config: ContextConfig
    query: str | None
    budget: int
    system_prompt: str | None
    head: LogHead = field(default_factory=LogHead)


@dataclass
class Sources:
    """What the window can be made of, besides the history."""

    system: list[dict[str, Any]] = field(default_factory=list)
    summaries: list[SummaryItem] = field(default_factory=list)
    archived_through: int | None = None  # topics stand for the events up to this seq
    hidden: Callable[[int], bool] | None = None  # left out of the history (folded, retracted)
    retracted: Callable[[int], bool] | None = None  # taken back: never shown
    task: ActiveTask | None = None
    memories: list[MemoryItem] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)


def gather(
    request: Request,
    reader: LogReader,
    summaries: SummarySource | None,
    memories: MemorySource | None,
    archived_through: Callable[[str, str], int | None] | None,
) -> Sources:
    """Read every source the request's configuration switches on."""
    config, sections = request.config, request.config.sections
    found = Sources()
    if sections.system:
        found.system = system_messages(request.system_prompt, reader)
    if sections.summaries:
        if archived_through is not None:
            found.archived_through = archived_through(request.user_id, request.session_id)
        if summaries is not None:
            items = list(summaries.summaries(request.user_id, request.session_id))
            if config.strategy == "compressed" and not config.compressed.preserve_topics:
                items = [item for item in items if item.kind != "topic"]
                found.archived_through = None  # no topic stands for what they archived
            found.summaries = items
    found.retracted = retracted_seqs(request.state)
    found.hidden = _either(folded(found.summaries), found.retracted)
    if sections.active_task or sections.pinned_instruction:
        found.task = task_from_state(dict(request.state))
    if sections.memories and memories is not None:
        started = time.perf_counter()
        try:
            found.memories = list(
                memories.memories(
                    request.user_id, request.agent_id, request.query, limit=MEMORY_LIMIT
                )
            )
        except TimeoutError as exc:
            # Seed 002: retrieval has a deadline; past it the window goes without.
            found.notes.append(f"memories left out: {exc}")
        found.timings["memories_ms"] = round((time.perf_counter() - started) * 1e3, 3)
    return found


def system_messages(prompt: str | None, reader: LogReader) -> list[dict[str, Any]]:
    """The system section: the configured prompt, then the session's own system events
    (each text once)."""
    texts: list[str] = [prompt] if prompt else []
    for event in reader.system_events():
        text = event_text(event)
        if text and text not in texts:
            texts.append(text)
    return [{"role": "system", "content": text} for text in texts]


def summary_messages(items: Sequence[SummaryItem]) -> tuple[list[dict[str, Any]], list[str]]:
    """The summary section's messages and the ids of the summaries they show."""
    messages = []
    for item in items:
        label = SUMMARY_LABELS.get(item.kind, "Conversation summary")
        messages.append({"role": "system", "content": f"[{label}] {item.text}"})
    return messages, [item.summary_id for item in items]


def tail_messages(
    request: Request, sources: Sources, units: Sequence[Unit], *, pin: bool = True
) -> list[dict[str, Any]]:
    """The active task, then the pinned instruction (the goal: the task's, else the query,
    else the latest user input). ``pin=False``: no pinned instruction unless an active
    task names the goal (the strategy judged that the goal is close enough to the end)."""
    sections = request.config.sections
    tail: list[dict[str, Any]] = []
    if sources.task is not None and sections.active_task:
        tail.append({"role": "system", "content": render_task(sources.task)})
    if sections.pinned_instruction and (pin or sources.task is not None):
        goal, status = goal_of(sources.task, units, request.query)
        if goal:
            tail.append({"role": "system", "content": render_pinned_instruction(goal, status)})
    return tail


def goal_of(
    task: ActiveTask | None, units: Sequence[Unit], query: str | None = None
) -> tuple[str | None, str]:
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
    items: Sequence[MemoryItem], cost: Callable[[dict[str, Any]], int], max_tokens: int | None
) -> dict[str, Any] | None:
    """The ``## Memory (Verified)`` message: the best memories that fit ``max_tokens``."""
    lines: list[str] = []
    message: dict[str, Any] | None = None
    for item in items:
        candidate = {
            "role": "system",
            "content": "\n".join([MEMORY_HEADING, *lines, memory_line(item)]),
        }
        if max_tokens is not None and cost(candidate) > max_tokens:
            break
        lines.append(memory_line(item))
        message = candidate
    return message


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

    A fold stands for the events it covers, so the history leaves them out; other
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


def _either(
    a: Callable[[int], bool] | None, b: Callable[[int], bool] | None
) -> Callable[[int], bool] | None:
    if a is None or b is None:
        return a or b
    return lambda seq: a(seq) or b(seq)
