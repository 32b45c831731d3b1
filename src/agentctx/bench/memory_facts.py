"""``agentctx bench memory --timelines DIR``: memory that stays true, on fact timelines.

Each case (:mod:`agentctx.bench.memory_facts_data`) is one user's sessions that state,
repeat, change or retract facts, and questions asked after the last one. A suite folder
holds two halves, ``dev/`` (what rules and thresholds were tuned on) and ``heldout/``
(never looked at while tuning); each half runs in a fresh engine of the default
configuration (memory on, the default embedder and redaction), and is reported alone.

Per half:

* **latest truth**: the top memory of ``memory.search(user, question)`` states an
  answer (for a retraction with nothing left to say: it does not state the retracted
  value as true); with ``as_of``, the search is as of the end of that day;
* **stale injected**: memories a window would inject (``memory.verified``) that state a
  stale value as true (must be 0);
* **paraphrase recall@5**: an answer among the top five memories (questions are asked
  as users ask, in other words than the statements);
* **extraction** recall and precision per category (offline rules), and whether each
  procedural case's tool path holds the counts expected and a text made from them.

``calibrate=True`` also measures the dense threshold on the ``dev`` half's questions
(:mod:`agentctx.memory.calibration`).
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, time
from pathlib import Path

from agentctx.bench.memory import chat_labelled_pairs
from agentctx.bench.memory_facts_data import (
    Case,
    ExtractionScore,
    Question,
    ingest_case,
    load_cases,
    score_extraction,
    user_memories,
)
from agentctx.bench.recall_data import load_dataset
from agentctx.engine import ContextEngine
from agentctx.memory import Memory, MemoryKind
from agentctx.memory.calibration import Calibration, LabelledPair, calibrate
from agentctx.memory.index import memory_text

TARGETS = {
    "latest_truth": 0.97,
    "stale_injected": 0,
    "paraphrase_recall_at_5": 0.95,
    "extraction_recall": 0.85,
    "extraction_precision": 1.0,
}
"""The issue's targets: per half, per category for extraction."""


@dataclass(frozen=True)
class QuestionOutcome:
    """One question's result."""

    case: str
    lang: str
    question: str
    as_of: str | None
    correct: bool
    at_5: bool | None  # None: a question with no answer to find
    stale_injected: tuple[str, ...]  # the stale memories' texts
    top: str | None
    answer_stored: bool = True  # False: the redaction gate kept every answer out of storage


@dataclass
class HalfReport:
    """The figures of one half of the suite."""

    name: str
    cases: int = 0
    outcomes: list[QuestionOutcome] = field(default_factory=list)
    extraction: ExtractionScore = field(default_factory=ExtractionScore)

    def share(
        self,
        lang: str | None = None,
        *,
        as_of: bool | None = None,
        stored_only: bool = False,
    ) -> float:
        """Latest-truth accuracy (of ``lang``'s questions; only ``as_of`` ones, or none;
        with ``stored_only``, of the questions whose answer reached storage)."""
        chosen = [
            o
            for o in self.outcomes
            if (lang is None or o.lang == lang)
            and (as_of is None or (o.as_of is not None) == as_of)
            and (o.answer_stored or not stored_only)
        ]
        return sum(o.correct for o in chosen) / len(chosen) if chosen else 1.0

    @property
    def redacted_answers(self) -> int:
        """Questions whose every answer the redaction gate kept out of storage."""
        return sum(not o.answer_stored for o in self.outcomes)

    def paraphrase_recall(self, *, stored_only: bool = False) -> float:
        """Questions with an answer that found it among their top five memories."""
        asked = [
            o.at_5
            for o in self.outcomes
            if o.at_5 is not None and (o.answer_stored or not stored_only)
        ]
        return sum(asked) / len(asked) if asked else 1.0

    @property
    def stale_injected(self) -> int:
        """Stale memories a window would have injected, over every question."""
        return sum(len(o.stale_injected) for o in self.outcomes)


@dataclass
class FactsReport:
    """The suite's report: each half, and the calibration when asked for."""

    halves: list[HalfReport]
    embedder: str
    calibration: Calibration | None = None
    redaction: bool = True


def states(memory: Memory, values: Sequence[str]) -> bool:
    """Whether ``memory``'s text holds one of ``values`` (case-insensitive)."""
    text = memory.content.casefold()
    return any(value.casefold() in text for value in values)


def states_stale(memory: Memory, question: Question) -> bool:
    """Whether ``memory`` states a stale value of ``question`` as true."""
    return (
        not memory.retracted
        and states(memory, question.stale)
        and not states(memory, question.answer)
    )


def stored_text(engine: ContextEngine, case: Case, session_ids: Sequence[str]) -> str:
    """Everything the case's sessions hold in storage (after the redaction gate),
    case-folded."""
    return "\n".join(
        event.text
        for session_id in session_ids
        for event in engine.get_session(session_id, case.user_id, record_access=False).events()
    ).casefold()


