"""``agentctx bench recall``: how much of a question's evidence a context window holds.

For every conversation of the given LoCoMo or REALTALK files (``bench.recall_data``):

1. The conversation is ingested into a fresh agentctx session (engine home in a temporary
   folder, one user per conversation): one event per turn, in order, with the turn's date
   as ``ts`` and the speaker as ``author``. Speaker 1 is recorded as the ``user``
   (``user_input`` events), speaker 2 as the ``assistant`` (``agent_response``). Each
   dialogue turn is appended on its own (a turn of its own, as a chat app would record
   it), then the search index is synced (terms and embeddings, what a background worker
   does). Ingestion time is recorded apart from ``build_context``'s.
2. Every question is asked at every budget: ``session.build_context(query=question,
   budget=B)`` is timed with ``perf_counter``, and the evidence turns found in
   ``window.messages`` are counted (``bench.recall_score``). One call per session before
   the measured ones warms caches; its time is reported apart, with the ingestion.
3. In the same run the baselines of ``bench.recall_baselines`` (most recent turns, BM25,
   plain hybrid) build their own windows under the same budgets and are scored the same
   way. Their time per window is the ranking (query embedding included) plus the filling.

PII redaction is off for the ingested turns unless asked for: a redacted turn's text no
longer matches its evidence text, which would count against recall for a reason unrelated
to context building.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, cast

from pydantic import BaseModel, Field, field_validator

from agentctx.bench.machine import Machine, load_average, machine_facts
from agentctx.bench.recall_baselines import (
    EMBEDDING_MODEL,
    ConversationBaselines,
    Embedder,
    Ranker,
    TokenCounter,
    default_counter,
    embedder_name,
    fill,
    load_embedder,
    render_turn,
    turn_costs,
)
from agentctx.bench.recall_data import (
    CATEGORY_NAMES,
    Conversation,
    Dataset,
    LoadStats,
    Question,
    Turn,
    data_files,
    load_dataset,
)
from agentctx.bench.recall_score import (
    AGENTCTX,
    BM25,
    HYBRID,
    RECENT,
    SYSTEMS,
    Cell,
    Outcome,
    QuestionResult,
    RecallTarget,
    aggregate_all,
    found_evidence,
    judge,
    normalize,
    window_text,
)
from agentctx.engine import ContextEngine
from agentctx.errors import ConfigError
from agentctx.events import EventDraft, EventType, Role, TextPart
from agentctx.sessions.session import Session

Progress = Callable[[str], None]
DEFAULT_BUDGETS = (1000, 2000, 4000, 8000)
BENCH_USER_PREFIX = "recall-bench-"
BENCH_AGENT = "recall-bench"


class RecallConfig(BaseModel):
    """One recall benchmark run."""

    data: list[Path] = Field(min_length=1)
    budgets: list[int] = Field(default_factory=lambda: list(DEFAULT_BUDGETS), min_length=1)
    limit_questions: int | None = Field(default=None, ge=1)  # per conversation
    max_conversations: int | None = Field(default=None, ge=1)  # per file
    agentctx: bool = True
    baselines: bool = True
    strategy: str | None = None
    redaction: bool = False
    memory: bool = False  # long-term memory on: extracted at each turn end, injected

    @field_validator("budgets")
    @classmethod
    def _positive(cls, budgets: list[int]) -> list[int]:
        if min(budgets) < 1:
            raise ValueError("budgets must be positive token counts")
        return sorted(set(budgets))

    @classmethod
    def quick(cls, **overrides: object) -> RecallConfig:
        """At most 10 questions of one conversation per file: a smoke run."""
        values: dict[str, object] = {"limit_questions": 10, "max_conversations": 1}
        values.update(overrides)
        return cls.model_validate(values)

    @property
    def systems(self) -> list[str]:
        """The systems this run measures, in report order."""
        wanted = {AGENTCTX: self.agentctx, RECENT: self.baselines}
        wanted |= {BM25: self.baselines, HYBRID: self.baselines}
        return [s for s in SYSTEMS if wanted[s]]


class FileSummary(BaseModel):
    """One data file: what was read and what was left out."""

    file: str
    layout: str
    conversations: int
    turns: int
    questions: int  # asked in this run
    questions_in_file: int
    skipped_adversarial: int
    skipped_no_evidence: int
    dropped_evidence_ids: int


class IngestRecord(BaseModel):
    """Setting up one conversation: agentctx's ingestion and the baselines' indexes."""

    file: str
    conversation: str
    turns: int
    questions: int
    agentctx_s: float | None = None  # appends + the index sync (terms and embeddings)
    first_build_s: float | None = None  # the unmeasured warm-up call (any lazy indexing)
    embed_s: float | None = None  # the baselines' turn embeddings
    bm25_s: float | None = None


class RecallReport(BaseModel):
    """Everything one ``bench recall`` run measured."""

    started_at: datetime
    machine: Machine
    config: RecallConfig
    token_counter: str
    embedder: str | None
    files: list[FileSummary]
    ingestion: list[IngestRecord]
    pooled: list[Cell]
    by_category: dict[int, list[Cell]]
    by_file: dict[str, list[Cell]]
    targets: list[RecallTarget]
    notes: list[str] = []
    questions: list[QuestionResult]


# ---------------------------------------------------------------- agentctx


def require_build_context() -> None:
    """Raise ``ConfigError`` unless sessions have ``build_context``."""
    if not callable(getattr(Session, "build_context", None)):
        raise ConfigError(
            "agentctx's Session.build_context is not available in this build, so the "
            "agentctx column cannot be measured; run with --no-agentctx to measure the "
            "baselines only"
        )


def engine_counter(engine: ContextEngine) -> TokenCounter:
    """The token counter the engine's windows use (its default one), else the estimate."""
    make = getattr(engine, "token_counter", None)
    counter = make() if callable(make) else None
    return counter if isinstance(counter, TokenCounter) else default_counter()


