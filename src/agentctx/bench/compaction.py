"""``agentctx bench compaction``: does compaction keep every model call under the budget?

1. **The session.** A long tool-using session is generated from a LoCoMo or REALTALK
   chat (``bench.compaction_session``): ``turns`` turns (default 200), each the chat's
   user message, sometimes (seeded) one to three synthetic tool calls with large JSON
   or text outputs, then the chat's next message as the agent's answer.
2. **One engine replays it** (SQLite in a temporary folder, PII redaction off since it
   would only change the words, ``jobs="manual"`` so the turn-end work is run, and
   timed, by the benchmark), with the settings of
   :func:`~agentctx.bench.compaction_engine.compaction_overrides`
   ``(True)``. Each turn's model call is made after its tool results and before the
   answer, as an agent asking its model for the reply would, with the user's message
   as the query:

   * **with compaction** it carries the window ``build_context`` returns at ``budget``
     (default 8,000) with the engine's default strategy;
   * **without compaction** it would carry the whole history: every event so far,
     rendered as chat messages by the engine's renderer (``render_events``, tool
     results whole) and counted by the engine's tokenizer, framing included. That is
     what ``build_context(strategy="full")`` returns with compaction off and no
     effective budget, counted incrementally so a 200-turn run stays linear.

   After each turn the queued turn-end jobs (thread summary, and whatever other
   compaction the engine queues) are run with ``engine.jobs.run_pending`` for the
   session: that time is the turn's compaction latency.
3. **Summarizer.** Offline (the extractive method, no model) by default; with
   ``llm_server`` the engine's ``llm`` points at a local OpenAI-compatible server the
   benchmark starts (``bench.compaction_server``), so summaries travel the real
   protocol through the ``openai`` SDK.
4. **Recall.** The questions of ``recall_data`` (default: the same file) are asked of
   agentctx alone with the recall benchmark's own steps (``bench.recall``: ingest,
   then ``measure_agentctx``), once with compaction off and once on, at the same
   budgets; compaction must not lower evidence recall. The turn-end work queued by the
   ingestion is run to the end before the questions, as a worker would have.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, field_validator

from agentctx.bench.compaction_engine import (
    INDEX_JOB,
    JobTimer,
    compaction_overrides,
    open_engine,
)
from agentctx.bench.compaction_server import BenchChatServer, running_chat_server
from agentctx.bench.compaction_session import SessionTurn, generate_session
from agentctx.bench.machine import Machine, load_average, machine_facts
from agentctx.bench.recall import DEFAULT_BUDGETS, ingest, measure_agentctx
from agentctx.bench.recall_data import data_files, load_dataset
from agentctx.bench.recall_score import AGENTCTX, QuestionResult, aggregate
from agentctx.bench.stats import Latency, summarize
from agentctx.context.render import render_events
from agentctx.engine import ContextEngine
from agentctx.errors import InvalidInput
from agentctx.events import Event
from agentctx.sessions.session import Session
from agentctx.tokens import TokenCounter, message_tokens, messages_tokens

Progress = Callable[[str], None]
COMPACTION_P95_TARGET_MS = 100.0  # turn-end compaction, offline summarizer
BENCH_USER = "compaction-bench"
BENCH_AGENT = "compaction-bench"


class CompactionConfig(BaseModel):
    """One ``bench compaction`` run."""

    data: Path
    turns: int = Field(default=200, ge=2)
    budget: int = Field(default=8000, ge=200)
    seed: int = 0
    tool_rate: float = Field(default=0.4, ge=0.0, le=1.0)
    llm_server: bool = False
    embedder: str = "auto"  # the engines' embeddings provider: auto, local, hashing, none
    curve_every: int = Field(default=20, ge=1)
    recall: bool = True
    recall_data: list[Path] | None = None  # default: [data]
    recall_budgets: list[int] = Field(default_factory=lambda: list(DEFAULT_BUDGETS))
    recall_limit: int | None = Field(default=None, ge=1)  # questions per conversation

    @field_validator("recall_budgets")
    @classmethod
    def _positive(cls, budgets: list[int]) -> list[int]:
        if not budgets or min(budgets) < 1:
            raise ValueError("recall budgets must be positive token counts")
        return sorted(set(budgets))

    @property
    def mode(self) -> str:
        """``offline`` or ``llm-server``: what writes the summaries."""
        return "llm-server" if self.llm_server else "offline"


class TurnPoint(BaseModel):
    """One turn's model call, with and without compaction, and its turn-end work."""

    turn: int  # from 1
    tool_calls: int
    tokens_off: int  # the whole history as chat messages (no compaction, no budget)
    tokens_on: int  # the window at the budget, compaction on
    build_on_ms: float
    compaction_ms: float  # run_pending for the session after the turn, less indexing
    indexing_ms: float = 0.0  # the search index's turn-end job (embedding the turn)
    compaction_by_kind: dict[str, float] = {}  # ms per job (thread_summary, fold, topics)
    summarized: bool  # a thread summary version was written at this turn's end


