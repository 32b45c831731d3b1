"""Fact timelines for the memory benchmark: ingesting a case's sessions, and scoring
what offline extraction learns from them.

* :func:`ingest_case` writes each session of a case (:mod:`memory_facts_cases`) as an
  agentctx session of the case's user, every event stamped on the session's date; each
  user line opens a turn, so the tool calls and results after it are that turn's (what
  procedural extraction reads).
* :func:`score_extraction` runs offline extraction over the sessions in order and
  scores it: a fact is learned when a memory of the user (any status) holds its value
  (case-insensitively) and cites a session stating it; a memory holding no fact value
  of its case, or holding a distractor outside the fact values it holds, is a
  precision error.
* :func:`extraction_report` does all of it for a file or folder in a fresh engine and
  returns recall and precision per category.

The cases and their loading are re-exported from :mod:`memory_facts_cases`.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time, timedelta
from pathlib import Path

from agentctx.bench.memory import BENCH_AGENT, user_memories
from agentctx.bench.memory_facts_cases import (
    CATEGORIES,
    LANGUAGES,
    ROLES,
    Case,
    Fact,
    Procedure,
    Question,
    Session,
    Turn,
    load_cases,
)
from agentctx.bench.recall import turn_draft
from agentctx.bench.recall_data import Conversation
from agentctx.bench.recall_data import Turn as DialogueTurn
from agentctx.engine import ContextEngine
from agentctx.memory import Memory, MemoryKind
from agentctx.sessions.turns import Turn as OpenTurn

_USER, _ASSISTANT = "user", "assistant"
_SESSION_START = time(9, 0)  # the first event of a session's day; each next one a minute later


# ---------------------------------------------------------------- ingestion


def ingest_case(engine: ContextEngine, case: Case) -> list[str]:
    """Each session of ``case`` as an agentctx session of ``case.user_id``, in order;
    the session ids. Events are stamped on the session's date a minute apart; text lines
    are the dialogue turns of ``bench.recall.turn_draft``; each user line opens a turn,
    which the tool calls and results after it belong to."""
    speakers = Conversation(
        sample_id=case.id, speaker_1=_USER, speaker_2=_ASSISTANT, turns=[], questions=[]
    )
    ids: list[str] = []
    for index, session in enumerate(case.sessions):
        recorded = engine.create_session(user_id=case.user_id, agent_id=BENCH_AGENT)
        ids.append(recorded.id)
        start = datetime.combine(session.date, _SESSION_START, tzinfo=UTC)
        turn: OpenTurn | None = None
        calls: dict[str, str | None] = {}  # tool name -> its latest call's id
        for position, line in enumerate(session.turns):
            ts = start + timedelta(minutes=position)
            if turn is None or line.role == _USER:
                if turn is not None:
                    turn.end()
                turn = recorded.begin_turn()
            if line.role == "tool_call":
                call = turn.add_tool_call(line.tool or "tool", dict(line.args), ts=ts)
                calls[line.tool or "tool"] = call.call_id
            elif line.role == "tool_result":
                call_id = calls.get(line.tool or "tool") or f"{line.tool}-{index}-{position}"
                turn.add_tool_result(call_id, content=line.text, is_error=not line.ok, ts=ts)
            else:
                dialogue = DialogueTurn(
                    dia_id=f"S{index}:{position}",
                    speaker=line.role,
                    text=line.text,
                    ts=ts,
                    index=position,
                    session=index,
                )
                turn.append(turn_draft(dialogue, speakers))
        if turn is not None:
            turn.end()
    return ids


# ---------------------------------------------------------------- scoring


@dataclass
class CategoryScore:
    """Extraction figures of one category."""

    stated: int = 0  # facts the users state
    learned: int = 0  # of which a memory holds, citing a stating session
    memories: int = 0  # memories learned from the category's cases
    wrong: int = 0  # of which state nothing the user said (or a distractor)
    missed: list[str] = field(default_factory=list)  # "case: value" of facts not learned
    false: list[str] = field(default_factory=list)  # "case: content" of wrong memories

    @property
    def recall(self) -> float:
        """Learned over stated (1.0 with nothing stated)."""
        return self.learned / self.stated if self.stated else 1.0

    @property
    def precision(self) -> float:
        """Right memories over memories (1.0 with no memory)."""
        return (self.memories - self.wrong) / self.memories if self.memories else 1.0

    def add(self, other: CategoryScore) -> None:
        """Add ``other``'s counts and lists to these."""
        self.stated += other.stated
        self.learned += other.learned
        self.memories += other.memories
        self.wrong += other.wrong
        self.missed.extend(other.missed)
        self.false.extend(other.false)


@dataclass
class ExtractionScore:
    """Extraction figures of a case (or a suite): per category."""

    categories: dict[str, CategoryScore] = field(default_factory=dict)

    def category(self, name: str) -> CategoryScore:
        """The figures of ``name`` (created empty)."""
        return self.categories.setdefault(name, CategoryScore())

    def add(self, other: ExtractionScore) -> None:
        """Add ``other``'s figures to these, category by category."""
        for name, score in other.categories.items():
            self.category(name).add(score)


def extract_case(engine: ContextEngine, case: Case, session_ids: Sequence[str]) -> None:
    """Offline extraction over the case's sessions, in order."""
    for session_id in session_ids:
        engine.memory.extract_session(case.user_id, session_id)