def turn_draft(turn: Turn, conversation: Conversation) -> EventDraft:
    """The event a turn becomes: speaker 2 speaks as the assistant, anyone else as the user."""
    assistant = turn.speaker == conversation.speaker_2
    return EventDraft(
        type=EventType.AGENT_RESPONSE if assistant else EventType.USER_INPUT,
        role=Role.ASSISTANT if assistant else Role.USER,
        author=turn.speaker,
        parts=(TextPart(text=turn.text),) if turn.text else (),
        ts=turn.ts,
    )


def ingest(engine: ContextEngine, conversation: Conversation, user_id: str) -> Session:
    """A new session holding the conversation: each dialogue turn is a turn of its own
    (one append each), as a chat app recording messages as they arrive would write it."""
    session = engine.create_session(user_id=user_id, agent_id=BENCH_AGENT)
    for turn in conversation.turns:
        session.append(turn_draft(turn, conversation))
    # Index and embed every turn now, as a background worker would have done by the
    # time questions are asked; build_context latency then measures the lookup only.
    engine.search_index.sync(user_id, session.id)
    return session


def _evidence_texts(question: Question, conversation: Conversation) -> dict[str, str]:
    return {dia_id: conversation.turn(dia_id).text for dia_id in question.evidence}


def measure_agentctx(
    session: Session,
    conversation: Conversation,
    questions: Sequence[Question],
    *,
    results: Sequence[QuestionResult],
    budgets: Sequence[int],
    strategy: str | None,
) -> float | None:
    """Ask every question at every budget; record the outcomes into ``results``.

    Returns the seconds of the warm-up call made first (None without questions).
    """
    # cast: the attribute is checked at run time (require_build_context), not by the type.
    build: Any = cast(Any, session).build_context
    options: dict[str, Any] = {} if strategy is None else {"strategy": strategy}
    if not questions:
        return None
    started = time.perf_counter()
    build(query=questions[0].question, budget=budgets[0], **options)  # warm-up
    warmup = time.perf_counter() - started
    for question, result in zip(questions, results, strict=True):
        evidence = _evidence_texts(question, conversation)
        outcomes = result.outcomes.setdefault(AGENTCTX, {})
        for budget in budgets:
            started = time.perf_counter()
            window = build(query=question.question, budget=budget, **options)
            elapsed = time.perf_counter() - started
            text = window_text(window.messages, question.question)
            outcomes[budget] = Outcome(
                found=found_evidence(text, evidence), tokens=int(window.tokens), ms=elapsed * 1e3
            )
    return warmup