class RecallRow(BaseModel):
    """Evidence recall at one budget, compaction off and on."""

    budget: int
    questions: int
    off: float
    on: float
    tokens_off: float
    tokens_on: float
    latency_off: Latency
    latency_on: Latency

    @property
    def difference(self) -> float:
        """on - off (negative: compaction lost evidence)."""
        return self.on - self.off


class Verdict(BaseModel):
    """One target: its name, the figure, and PASS / FAIL / None (not applicable)."""

    name: str
    passed: bool | None
    detail: str


class CompactionReport(BaseModel):
    """Everything one ``bench compaction`` run measured."""

    started_at: datetime
    machine: Machine
    config: CompactionConfig
    settings_on: dict[str, Any]
    settings_off: dict[str, Any]
    token_counter: str
    embedder: str
    conversation: str
    tool_calls: int
    tool_output_tokens: int
    curve: list[TurnPoint]
    max_tokens_on: int
    max_tokens_off: int
    first_turn_over_budget_off: int | None
    compaction: Latency
    compaction_summarizing: Latency | None
    compaction_by_kind: dict[str, Latency] = {}  # per turn, each job kind's share
    compaction_other: Latency | None = None  # per turn, the rest (claiming, other kinds)
    build_on: Latency
    indexing: Latency | None = None  # per turn, the search index's turn-end job
    summaries: int
    summary_methods: list[str]
    llm_requests: int | None = None
    llm_failures: int | None = None
    llm_ms: Latency | None = None
    llm_by_schema: dict[str, int] = {}  # requests per response_format schema name
    recall_questions: int = 0
    recall: list[RecallRow] = []
    verdicts: list[Verdict]
    notes: list[str] = []

    @property
    def under_budget(self) -> bool:
        """Whether every compacted model call stayed within the budget."""
        return self.max_tokens_on <= self.config.budget


