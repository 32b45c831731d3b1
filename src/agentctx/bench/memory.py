"""``agentctx bench memory``: recall of long-term memory, its cost, and search latency.

1. **Recall on a chat file** (LoCoMo or REALTALK layout, read by ``bench.recall_data``).
   Each conversation belongs to one user; each of its chat sessions (``session_N``)
   becomes an agentctx session, one event per dialogue turn (``bench.recall.turn_draft``:
   speaker 1 is the user, speaker 2 the assistant). Extraction then runs offline (rules
   and procedural statistics) over every session, timed around ``extract_session``. For
   every question, ``engine.memory.search(user, question, limit=10)`` is scored: a hit
   when a retrieved memory's provenance cites an evidence turn (its event id). Recall is
   given at 10 results and within 500 tokens (memories taken in rank order while their
   contents' estimated tokens add up to at most 500). The same two figures are measured
   for raw turns: the engine's event search (``SearchIndex.search``) over each session,
   the best 10 hits across the user's sessions by fused score.
2. **Search latency** of ``MemoryIndex.search`` with 10k, 100k (…) memories for one user,
   on SQLite and, with ``pg=True``, on a temporary PostgreSQL (``bench.memory_latency``).
   Targets: p95 ≤ 50 ms at 100k on SQLite and at 1M on PostgreSQL; a size not measured
   is reported as not measured, never as passed.
3. **With a chat model** (``llm_url`` given): the same extraction with the model doing
   declarative memory, in a second engine; calls and tokens per turn, fallbacks to the
   rules, and the recall of what it found.

PII redaction is off for the ingested turns unless asked for, as in ``bench recall``.
"""

from __future__ import annotations

import contextlib
import tempfile
import time
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from agentctx.bench.machine import (
    load_average,
    machine_facts,
    postgres_facts,
    temporary_postgres,
)
from agentctx.bench.memory_latency import run_memory_latency
from agentctx.bench.memory_models import (
    LATENCY_P95_TARGET_MS,
    PG_TARGET_SIZE,
    SQLITE_TARGET_SIZE,
    TOKEN_BUDGET,
    TOP_K,
    ChatRecall,
    ExtractionRun,
    LatencyFigures,
    LLMUsage,
    MemoryBenchConfig,
    MemoryBenchReport,
    QuestionOutcome,
    RecallFigures,
    Spread,
    Verdict,
)
from agentctx.bench.recall import turn_draft
from agentctx.bench.recall_data import Conversation, Question, load_dataset
from agentctx.engine import ContextEngine
from agentctx.events import Event
from agentctx.llm.chat import LLM
from agentctx.llm.config import llm_from_config
from agentctx.memory import DECLARATIVE_KINDS, Memory, MemoryCandidate, MemoryKind
from agentctx.memory.calibration import LabelledPair
from agentctx.memory.extract import LLMExtractor
from agentctx.memory.index import memory_text
from agentctx.sessions.session import Session
from agentctx.storage.database import Database
from agentctx.tokens import estimate_text_tokens

Progress = Callable[[str], None]
BENCH_USER_PREFIX = "memory-bench-"
BENCH_AGENT = "memory-bench"


# ---------------------------------------------------------------- part (1): ingestion


@dataclass
class _Chat:
    """A conversation ingested for one user: its sessions and where each turn went."""

    conversation: Conversation
    user_id: str
    sessions: dict[int, str] = field(default_factory=dict)  # session_N -> session id
    turns_in: dict[str, int] = field(default_factory=dict)  # session id -> its turns
    event_of: dict[str, str] = field(default_factory=dict)  # dia_id -> event id
    text_of: dict[str, str] = field(default_factory=dict)  # event id -> the turn's text
    user_events: set[str] = field(default_factory=set)


def ingest_sessions(engine: ContextEngine, conversation: Conversation, user_id: str) -> _Chat:
    """One agentctx session per chat session of ``conversation``, each dialogue turn an
    append of its own (``bench.recall.turn_draft``), all for ``user_id``."""
    chat = _Chat(conversation, user_id)
    open_sessions: dict[int, Session] = {}
    for turn in conversation.turns:
        session = open_sessions.get(turn.session)
        if session is None:
            session = engine.create_session(user_id=user_id, agent_id=BENCH_AGENT)
            open_sessions[turn.session] = session
            chat.sessions[turn.session] = session.id
        (event,) = session.append(turn_draft(turn, conversation))
        chat.turns_in[session.id] = chat.turns_in.get(session.id, 0) + 1
        chat.event_of[turn.dia_id] = event.event_id
        chat.text_of[event.event_id] = turn.text
        if turn.speaker != conversation.speaker_2:
            chat.user_events.add(event.event_id)
    return chat