# ---------------------------------------------------------------- baselines


def measure_baselines(
    baselines: ConversationBaselines,
    conversation: Conversation,
    questions: Sequence[Question],
    *,
    results: Sequence[QuestionResult],
    budgets: Sequence[int],
    counter: TokenCounter,
) -> None:
    """Every baseline's window for every question at every budget, into ``results``."""
    turns = conversation.turns
    costs = turn_costs(turns, counter)
    lines = [render_turn(t) for t in turns]
    rankers: dict[str, tuple[Ranker, bool]] = {
        RECENT: (baselines.recent, True),
        BM25: (baselines.bm25_ranking, False),
    }
    if baselines.has_dense:
        rankers[HYBRID] = (baselines.hybrid, False)
    for question, result in zip(questions, results, strict=True):
        evidence = _evidence_texts(question, conversation)
        for system, (ranker, contiguous) in rankers.items():
            started = time.perf_counter()
            order = ranker(question.question)
            ranked = time.perf_counter() - started
            outcomes = result.outcomes.setdefault(system, {})
            for budget in budgets:
                started = time.perf_counter()
                taken = sorted(fill(order, costs, budget, contiguous=contiguous))
                filled = time.perf_counter() - started
                text = normalize("\n".join(lines[i] for i in taken))
                outcomes[budget] = Outcome(
                    found=found_evidence(text, evidence),
                    tokens=sum(costs[i] for i in taken),
                    ms=(ranked + filled) * 1e3,
                )


# ---------------------------------------------------------------- the run


def _file_summary(
    dataset: Dataset, conversations: Sequence[Conversation], asked: int
) -> FileSummary:
    stats = LoadStats()
    for conversation in conversations:
        stats.add(conversation.stats)
    return FileSummary(
        file=dataset.path.name,
        layout=dataset.layout,
        conversations=len(conversations),
        turns=sum(len(c.turns) for c in conversations),
        questions=asked,
        questions_in_file=stats.questions,
        skipped_adversarial=stats.adversarial,
        skipped_no_evidence=stats.no_evidence,
        dropped_evidence_ids=stats.dropped_ids,
    )


def _counter_name(counter: TokenCounter) -> str:
    return str(getattr(counter, "name", type(counter).__name__))


