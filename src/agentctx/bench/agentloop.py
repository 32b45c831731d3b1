"""``agentctx bench agentloop``: the windows an agent loop gets, judged by what the model did next.

Real tool-calling conversations (``bench.agentloop_data``) are replayed into agentctx with
the importer (``session.import_messages``, one message at a time): the conversation's
system prompt is the agent's prompt, every user message opens a turn, and every assistant
message is a model call, so just before it a window is built for each strategy and budget
(``session.build_context(query=<the latest user message>, budget=B, strategy=S)``) after
the search index has caught up and the query is embedded (what the background worker
does for the events; the query's embedding is paid once per request, by the first window
built for it: both are timed apart, so each strategy's time is the build's alone). In
the same run, the naive window a user writes by hand: the system prompt plus the newest
whole messages that fit, a tool call never without its results. Each window is judged
by:

* **argument recall**: of the string arguments of the tool calls the model made next that
  had appeared earlier in the conversation, the share the window holds;
* **recent fidelity**: of the last four messages before the call, the share present as chat
  messages with their role (a tool call as a tool call, a result as a tool message);
* **prefix reuse**: the tokens of the window that repeat the previous window of the same
  session (same system, same budget) from its start, message by message, as a share of the
  window: what a provider's prompt cache can reuse. Its **limit** is the share of the window
  made of messages the previous window already had (what was just appended cannot be
  cached); the **gap** is the limit minus the reuse;
* whether it is over its budget, and how long it took.

``--group N`` replays N conversations one after another into one session, like one agent
serving customers all day, so the budget bites. Every figure is also given per half of the
data (even and odd task ids), so a setting tuned on one half can be checked on the other.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from agentctx.agents import AgentConfig
from agentctx.bench.agentloop_ceiling import CeilingRule, Layout, ReuseCeiling, reuse_ceiling
from agentctx.bench.agentloop_data import (
    Conversation,
    Message,
    arguments_seen_before,
    held,
    load_conversations,
    message_text,
)
from agentctx.bench.machine import Machine, load_average, machine_facts
from agentctx.bench.stats import Latency, summarize
from agentctx.context.config import STRATEGIES
from agentctx.engine import ContextEngine
from agentctx.events import Event, EventType
from agentctx.jsonvalue import canonical_json
from agentctx.sessions.importer import MessageImporter
from agentctx.tokens import TokenCounter, message_tokens

Progress = Callable[[str], None]
DEFAULT_BUDGETS = (2000, 4000, 8000)
NAIVE = "naive"
DEFAULT = "default"
RECENT_MESSAGES = 4
BENCH_AGENT = "agentloop-bench"
REPLY_PRIMING = 3

# Targets (judged for the default strategy; see docs/benchmarks.md).
REUSE_GAP_MAX = 0.05
ARGUMENT_RECALL_MIN = 0.95
RECENT_FIDELITY_MIN = 0.99
LATENCY_P95_MAX_MS = 50.0
TARGET_POINTS = {1: (2000, 4000), 10: (4000, 8000)}
"""Budgets at which the targets apply, by conversations per session."""


class AgentLoopConfig(BaseModel):
    """One agent loop benchmark run."""

    data: Path
    budgets: list[int] = Field(default_factory=lambda: list(DEFAULT_BUDGETS), min_length=1)
    group: int = Field(default=1, ge=1)
    strategies: list[str] = Field(default_factory=lambda: [DEFAULT, *STRATEGIES])
    max_conversations: int | None = Field(default=None, ge=1)
    embeddings: str = "auto"
    half: str | None = Field(default=None, pattern="^(even|odd)$")  # replay one half only
    context: dict[str, Any] = Field(default_factory=dict)  # the engine's context settings

    @field_validator("budgets")
    @classmethod
    def _positive(cls, budgets: list[int]) -> list[int]:
        if min(budgets) < 200:
            raise ValueError("budgets must be at least 200 tokens")
        return sorted(set(budgets))

    @field_validator("strategies")
    @classmethod
    def _known(cls, strategies: list[str]) -> list[str]:
        unknown = set(strategies) - {DEFAULT, *STRATEGIES}
        if unknown:
            raise ValueError(f"unknown strategies {sorted(unknown)}")
        return list(dict.fromkeys(strategies))


class Cell(BaseModel):
    """One system at one budget: every metric, pooled over its calls."""

    system: str
    budget: int
    half: str = "all"
    calls: int
    argument_recall: float | None
    arguments: int
    recent_fidelity: float | None
    prefix_reuse: float | None
    reuse_limit: float | None
    reuse_gap: float | None
    over_budget: int
    mean_tokens: float
    latency: Latency | None = None


class AgentLoopTarget(BaseModel):
    """One target at one budget: the figure, the bound, the verdict."""

    name: str
    budget: int
    figure: float | None
    bound: float | None
    direction: str
    passed: bool | None
    note: str = ""


class AgentLoopReport(BaseModel):
    """A run's results."""

    started_at: datetime
    machine: Machine
    config: AgentLoopConfig
    conversations: int
    sessions: int
    model_calls: int
    token_counter: str
    index_sync: Latency | None
    cells: list[Cell]
    halves: list[Cell]
    targets: list[AgentLoopTarget]
    ceilings: list[ReuseCeiling] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