def _extract(engine: ContextEngine, chats: Sequence[_Chat]) -> tuple[list[float], float]:
    """Extract every session of every chat; per session, milliseconds per turn."""
    per_turn: list[float] = []
    started = time.perf_counter()
    for chat in chats:
        for session_id, turns in chat.turns_in.items():
            t0 = time.perf_counter()
            engine.memory.extract_session(chat.user_id, session_id)
            per_turn.append((time.perf_counter() - t0) * 1e3 / turns)
    return per_turn, time.perf_counter() - started


# ---------------------------------------------------------------- part (1): scoring


@dataclass(frozen=True)
class Ranked:
    """One retrieved result: the events it cites and its tokens."""

    events: frozenset[str]
    tokens: int


def memory_results(engine: ContextEngine, user_id: str, query: str) -> list[Ranked]:
    """The user's 10 best memories for ``query``, each with the events it was learned from."""
    return [
        Ranked(
            frozenset(source.event_id for source in hit.memory.sources),
            estimate_text_tokens(hit.memory.content),
        )
        for hit in engine.memory.search(user_id, query, limit=TOP_K)
    ]


def turn_results(engine: ContextEngine, chat: _Chat, query: str) -> list[Ranked]:
    """The 10 best raw turns for ``query`` across the user's sessions: each session's
    event search, merged by fused score (ties to the later session)."""
    found: list[tuple[float, int, str]] = []
    for order, session_id in enumerate(chat.sessions.values()):
        for hit in engine.search_index.search(
            chat.user_id, session_id, query, limit=TOP_K, sync=False
        ):
            found.append((hit.score, order, hit.event_id))
    found.sort(key=lambda item: (-item[0], -item[1]))
    return [
        Ranked(frozenset({event_id}), estimate_text_tokens(chat.text_of.get(event_id, "")))
        for _, _, event_id in found[:TOP_K]
    ]


def first_hit(results: Sequence[Ranked], evidence: frozenset[str]) -> int | None:
    """The 1-based rank of the first result citing an evidence event (None: none does)."""
    for rank, result in enumerate(results, start=1):
        if result.events & evidence:
            return rank
    return None


def hit_in_budget(results: Sequence[Ranked], evidence: frozenset[str], budget: int) -> bool:
    """Whether a result citing evidence is among those taken in rank order while their
    tokens add up to at most ``budget``."""
    spent = 0
    for result in results:
        spent += result.tokens
        if spent > budget:
            return False
        if result.events & evidence:
            return True
    return False


@dataclass
class _Tally:
    system: str
    questions: int = 0
    hits_at_k: int = 0
    hits_in_budget: int = 0
    tokens: int = 0
    user_questions: int = 0
    user_hits: int = 0

    def add(self, results: Sequence[Ranked], evidence: frozenset[str], user: bool) -> QuestionHit:
        rank = first_hit(results, evidence)
        budget = hit_in_budget(results, evidence, TOKEN_BUDGET)
        self.questions += 1
        self.hits_at_k += rank is not None
        self.hits_in_budget += budget
        self.tokens += sum(r.tokens for r in results)
        self.user_questions += user
        self.user_hits += user and rank is not None
        return QuestionHit(rank, budget)

    def figures(self) -> RecallFigures:
        return RecallFigures(
            system=self.system,
            questions=self.questions,
            hits_at_k=self.hits_at_k,
            hits_in_budget=self.hits_in_budget,
            mean_tokens_at_k=self.tokens / self.questions if self.questions else 0.0,
            user_questions=self.user_questions,
            user_hits_at_k=self.user_hits,
        )


@dataclass(frozen=True)
class QuestionHit:
    """Where one system found one question's evidence."""

    rank: int | None
    in_budget: bool


def _questions(chat: _Chat, limit: int | None) -> Iterator[tuple[Question, frozenset[str], bool]]:
    for question in chat.conversation.questions[:limit]:
        evidence = frozenset(chat.event_of[d] for d in question.evidence if d in chat.event_of)
        yield question, evidence, bool(evidence & chat.user_events)