def run_recall_benchmark(
    config: RecallConfig,
    *,
    counter: TokenCounter | None = None,
    embedder: Embedder | None = None,
    progress: Progress | None = None,
) -> RecallReport:
    """Run the benchmark over ``config.data``.

    ``counter`` measures the baselines' windows (default: agentctx's estimate);
    ``embedder`` gives the hybrid baseline its dense ranking (default: all-MiniLM-L6-v2
    from the installed model package).
    """
    say = progress or (lambda _message: None)
    if config.agentctx:
        require_build_context()
    files = data_files(config.data)
    datasets = [load_dataset(path) for path in files]
    started = datetime.now(UTC)
    notes: list[str] = []
    results: list[QuestionResult] = []
    ingestion: list[IngestRecord] = []
    summaries: list[FileSummary] = []
    with tempfile.TemporaryDirectory(prefix="agentctx-recall-") as home:
        machine = machine_facts(Path(home))
        # An explicit URL: an AGENTCTX_URL in the environment must not receive bench data.
        engine = ContextEngine(
            url=f"sqlite:///{Path(home) / 'agentctx.db'}",
            home=home,
            redaction={"enabled": config.redaction},
            memory={"enabled": config.memory},
            # What windows find, not how fast: every window ranks by vectors of every
            # event, as after the background worker caught up (bench agentstep times it).
            jobs="inline",
        )
        counter = counter or engine_counter(engine)
        if config.baselines and embedder is None:
            say(f"loading {EMBEDDING_MODEL}")
            # Where the engine unpacks its model too: one copy, loaded once per process.
            embedder = load_embedder(Path(home) / "models")
        try:
            for dataset in datasets:
                conversations = dataset.conversations[: config.max_conversations]
                asked = 0
                for conversation in conversations:
                    # One user per conversation: nothing a user's memory holds crosses over.
                    user_id = f"{BENCH_USER_PREFIX}{len(ingestion) + 1}"
                    record, conv_results = _run_conversation(
                        dataset,
                        conversation,
                        config,
                        subject=(engine if config.agentctx else None, user_id),
                        embedder=embedder,
                        counter=counter,
                        say=say,
                    )
                    ingestion.append(record)
                    results.extend(conv_results)
                    asked += len(conv_results)
                summaries.append(_file_summary(dataset, conversations, asked))
        finally:
            engine.close()
    machine.load_average_end = load_average()
    if config.agentctx:
        machine.agentctx_settings = {
            "redaction": str(config.redaction),
            "memory": str(config.memory),
            "strategy": config.strategy or "(default)",
        }
        notes.append("agentctx: one unmeasured build_context call per session warms it up first")
    systems, budgets = config.systems, config.budgets
    by_category = {
        category: aggregate_all([r for r in results if r.category == category], systems, budgets)
        for category in sorted({r.category for r in results})
    }
    by_file: dict[str, list[Cell]] = {}
    if len(files) > 1:
        by_file = {
            s.file: aggregate_all([r for r in results if r.file == s.file], systems, budgets)
            for s in summaries
        }
    pooled = aggregate_all(results, systems, budgets)
    unknown = sorted({r.category for r in results} - set(CATEGORY_NAMES))
    if unknown:
        notes.append(f"categories without a name in this benchmark: {unknown}")
    return RecallReport(
        started_at=started,
        machine=machine,
        config=config,
        token_counter=_counter_name(counter),
        embedder=embedder_name(embedder) if embedder is not None else None,
        files=summaries,
        ingestion=ingestion,
        pooled=pooled,
        by_category=by_category,
        by_file=by_file,
        targets=judge(pooled, budgets, config.strategy),
        notes=notes,
        questions=results,
    )


def _run_conversation(
    dataset: Dataset,
    conversation: Conversation,
    config: RecallConfig,
    *,
    subject: tuple[ContextEngine | None, str],
    embedder: Embedder | None,
    counter: TokenCounter,
    say: Progress,
) -> tuple[IngestRecord, list[QuestionResult]]:
    engine, user_id = subject
    questions = conversation.questions[: config.limit_questions]
    name = dataset.path.name
    if conversation.sample_id != dataset.path.stem:
        name += f" {conversation.sample_id}"
    results = [
        QuestionResult(
            file=dataset.path.name,
            conversation=conversation.sample_id,
            question=q.question,
            category=q.category,
            evidence=list(q.evidence),
        )
        for q in questions
    ]
    record = IngestRecord(
        file=dataset.path.name,
        conversation=conversation.sample_id,
        turns=len(conversation.turns),
        questions=len(questions),
    )
    if engine is not None:
        say(f"{name}: ingesting {len(conversation.turns):,} turns into agentctx")
        started = time.perf_counter()
        session = ingest(engine, conversation, user_id)
        record.agentctx_s = time.perf_counter() - started
        say(f"{name}: {len(questions)} questions x {len(config.budgets)} budgets on build_context")
        record.first_build_s = measure_agentctx(
            session,
            conversation,
            questions,
            results=results,
            budgets=config.budgets,
            strategy=config.strategy,
        )
    if config.baselines:
        say(f"{name}: indexing {len(conversation.turns):,} turns for the baselines")
        baselines = ConversationBaselines(conversation.turns, embedder)
        record.embed_s, record.bm25_s = baselines.embed_seconds, baselines.index_seconds
        measure_baselines(
            baselines,
            conversation,
            questions,
            results=results,
            budgets=config.budgets,
            counter=counter,
        )
    return record, results