# ---------------------------------------------------------------- one window's metrics


@dataclass
class Sample:
    """What one window of one system scored."""

    system: str
    budget: int
    half: str
    arguments_found: int
    arguments: int
    recent_found: int
    recent: int
    reuse: float | None
    limit: float | None
    tokens: int
    over: bool
    ms: float


@dataclass
class Expected:
    """A message as it must show in a window: its role, text and tool call ids."""

    role: str
    text: str
    calls: tuple[tuple[str, str], ...] = ()
    answers: str | None = None  # a tool message: the call id it answers


def _keys(counter: TokenCounter, messages: Sequence[Mapping[str, Any]]) -> list[tuple[str, int]]:
    return [(canonical_json(dict(m)).decode(), message_tokens(counter, m)) for m in messages]


def prefix_reuse(
    previous: list[tuple[str, int]], current: list[tuple[str, int]]
) -> tuple[float, float]:
    """(reuse, limit) of ``current`` after ``previous`` (see the module docstring)."""
    total = sum(tokens for _, tokens in current) or 1
    reused = 0
    for (key, tokens), (before, _) in zip(current, previous, strict=False):
        if key != before:
            break
        reused += tokens
    available: dict[str, int] = {}
    for key, _ in previous:
        available[key] = available.get(key, 0) + 1
    had = 0
    for key, tokens in current:
        if available.get(key, 0) > 0:
            available[key] -= 1
            had += tokens
    return reused / total, had / total


def present(expected: Expected, window: Sequence[Mapping[str, Any]]) -> bool:
    """Whether ``expected`` shows in ``window`` as a chat message with its role."""
    head = " ".join(expected.text.split())[:60]
    bare = "".join(expected.text.split())[:20]
    for message in window:
        if message.get("role") != expected.role:
            continue
        if expected.answers is not None:
            text = message_text(message)
            if message.get("tool_call_id") == expected.answers and (
                not head or "".join(text.split())[:20] == bare or "[tool_output:" in text
            ):
                return True
            continue
        if expected.calls:
            ids = {
                (c.get("id"), c.get("function", {}).get("name"))
                for c in message.get("tool_calls") or ()
            }
            if not set(expected.calls) <= ids:
                continue
            if not head:
                return True
        if head and head in " ".join(message_text(message).split()):
            return True
    return False


def expected_from_raw(message: Message) -> Expected | None:
    """How a raw message must show in the naive window (None: it shows nothing)."""
    role = str(message.get("role"))
    text = message_text({"content": message.get("content")})
    calls = tuple(
        (str(c.get("id")), str(c.get("function", {}).get("name")))
        for c in message.get("tool_calls") or ()
    )
    if role == "tool":
        return Expected("tool", text, answers=str(message.get("tool_call_id")))
    if not text and not calls:
        return None
    return Expected(role, text, calls)