def user_memories(engine: ContextEngine, user_id: str) -> list[Memory]:
    """Every memory of ``user_id``, whatever its status."""
    found: list[Memory] = []
    while True:
        page = engine.memory.list(user_id, status=None, limit=100, offset=len(found))
        found.extend(page)
        if len(page) < 100:
            return found


def chat_labelled_pairs(engine: ContextEngine, conversation: Conversation) -> list[LabelledPair]:
    """The labelled set a chat gives the dense threshold's calibration: each question
    with every active declarative memory learned from the chat, relevant when the memory
    was learned from one of the question's evidence turns (a hit of this benchmark).
    ``engine`` is a fresh engine with memory on; the chat is ingested and extracted."""
    user_id = "calibration-user"
    chat = ingest_sessions(engine, conversation, user_id)
    _extract(engine, [chat])
    memories = [
        m
        for m in user_memories(engine, user_id)
        if m.kind in DECLARATIVE_KINDS and m.status == "active"
    ]
    pairs: list[LabelledPair] = []
    for question, evidence, _by_user in _questions(chat, None):
        pairs.extend(
            LabelledPair(
                question.question,
                memory_text(m),
                bool(evidence & {source.event_id for source in m.sources}),
            )
            for m in memories
        )
    return pairs


def score(
    chats: Sequence[_Chat],
    systems: dict[str, Callable[[_Chat, str], list[Ranked]]],
    limit: int | None,
) -> tuple[dict[str, RecallFigures], list[QuestionOutcome]]:
    """Ask every question of every chat of each system; recall figures and per-question
    outcomes."""
    tallies = {name: _Tally(name) for name in systems}
    outcomes = []
    for chat in chats:
        for question, evidence, user in _questions(chat, limit):
            ranks: dict[str, int | None] = {}
            budgets: dict[str, bool] = {}
            for name, retrieve in systems.items():
                hit = tallies[name].add(retrieve(chat, question.question), evidence, user)
                ranks[name], budgets[name] = hit.rank, hit.in_budget
            outcomes.append(
                QuestionOutcome(
                    conversation=chat.conversation.sample_id,
                    question=question.question,
                    category=question.category,
                    evidence=list(question.evidence),
                    user_evidence=user,
                    ranks=ranks,
                    in_budget=budgets,
                )
            )
    return {name: tally.figures() for name, tally in tallies.items()}, outcomes


def _by_kind(engine: ContextEngine, chats: Sequence[_Chat]) -> tuple[int, dict[str, int]]:
    kinds: Counter[str] = Counter()
    for chat in chats:
        offset = 0
        while page := engine.memory.list(chat.user_id, limit=1000, offset=offset):
            kinds.update(memory.kind.value for memory in page)
            offset += len(page)
    ordered = {kind.value: kinds[kind.value] for kind in MemoryKind if kinds[kind.value]}
    return sum(kinds.values()), ordered


# ---------------------------------------------------------------- part (3): a chat model


@dataclass
class _CountingExtractor:
    """The model's declarative extraction, adding up what every call cost."""

    extractor: LLMExtractor
    calls: int = 0
    attempts: int = 0
    fallbacks: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0

    def __call__(self, events: Sequence[Event]) -> list[MemoryCandidate]:
        candidates, report = self.extractor.extract(events)
        self.calls += report.calls
        self.attempts += report.attempts
        self.fallbacks += report.fell_back
        self.prompt_tokens += report.usage.prompt_tokens
        self.completion_tokens += report.usage.completion_tokens
        return candidates


def use_counting_llm(engine: ContextEngine, llm: LLM) -> _CountingExtractor:
    """Make ``engine.memory`` extract declarative memory with ``llm``, counting its calls
    (the procedural extractor stays)."""
    counting = _CountingExtractor(LLMExtractor(llm))
    engine.memory.extractors = [
        (version, kinds, extract)
        for version, kinds, extract in engine.memory.extractors
        if not kinds & DECLARATIVE_KINDS
    ]
    engine.memory.extractors.insert(
        0, (counting.extractor.extractor_version, frozenset(DECLARATIVE_KINDS), counting)
    )
    return counting


# ---------------------------------------------------------------- part (1) and (3): the run