class _History:
    """The whole history's tokens as a model call without compaction would carry it."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.tokens = messages_tokens(counter, [])  # the reply priming

    def add(self, events: Sequence[Event]) -> int:
        """Add events (rendered as chat messages, tool results whole); the new total."""
        for message in render_events(events):
            self.tokens += message_tokens(self.counter, message)
        return self.tokens


def _record_turn(
    session: Session, turn: SessionTurn, history: _History, model_call: Callable[[], int]
) -> tuple[int, int]:
    """Write one turn; the model call is made after the tool results, before the answer.

    Returns the tokens of the model call with compaction and without (the history).
    """
    with session.turn() as recorder:
        events = [recorder.add_message("user", turn.user, ts=turn.ts)]
        for call in turn.tool_calls:
            events.append(recorder.add_tool_call(call.name, call.arguments, call_id=call.call_id))
            events.append(recorder.add_tool_result(call.call_id, content=call.text, data=call.data))
        tokens_on = model_call()
        tokens_off = history.add(events)
        answer = recorder.add_message("assistant", turn.agent)
    history.add([answer])
    return tokens_on, tokens_off


def _summary_version(engine: ContextEngine, session: Session) -> int:
    latest = engine.thread_summaries.latest(session.user_id, session.id)
    return latest.version if latest is not None else 0


def replay(
    turns: Sequence[SessionTurn],
    engine: ContextEngine,
    *,
    budget: int,
    say: Progress,
    timer: JobTimer | None = None,
) -> tuple[list[TurnPoint], Session]:
    """Replay the session one turn at a time: a point per turn, and the session."""
    session = engine.create_session(user_id=BENCH_USER, agent_id=BENCH_AGENT)
    history = _History(engine.token_counter())
    points: list[TurnPoint] = []
    for turn in turns:
        build: list[float] = []

        def model_call(query: str = turn.user, times: list[float] = build) -> int:
            started = time.perf_counter()
            window = session.build_context(query=query, budget=budget)
            times.append(time.perf_counter() - started)
            return int(window.tokens)

        tokens_on, tokens_off = _record_turn(session, turn, history, model_call)
        before = _summary_version(engine, session)
        if timer is not None:
            timer.take()  # work done inside the turn (none with jobs="manual") is not counted
        started = time.perf_counter()
        engine.jobs.run_pending(session=(session.user_id, session.id))
        turn_end_s = time.perf_counter() - started
        by_kind = timer.take() if timer is not None else {}
        indexing_s = by_kind.pop(INDEX_JOB, 0.0)
        points.append(
            TurnPoint(
                turn=turn.index + 1,
                tool_calls=len(turn.tool_calls),
                tokens_off=tokens_off,
                tokens_on=tokens_on,
                build_on_ms=build[0] * 1e3,
                compaction_ms=(turn_end_s - indexing_s) * 1e3,
                indexing_ms=indexing_s * 1e3,
                compaction_by_kind={kind: seconds * 1e3 for kind, seconds in by_kind.items()},
                summarized=_summary_version(engine, session) > before,
            )
        )
        if (turn.index + 1) % 50 == 0:
            say(f"turn {turn.index + 1}: {tokens_off:,} tokens without, {tokens_on:,} with")
    return points, session


# ---------------------------------------------------------------- recall


def measure_recall(
    config: CompactionConfig,
    home: Path,
    *,
    llm: Mapping[str, Any] | None,
    say: Progress,
) -> tuple[list[RecallRow], int]:
    """Evidence recall of agentctx with compaction off and on; rows per budget."""
    files = data_files(config.recall_data or [config.data])
    datasets = [load_dataset(path) for path in files]
    results: dict[bool, list[QuestionResult]] = {False: [], True: []}
    for enabled in (False, True):
        side = "on" if enabled else "off"
        engine = open_engine(
            home / f"recall-{side}", compaction=enabled, embedder=config.embedder, llm=llm
        )
        try:
            for dataset in datasets:
                for number, conversation in enumerate(dataset.conversations, start=1):
                    questions = conversation.questions[: config.recall_limit]
                    if not questions:
                        continue
                    say(
                        f"recall, compaction {side}: {dataset.path.name} "
                        f"{conversation.sample_id}, {len(questions)} questions"
                    )
                    user_id = f"{BENCH_USER}-{dataset.path.stem}-{number}"
                    session = ingest(engine, conversation, user_id)
                    # The turn-end work the ingestion queued, done before the questions.
                    while engine.jobs.run_pending(session=(user_id, session.id), limit=1000).done:
                        pass
                    rows = [
                        QuestionResult(
                            file=dataset.path.name,
                            conversation=conversation.sample_id,
                            question=q.question,
                            category=q.category,
                            evidence=list(q.evidence),
                        )
                        for q in questions
                    ]
                    measure_agentctx(
                        session,
                        conversation,
                        questions,
                        results=rows,
                        budgets=config.recall_budgets,
                        strategy=None,
                    )
                    results[enabled].extend(rows)
        finally:
            engine.close()
    table: list[RecallRow] = []
    for budget in config.recall_budgets:
        off = aggregate(results[False], AGENTCTX, budget)
        on = aggregate(results[True], AGENTCTX, budget)
        if off is None or on is None:
            continue
        table.append(
            RecallRow(
                budget=budget,
                questions=on.questions,
                off=off.recall,
                on=on.recall,
                tokens_off=off.tokens_mean,
                tokens_on=on.tokens_mean,
                latency_off=off.latency,
                latency_on=on.latency,
            )
        )
    return table, len(results[True])


# ---------------------------------------------------------------- the run


@contextlib.contextmanager
def _summarizer(config: CompactionConfig) -> Iterator[BenchChatServer | None]:
    if not config.llm_server:
        yield None
        return
    with running_chat_server() as server:
        yield server


def _verdicts(report: CompactionReport) -> list[Verdict]:
    budget = report.config.budget
    verdicts = [
        Verdict(
            name="tokens per model call with compaction <= budget",
            passed=report.max_tokens_on <= budget,
            detail=f"max {report.max_tokens_on:,} vs budget {budget:,}",
        ),
        Verdict(
            name="without compaction the calls outgrow the budget",
            passed=None,
            detail=(
                f"from turn {report.first_turn_over_budget_off}, up to "
                f"{report.max_tokens_off:,} tokens"
                if report.first_turn_over_budget_off is not None
                else f"never (max {report.max_tokens_off:,}): the session is too short"
            ),
        ),
    ]
    p95 = report.compaction.p95_ms
    offline = report.config.mode == "offline"
    verdicts.append(
        Verdict(
            name=f"turn-end compaction p95 < {COMPACTION_P95_TARGET_MS:g} ms (offline)",
            passed=p95 < COMPACTION_P95_TARGET_MS if offline else None,
            detail=f"p95 {p95:.1f} ms"
            + ("" if offline else " with the model server (the target is for offline)"),
        )
    )
    for row in report.recall:
        verdicts.append(
            Verdict(
                name=f"recall with compaction >= without, budget {row.budget:,}",
                passed=row.on >= row.off - 1e-9,
                detail=f"{row.on:.3f} vs {row.off:.3f} ({row.difference:+.3f})",
            )
        )
    return verdicts


def run_compaction_benchmark(
    config: CompactionConfig, *, progress: Progress | None = None
) -> CompactionReport:
    """Generate the session, replay it, then compare recall with compaction off and on."""
    say = progress or (lambda _message: None)
    dataset = load_dataset(config.data)
    if not dataset.conversations:
        raise InvalidInput(f"{config.data}: no conversation in the file")
    conversation = dataset.conversations[0]
    try:
        turns = generate_session(
            conversation, turns=config.turns, seed=config.seed, tool_rate=config.tool_rate
        )
    except ValueError as exc:
        raise InvalidInput(f"{config.data}: {exc}") from exc
    started = datetime.now(UTC)
    notes: list[str] = []
    chat_turns = len([t for t in conversation.turns if t.text.strip()])
    if chat_turns < 2 * config.turns:
        notes.append(
            f"the chat has {chat_turns} turns, fewer than the session's {2 * config.turns} "
            "messages: its dialogue is reused from the start"
        )
    with (
        tempfile.TemporaryDirectory(prefix="agentctx-compaction-") as tmp,
        _summarizer(config) as server,
    ):
        home = Path(tmp)
        machine = machine_facts(home)
        llm = server.settings() if server is not None else None
        timer = JobTimer()
        engine = open_engine(
            home / "session",
            compaction=True,
            embedder=config.embedder,
            llm=llm,
            timer=timer,
            context_limit=config.budget,
        )
        try:
            counter = engine.token_counter()
            embedder = str(getattr(engine.search_index.embedder, "name", "none"))
            say(f"replaying {len(turns)} turns ({config.mode} summarizer)")
            curve, compacted = replay(turns, engine, budget=config.budget, say=say, timer=timer)
            stored = compacted.summaries()
        finally:
            engine.close()
        recall: list[RecallRow] = []
        asked = 0
        if config.recall:
            recall, asked = measure_recall(config, home, llm=llm, say=say)
        llm_requests = server.requests if server is not None else None
        llm_failures = server.failures if server is not None else None
        llm_ms = summarize(server.seconds) if server is not None and server.seconds else None
        llm_by_schema = dict(server.by_schema) if server is not None else {}
    machine.load_average_end = load_average()
    machine.agentctx_settings = {
        "summarizer": config.mode,
        "budget": str(config.budget),
        "jobs": "manual (turn-end work run and timed by the bench)",
        "redaction": "False",
        "embeddings": embedder,
    }
    calls = [c for t in turns for c in t.tool_calls]
    over = [p.turn for p in curve if p.tokens_off > config.budget]
    summarizing = [p.compaction_ms / 1e3 for p in curve if p.summarized]
    report = CompactionReport(
        started_at=started,
        machine=machine,
        config=config,
        settings_on=compaction_overrides(True, config.budget),
        settings_off=compaction_overrides(False, config.budget),
        token_counter=counter.name,
        embedder=embedder,
        conversation=f"{config.data.name} {conversation.sample_id}".strip(),
        tool_calls=len(calls),
        tool_output_tokens=sum(counter.count_many([c.output() for c in calls])) if calls else 0,
        curve=curve,
        max_tokens_on=max(p.tokens_on for p in curve),
        max_tokens_off=max(p.tokens_off for p in curve),
        first_turn_over_budget_off=over[0] if over else None,
        compaction=summarize([p.compaction_ms / 1e3 for p in curve]),
        compaction_summarizing=summarize(summarizing) if summarizing else None,
        compaction_by_kind={
            kind: summarize([p.compaction_by_kind.get(kind, 0.0) / 1e3 for p in curve])
            for kind in sorted({k for p in curve for k in p.compaction_by_kind})
        },
        compaction_other=summarize(
            [max(0.0, p.compaction_ms - sum(p.compaction_by_kind.values())) / 1e3 for p in curve]
        ),
        build_on=summarize([p.build_on_ms / 1e3 for p in curve]),
        indexing=summarize([p.indexing_ms / 1e3 for p in curve]),
        summaries=len(stored),
        summary_methods=sorted({s.method for s in stored}),
        llm_requests=llm_requests,
        llm_failures=llm_failures,
        llm_ms=llm_ms,
        llm_by_schema=llm_by_schema,
        recall_questions=asked,
        recall=recall,
        verdicts=[],
        notes=notes,
    )
    report.verdicts = _verdicts(report)
    return report