def expected_from_events(message: Message, events: Sequence[Event]) -> Expected | None:
    """How a message agentctx recorded as ``events`` must show in its windows (the stored,
    redacted text)."""
    if not events:
        return None
    role = str(message.get("role"))
    if role == "tool":
        return Expected("tool", events[0].text, answers=events[0].call_id)
    calls = tuple(
        (str(e.call_id), str(e.meta.tool_name)) for e in events if e.type is EventType.TOOL_CALL
    )
    text = next((e.text for e in events if e.type is not EventType.TOOL_CALL), "")
    return Expected(role, text, calls)


def naive_window(
    system: str | None, history: Sequence[Message], budget: int, counter: TokenCounter
) -> list[Message]:
    """The system prompt plus the newest whole messages that fit, a tool call never
    without its results (what a user writes by hand)."""
    head = [{"role": "system", "content": system}] if system else []
    room = budget - REPLY_PRIMING - sum(message_tokens(counter, m) for m in head)
    units: list[list[Message]] = []
    for message in history:
        if message.get("role") == "tool" and units and _calls(units[-1]):
            units[-1].append(message)
        else:
            units.append([message])
    kept: list[Message] = []
    for unit in reversed(units):
        cost = sum(message_tokens(counter, m) for m in unit)
        if cost > room:
            break
        room -= cost
        kept = unit + kept
    return head + kept


def _calls(unit: list[Message]) -> bool:
    return bool(unit[0].get("tool_calls"))


# ---------------------------------------------------------------- the replay


@dataclass
class _Stream:
    """One system at one budget in one session: its previous window."""

    previous: list[tuple[str, int]] | None = None


@dataclass
class _Call:
    """One model call of the replay: what its windows are judged against."""

    conversation: Conversation
    arguments: list[str]  # the next tool calls' arguments seen earlier
    ours: list[Expected | None]  # the last messages, as agentctx recorded them
    theirs: list[Expected | None]  # the last messages, as given


@dataclass
class _Replay:
    engine: ContextEngine
    config: AgentLoopConfig
    counter: TokenCounter
    samples: list[Sample] = field(default_factory=list)
    sync_seconds: list[float] = field(default_factory=list)
    calls: int = 0

    def session_group(self, group: Sequence[Conversation], user_id: str) -> None:
        """Replay ``group`` into one new session, judging windows before each model call."""
        session = self.engine.create_session(user_id, BENCH_AGENT)
        streams: dict[tuple[str, int], _Stream] = {}
        raw_history: list[Message] = []  # what the naive window sees: every message so far
        system = group[0].system
        for conversation in group:
            with MessageImporter(session) as importer:
                if conversation.system and conversation.system != system:
                    importer.add({"role": "system", "content": conversation.system})
                recorded: list[tuple[Message, list[Event]]] = []
                query = ""
                for index, message in enumerate(conversation.messages):
                    if message.get("role") == "assistant":
                        recent = recorded[-RECENT_MESSAGES:]
                        call = _Call(
                            conversation,
                            arguments_seen_before(conversation.messages, index),
                            [expected_from_events(m, events) for m, events in recent],
                            [expected_from_raw(m) for m, _ in recent],
                        )
                        self._judge(session, call, query, raw_history, streams)
                    if message.get("role") == "user":
                        query = message_text(message)
                    recorded.append((message, importer.add(message)))
                    raw_history.append(message)

    def _judge(
        self,
        session: Any,
        call: _Call,
        query: str,
        raw_history: list[Message],
        streams: dict[tuple[str, int], _Stream],
    ) -> None:
        self.calls += 1
        started = time.perf_counter()
        self.engine.search_index.sync(session.user_id, session.id)
        vectors = self.engine.search_index.query_vectors
        if query and vectors is not None:
            vectors.vector(query)  # the query's embedding, once per request
        self.sync_seconds.append(time.perf_counter() - started)
        for budget in self.config.budgets:
            for system in self.config.strategies:
                started = time.perf_counter()
                window = session.build_context(
                    query=query or None,
                    budget=budget,
                    strategy=None if system == DEFAULT else system,
                )
                elapsed = (time.perf_counter() - started) * 1e3
                stream = streams.setdefault((system, budget), _Stream())
                self._score(stream, system, budget, call, window.messages, window.tokens, elapsed)
            started = time.perf_counter()
            naive = naive_window(call.conversation.system, raw_history, budget, self.counter)
            elapsed = (time.perf_counter() - started) * 1e3
            tokens = REPLY_PRIMING + sum(message_tokens(self.counter, m) for m in naive)
            stream = streams.setdefault((NAIVE, budget), _Stream())
            self._score(stream, NAIVE, budget, call, naive, tokens, elapsed)

    def _score(  # noqa: PLR0917 - one window's facts
        self,
        stream: _Stream,
        system: str,
        budget: int,
        call: _Call,
        messages: list[dict[str, Any]],
        tokens: int,
        ms: float,
    ) -> None:
        keys = _keys(self.counter, messages)
        reuse = limit = None
        if stream.previous is not None:
            reuse, limit = prefix_reuse(stream.previous, keys)
        stream.previous = keys
        text = "\n".join(message_text(m) for m in messages)
        expected = call.theirs if system == NAIVE else call.ours
        wanted = [e for e in expected if e is not None]
        self.samples.append(
            Sample(
                system=system,
                budget=budget,
                half=call.conversation.half,
                arguments_found=sum(held(value, text) for value in call.arguments),
                arguments=len(call.arguments),
                recent_found=sum(present(e, messages) for e in wanted),
                recent=len(wanted),
                reuse=reuse,
                limit=limit,
                tokens=tokens,
                over=tokens > budget,
                ms=ms,
            )
        )