def _engine(home: Path, name: str, config: MemoryBenchConfig, **extra: Any) -> ContextEngine:
    # An explicit URL: an AGENTCTX_URL in the environment must not receive bench data.
    return ContextEngine(
        url=f"sqlite:///{home / f'{name}.db'}",
        home=home,
        memory={"enabled": True},
        embeddings={"provider": config.embedder},
        redaction={"enabled": config.redaction},
        jobs="manual",
        **extra,
    )


def _ingest_all(engine: ContextEngine, conversations: Sequence[Conversation]) -> list[_Chat]:
    return [
        ingest_sessions(engine, conversation, f"{BENCH_USER_PREFIX}{i + 1}")
        for i, conversation in enumerate(conversations)
    ]


def run_chat_recall(config: MemoryBenchConfig, home: Path, say: Progress) -> ChatRecall:
    """Part (1), and part (3) when ``config.llm_url`` is set."""
    assert config.data is not None
    dataset = load_dataset(config.data)
    conversations = dataset.conversations
    turns = sum(len(c.turns) for c in conversations)
    with _engine(home, "offline", config) as engine:
        say(f"{config.data.name}: ingesting {turns:,} turns")
        started = time.perf_counter()
        chats = _ingest_all(engine, conversations)
        ingest_s = time.perf_counter() - started
        say("indexing the raw turns (terms and embeddings)")
        started = time.perf_counter()
        for chat in chats:
            for session_id in chat.sessions.values():
                engine.search_index.sync(chat.user_id, session_id)
        index_s = time.perf_counter() - started
        embedder = engine.search_index.embedder
        say("extracting memories offline (rules + procedural)")
        per_turn, extract_s = _extract(engine, chats)
        memories, by_kind = _by_kind(engine, chats)
        say(f"{memories} memories; asking the questions")
        started = time.perf_counter()
        figures, outcomes = score(
            chats,
            {
                "memories": lambda chat, q: memory_results(engine, chat.user_id, q),
                "raw turns": lambda chat, q: turn_results(engine, chat, q),
            },
            config.limit_questions,
        )
        ask_s = time.perf_counter() - started
    offline = ExtractionRun(
        method="offline (rules + procedural)",
        memories=memories,
        by_kind=by_kind,
        ms_per_turn=Spread.of(per_turn),
        extract_s=extract_s,
        recall=figures["memories"],
    )
    with_llm = _run_llm(config, home, conversations, say) if config.llm_url else None
    return ChatRecall(
        file=dataset.path.name,
        layout=dataset.layout,
        conversations=len(conversations),
        sessions=sum(len(c.sessions) for c in chats),
        turns=turns,
        user_turns=sum(len(c.user_events) for c in chats),
        questions=figures["memories"].questions,
        questions_in_file=sum(c.stats.questions for c in conversations),
        ingest_s=ingest_s,
        index_s=index_s,
        ask_s=ask_s,
        embedder=embedder.name if embedder is not None else "none",
        offline=offline,
        raw_turns=figures["raw turns"],
        with_llm=with_llm,
        questions_detail=outcomes,
    )


def _run_llm(
    config: MemoryBenchConfig,
    home: Path,
    conversations: Sequence[Conversation],
    say: Progress,
) -> ExtractionRun:
    """Part (3): extraction with the chat model of ``config.llm_url``, in its own engine."""
    llm_config = config.llm_config()
    with _engine(home, "llm", config, llm=llm_config) as engine:
        llm = llm_from_config(engine.settings.llm, "fast")
        assert llm is not None  # provider "openai"
        counting = use_counting_llm(engine, llm)
        chats = _ingest_all(engine, conversations)
        say(f"extracting memories with {llm.name}")
        per_turn, extract_s = _extract(engine, chats)
        memories, by_kind = _by_kind(engine, chats)
        figures, _ = score(
            chats,
            {"memories (llm)": lambda chat, q: memory_results(engine, chat.user_id, q)},
            config.limit_questions,
        )
        turns = sum(len(c.conversation.turns) for c in chats)
    usage = LLMUsage(
        model=config.llm_model,
        base_url=str(config.llm_url),
        turns=turns,
        calls=counting.calls,
        attempts=counting.attempts,
        fallbacks=counting.fallbacks,
        prompt_tokens=counting.prompt_tokens,
        completion_tokens=counting.completion_tokens,
        ms_per_turn=Spread.of(per_turn),
    )
    return ExtractionRun(
        method=f"{llm.name} + procedural",
        memories=memories,
        by_kind=by_kind,
        ms_per_turn=Spread.of(per_turn),
        extract_s=extract_s,
        recall=figures["memories (llm)"],
        llm=usage,
    )