def score_extraction(
    engine: ContextEngine, case: Case, session_ids: Sequence[str] | None = None
) -> ExtractionScore:
    """Extraction recall and precision of ``case``, per category.

    Without ``session_ids`` the case is ingested first (:func:`ingest_case`); either way
    extraction then runs over its sessions in order. Procedural memories are scored
    against the case's ``procedure`` (its tool path present with the counts expected),
    declarative ones against its facts.
    """
    if session_ids is None:
        session_ids = ingest_case(engine, case)
    extract_case(engine, case, session_ids)
    memories = user_memories(engine, case.user_id)
    score = ExtractionScore()
    declarative = [m for m in memories if m.kind is not MemoryKind.PROCEDURAL]
    for fact in case.facts:
        figures = score.category(fact.category)
        figures.stated += 1
        stating = {session_ids[i] for i in fact.sessions}
        if any(_holds(m.content, fact.value) and stating & set(m.session_ids) for m in declarative):
            figures.learned += 1
        else:
            figures.missed.append(f"{case.id}: {fact.value}")
    figures = score.category(case.category)
    values = [fact.value for fact in case.facts]
    for memory in declarative:
        figures.memories += 1
        if not _right(memory.content, values, case.distractors):
            figures.wrong += 1
            figures.false.append(f"{case.id}: {memory.content}")
    if case.procedure is not None:
        _score_procedure(case, memories, score.category("procedural"))
    return score


def _holds(content: str, value: str) -> bool:
    return value.casefold() in content.casefold()


def _right(content: str, values: Iterable[str], distractors: Iterable[str]) -> bool:
    held = [v for v in values if _holds(content, v)]
    if not held:
        return False
    # A distractor is an error unless it is part of a value the memory holds ("engineer"
    # in "software engineer").
    return not any(_holds(content, d) and not any(_holds(v, d) for v in held) for d in distractors)


def turn_outcomes(case: Case) -> tuple[int, int]:
    """(tasks that succeeded, tasks that failed) in the case's sessions: a task is a user
    line and the tool lines after it, and it succeeded when its last tool result is ok
    (a retry that worked is a success; the error before it is not a task of its own)."""
    done = failed = 0
    for session in case.sessions:
        last: bool | None = None
        for line in (*session.turns, Turn(role="user")):
            if line.role == "user":
                if last is not None:
                    done, failed = (done + 1, failed) if last else (done, failed + 1)
                last = None
            elif line.role == "tool_result":
                last = line.ok
    return done, failed


def _score_procedure(case: Case, memories: Sequence[Memory], figures: CategoryScore) -> None:
    """Learned when the user's tool-path statistics add up to the tasks that succeeded
    and failed, name only the case's tools, and each says in its text what its counts
    hold (the text made from the merged counts)."""
    assert case.procedure is not None
    figures.stated += 1
    stats = [(m, m.procedural) for m in memories if m.procedural is not None]
    successes = sum(p.successes for _, p in stats)
    failures = sum(p.failures for _, p in stats)
    expected = turn_outcomes(case)
    tools = set(case.procedure.tools)
    texts = all(m.content == p.render() for m, p in stats)
    known = all(set(p.tools) <= tools for _, p in stats)
    if stats and (successes, failures) == expected and texts and known:
        figures.learned += 1
    else:
        figures.missed.append(
            f"{case.id}: tasks {expected[0]}/{expected[1]} ok/failed, statistics "
            f"{successes}/{failures} in {len(stats)} path(s)"
            f"{'' if texts else ', a text not made from its counts'}"
            f"{'' if known else ', a tool the case does not call'}"
        )


# ---------------------------------------------------------------- report


@dataclass(frozen=True)
class CategoryFigures:
    """Recall and precision of one category, with what went wrong."""

    stated: int
    learned: int
    recall: float
    memories: int
    precision: float
    missed: tuple[str, ...]
    false: tuple[str, ...]


def extraction_report(path: Path | str, *, lang: str | None = None) -> dict[str, CategoryFigures]:
    """Extraction recall and precision per category over the cases of ``path`` (a file
    or folder; only ``lang``'s cases when given), each case in its own user of one fresh
    engine (a temporary SQLite home, redaction off so names stay as written, manual
    jobs, offline rules)."""
    cases = [c for c in load_cases(path) if lang is None or c.lang == lang]
    total = ExtractionScore()
    with tempfile.TemporaryDirectory(prefix="agentctx-facts-") as folder:
        home = Path(folder)
        with ContextEngine(
            url=f"sqlite:///{home / 'facts.db'}",
            home=home,
            memory={"enabled": True},
            redaction={"enabled": False},
            jobs="manual",
        ) as engine:
            for case in cases:
                total.add(score_extraction(engine, case))
    return {
        name: CategoryFigures(
            stated=s.stated,
            learned=s.learned,
            recall=round(s.recall, 4),
            memories=s.memories,
            precision=round(s.precision, 4),
            missed=tuple(s.missed),
            false=tuple(s.false),
        )
        for name, s in sorted(total.categories.items())
    }


__all__ = [
    "CATEGORIES",
    "LANGUAGES",
    "ROLES",
    "Case",
    "CategoryFigures",
    "CategoryScore",
    "ExtractionScore",
    "Fact",
    "Procedure",
    "Question",
    "Session",
    "Turn",
    "extract_case",
    "extraction_report",
    "ingest_case",
    "load_cases",
    "score_extraction",
    "user_memories",
]