# ---------------------------------------------------------------- pooling and targets


def pool(samples: Sequence[Sample], system: str, budget: int, half: str = "all") -> Cell:
    """The metrics of ``system`` at ``budget`` over ``samples``."""
    mine = [
        s for s in samples if s.system == system and s.budget == budget and half in ("all", s.half)
    ]
    arguments = sum(s.arguments for s in mine)
    recent = sum(s.recent for s in mine)
    paired = [s for s in mine if s.reuse is not None and s.limit is not None]
    reuse = sum(s.reuse or 0.0 for s in paired) / len(paired) if paired else None
    limit = sum(s.limit or 0.0 for s in paired) / len(paired) if paired else None
    return Cell(
        system=system,
        budget=budget,
        half=half,
        calls=len(mine),
        argument_recall=sum(s.arguments_found for s in mine) / arguments if arguments else None,
        arguments=arguments,
        recent_fidelity=sum(s.recent_found for s in mine) / recent if recent else None,
        prefix_reuse=reuse,
        reuse_limit=limit,
        reuse_gap=limit - reuse if reuse is not None and limit is not None else None,
        over_budget=sum(s.over for s in mine),
        mean_tokens=sum(s.tokens for s in mine) / len(mine) if mine else 0.0,
        latency=summarize([s.ms / 1e3 for s in mine]) if mine else None,
    )


def judge(cells: Sequence[Cell], group: int) -> list[AgentLoopTarget]:
    """The targets for the default strategy at this run's target budgets."""
    by_key = {(c.system, c.budget): c for c in cells}
    targets: list[AgentLoopTarget] = []
    for budget in TARGET_POINTS.get(group, ()):
        ours, naive = by_key.get((DEFAULT, budget)), by_key.get((NAIVE, budget))
        if ours is None:
            continue
        p95 = ours.latency.p95_ms if ours.latency is not None else None
        checks: list[tuple[str, float | None, float | None, str]] = [
            ("prefix reuse gap to its limit", ours.reuse_gap, REUSE_GAP_MAX, "<="),
            (
                "prefix reuse, against the naive window's",
                ours.prefix_reuse,
                naive.prefix_reuse if naive is not None else None,
                ">=",
            ),
            ("argument recall", ours.argument_recall, ARGUMENT_RECALL_MIN, ">="),
            ("recent fidelity", ours.recent_fidelity, RECENT_FIDELITY_MIN, ">="),
            ("windows over budget", float(ours.over_budget), 0.0, "<="),
            ("build_context p95 ms", p95, LATENCY_P95_MAX_MS, "<="),
        ]
        for name, figure, bound, direction in checks:
            passed = None
            if figure is not None and bound is not None:
                passed = figure <= bound + 1e-12 if direction == "<=" else figure >= bound - 1e-12
            targets.append(
                AgentLoopTarget(
                    name=name,
                    budget=budget,
                    figure=figure,
                    bound=bound,
                    direction=direction,
                    passed=passed,
                )
            )
    return targets