# ---------------------------------------------------------------- part (2): latency


def _latency_rows(
    backend: str, url: str, sizes: Sequence[int], queries: int
) -> tuple[list[LatencyFigures], str]:
    report = run_memory_latency(url, sizes, queries=queries)
    rows = [
        LatencyFigures(
            backend=backend,
            size=row.size,
            fill_s=row.fill_seconds,
            p50_ms=row.p50_ms,
            p95_ms=row.p95_ms,
            dense=row.dense,
        )
        for row in report.rows
    ]
    return rows, report.embedder


def judge(rows: Sequence[LatencyFigures]) -> list[Verdict]:
    """The two latency targets against the rows measured (not measured: ``passed`` None)."""
    verdicts = []
    for backend, size, label in (
        ("sqlite", SQLITE_TARGET_SIZE, "SQLite"),
        ("postgresql", PG_TARGET_SIZE, "PostgreSQL"),
    ):
        name = f"memory search p95 <= {LATENCY_P95_TARGET_MS:g} ms at {size:,} on {label}"
        row = next((r for r in rows if r.backend == backend and r.size == size), None)
        if row is None:
            verdicts.append(Verdict(name=name, passed=None, detail=f"not measured at {size:,}"))
        else:
            verdicts.append(
                Verdict(
                    name=name,
                    passed=row.p95_ms <= LATENCY_P95_TARGET_MS,
                    detail=f"p95 {row.p95_ms:.1f} ms",
                )
            )
    return verdicts


def run_memory_benchmark(
    config: MemoryBenchConfig, *, progress: Progress | None = None
) -> MemoryBenchReport:
    """Run the parts ``config`` asks for (see the module docstring)."""
    say = progress or (lambda _message: None)
    started_at = datetime.now(UTC)
    started = time.perf_counter()
    notes: list[str] = []
    chat: ChatRecall | None = None
    rows: list[LatencyFigures] = []
    latency_embedder: str | None = None
    with tempfile.TemporaryDirectory(prefix="agentctx-memory-") as tmp:
        home = Path(tmp)
        machine = machine_facts(home)
        if config.data is not None:
            chat = run_chat_recall(config, home, say)
        if config.sizes:
            say(f"memory search latency on SQLite at {', '.join(map(str, config.sizes))}")
            found, latency_embedder = _latency_rows(
                "sqlite", f"sqlite:///{home / 'latency.db'}", config.sizes, config.queries
            )
            rows.extend(found)
        if config.pg and config.pg_sizes:
            say(f"memory search latency on PostgreSQL at {', '.join(map(str, config.pg_sizes))}")
            with _postgres(config, home) as url:
                db = Database(url)
                try:
                    machine.postgres, machine.postgres_settings = postgres_facts(db)
                finally:
                    db.dispose()
                found, latency_embedder = _latency_rows(
                    "postgresql", url, config.pg_sizes, config.queries
                )
                rows.extend(found)
    machine.load_average_end = load_average()
    machine.agentctx_settings = {
        "redaction": str(config.redaction),
        "embeddings": config.embedder,
        "jobs": "manual",
    }
    if chat is not None:
        notes.append(
            "rules extract what the user (speaker 1) says about themselves; questions about "
            "speaker 2 rest on assistant turns no rule reads (see the user-evidence column)"
        )
    if config.llm_url is None and config.data is not None:
        notes.append("with a chat model: not measured (no --llm-url)")
    return MemoryBenchReport(
        started_at=started_at,
        machine=machine,
        config=config,
        token_counter="agentctx estimate (agentctx.tokens.estimate_text_tokens)",
        chat=chat,
        latency=rows,
        latency_embedder=latency_embedder,
        latency_queries=config.queries if rows else 0,
        verdicts=judge(rows),
        notes=notes,
        total_s=time.perf_counter() - started,
    )


def _postgres(config: MemoryBenchConfig, home: Path) -> AbstractContextManager[str]:
    """The PostgreSQL to fill: the one given, else a temporary server under ``home``."""
    if config.pg_url is not None:
        return contextlib.nullcontext(config.pg_url)
    return temporary_postgres(home)