def ask(engine: ContextEngine, case: Case, question: Question, stored: str = "") -> QuestionOutcome:
    """One question after the case's last session (``stored``: the case's stored text,
    to tell an answer the redaction gate removed)."""
    as_of = (
        datetime.combine(question.as_of, time(23, 59, 59), tzinfo=UTC)
        if question.as_of is not None
        else None
    )
    hits = [h.memory for h in engine.memory.search(case.user_id, question.q, limit=5, as_of=as_of)]
    top = hits[0] if hits else None
    if question.expect_none or not question.answer:
        correct = top is None or not states_stale(top, question)
    else:
        correct = (
            top is not None and states(top, question.answer) and not states_stale(top, question)
        )
    injected: list[Memory] = []
    if as_of is None:
        limit = engine.memory.config.inject_limit
        injected = [
            h.memory for h in engine.memory.verified(case.user_id, None, question.q, limit=limit)
        ]
    return QuestionOutcome(
        case=case.id,
        lang=case.lang,
        question=question.q,
        as_of=question.as_of.isoformat() if question.as_of else None,
        correct=correct,
        at_5=any(states(m, question.answer) for m in hits) if question.answer else None,
        stale_injected=tuple(m.content for m in injected if states_stale(m, question)),
        top=top.content if top is not None else None,
        answer_stored=not question.answer
        or not stored
        or any(value.casefold() in stored for value in question.answer),
    )


def run_half(engine: ContextEngine, name: str, cases: Sequence[Case]) -> HalfReport:
    """Ingest, extract and question every case of one half."""
    report = HalfReport(name=name, cases=len(cases))
    for case in cases:
        session_ids = ingest_case(engine, case)
        report.extraction.add(score_extraction(engine, case, session_ids))
        stored = stored_text(engine, case, session_ids)
        report.outcomes.extend(ask(engine, case, q, stored) for q in case.questions)
    return report


def labelled_pairs(engine: ContextEngine, cases: Sequence[Case]) -> list[LabelledPair]:
    """The labelled set of calibration: each question with every declarative memory of
    its user (relevant when it states an answer) and of the next case's user (never)."""
    pairs: list[LabelledPair] = []
    for index, case in enumerate(cases):
        mine = _declarative(engine, case.user_id)
        other = _declarative(engine, cases[(index + 1) % len(cases)].user_id)
        for question in case.questions:
            if not question.answer or question.as_of is not None:
                continue
            pairs.extend(
                LabelledPair(question.q, memory_text(m), states(m, question.answer)) for m in mine
            )
            if other is not mine:
                pairs.extend(LabelledPair(question.q, memory_text(m), False) for m in other)
    return pairs


def _declarative(engine: ContextEngine, user_id: str) -> list[Memory]:
    return [m for m in user_memories(engine, user_id) if m.kind is not MemoryKind.PROCEDURAL]


@contextlib.contextmanager
def fresh_engine(prefix: str, *, embedder: str, redaction: bool) -> Iterator[ContextEngine]:
    """An engine of the default configuration with memory on, in a temporary SQLite
    home, once its embedding model is loaded (every question ranked with the model)."""
    with tempfile.TemporaryDirectory(prefix=prefix) as folder:
        home = Path(folder)
        with ContextEngine(
            url=f"sqlite:///{home / 'memory.db'}",
            home=home,
            memory={"enabled": True},
            embeddings={"provider": embedder},
            redaction={"enabled": redaction},
            jobs="manual",
        ) as engine:
            if engine.model_warmup is not None:
                engine.model_warmup.wait(300)
            yield engine


def chats_labelled_pairs(chats: Sequence[Path], embedder: str) -> list[LabelledPair]:
    """The calibration pairs of REALTALK-format chats (:func:`chat_labelled_pairs`),
    each chat in a fresh engine as ``bench memory --data`` runs it (redaction off)."""
    pairs: list[LabelledPair] = []
    for path in chats:
        for conversation in load_dataset(path).conversations:
            with fresh_engine(
                "agentctx-calibration-", embedder=embedder, redaction=False
            ) as engine:
                pairs.extend(chat_labelled_pairs(engine, conversation))
    return pairs


def run_fact_timelines(
    root: Path,
    *,
    embedder: str = "auto",
    calibrate_threshold: bool = False,
    calibrate_chats: Sequence[Path] = (),
    redaction: bool = True,
) -> FactsReport:
    """Every half of the suite at ``root`` (``dev/`` and ``heldout/``, or ``root`` alone
    as one), each in a fresh engine of the default configuration. ``redaction=False``
    turns the redaction gate off: by default a name the user gives ("my name is …") is
    redacted before it is stored, so no memory can hold it (the ``name`` category
    measures extraction only without redaction).

    ``calibrate_threshold``: also calibrate the dense threshold on the labelled pairs
    of the ``dev`` half, and of ``calibrate_chats`` (chats whose questions cite evidence
    turns; use chats kept apart from those the figures are reported on)."""
    halves = [root / name for name in ("dev", "heldout") if (root / name).is_dir()] or [root]
    reports: list[HalfReport] = []
    calibration: Calibration | None = None
    embedder_name = embedder
    for half in halves:
        cases = load_cases(half)
        with fresh_engine("agentctx-facts-", embedder=embedder, redaction=redaction) as engine:
            index_embedder = engine.memory.index.embedder if engine.memory.index else None
            if index_embedder is not None:
                embedder_name = index_embedder.name
            reports.append(run_half(engine, half.name, cases))
            if calibrate_threshold and half.name == "dev" and index_embedder is not None:
                pairs = labelled_pairs(engine, cases)
                pairs += chats_labelled_pairs(calibrate_chats, embedder)
                calibration = calibrate(index_embedder, pairs)
    return FactsReport(
        halves=reports, embedder=embedder_name, calibration=calibration, redaction=redaction
    )


__all__ = [
    "TARGETS",
    "FactsReport",
    "HalfReport",
    "QuestionOutcome",
    "ask",
    "chats_labelled_pairs",
    "labelled_pairs",
    "run_fact_timelines",
    "run_half",
    "states",
    "states_stale",
]