def _as_session(group: Sequence[Conversation]) -> list[Message]:
    """The messages of ``group`` as one session after its first system prompt (a later
    conversation's own prompt becomes a system message, as the replay imports it)."""
    system = group[0].system
    messages: list[Message] = []
    for conversation in group:
        if conversation.system and conversation.system != system:
            messages.append({"role": "system", "content": conversation.system})
        messages.extend(conversation.messages)
    return messages


def run_agentloop_benchmark(
    config: AgentLoopConfig, *, progress: Progress | None = None
) -> AgentLoopReport:
    """Replay ``config.data`` and judge every window (see the module docstring)."""
    say = progress or (lambda _message: None)
    conversations = [c for c in load_conversations(config.data) if config.half in (None, c.half)][
        : config.max_conversations
    ]
    if not conversations:
        raise ValueError(f"{config.data} holds no conversations")
    groups = [
        conversations[i : i + config.group] for i in range(0, len(conversations), config.group)
    ]
    started = datetime.now(UTC)
    with tempfile.TemporaryDirectory(prefix="agentctx-agentloop-") as home:
        machine = machine_facts(Path(home))
        # An explicit URL: an AGENTCTX_URL in the environment must not receive bench data.
        # What windows hold, not how fast: every window ranks by vectors of every event,
        # as after the background worker caught up (bench agentstep times the defaults).
        overrides: dict[str, Any] = {
            "embeddings": {"provider": config.embeddings},
            "jobs": "inline",
        }
        if config.context:
            overrides["context"] = config.context
        engine = ContextEngine(
            url=f"sqlite:///{Path(home) / 'agentctx.db'}", home=home, **overrides
        )
        layout = Layout.of(engine.context_config(None))  # the shares the windows had
        try:
            engine.register_agent(
                AgentConfig(agent_id=BENCH_AGENT, system_prompt=conversations[0].system)
            )
            replay = _Replay(engine, config, engine.token_counter())
            for number, group in enumerate(groups, 1):
                say(f"session {number}/{len(groups)}: {len(group)} conversation(s)")
                replay.session_group(group, f"agentloop-{number}")
        finally:
            engine.close()
    machine.load_average_end = load_average()
    sessions = [_as_session(group) for group in groups]
    ceilings = [
        reuse_ceiling(sessions, groups[0][0].system, budget, replay.counter, rule, layout=layout)
        for budget in config.budgets
        for rule in CeilingRule
    ]
    systems = [*config.strategies, NAIVE]
    cells = [pool(replay.samples, s, b) for b in config.budgets for s in systems]
    halves = [
        pool(replay.samples, s, b, half)
        for b in config.budgets
        for s in (DEFAULT, NAIVE)
        if s in systems
        for half in ("even", "odd")
    ]
    return AgentLoopReport(
        started_at=started,
        machine=machine,
        config=config,
        conversations=len(conversations),
        sessions=len(groups),
        model_calls=replay.calls,
        token_counter=replay.counter.name,
        index_sync=summarize(replay.sync_seconds) if replay.sync_seconds else None,
        cells=cells,
        halves=halves,
        targets=judge(cells, config.group),
        ceilings=ceilings,
        notes=[
            "query: the latest user message; the default strategy is the engine's own",
            "tokens of every window counted by the engine's counter, framing included",
        ],
    )
