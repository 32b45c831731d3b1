"""Scoring for ``agentctx bench recall``: the evidence matcher, aggregates and targets.

* **Found.** An evidence turn counts as found in a window when its text, whitespace
  collapsed, occurs in the window's text (every message's text content, joined and
  whitespace collapsed). The question's own text is taken out of the window first, so a
  window that repeats the question does not "find" a short turn inside it.
* **Evidence recall** of a question at a budget: found evidence turns / its evidence
  turns. A system's recall is the mean over questions.
* **Targets**, per budget: agentctx misses at most half of what plain hybrid misses
  (``recall >= 1 - (1 - hybrid) / 2``), and ``build_context`` p95 <= 50 ms.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pydantic import BaseModel

from agentctx.bench.stats import Latency, summarize

AGENTCTX = "agentctx"
RECENT = "recent"
BM25 = "bm25"
HYBRID = "hybrid"
SYSTEMS: tuple[str, ...] = (AGENTCTX, RECENT, BM25, HYBRID)
SYSTEM_NAMES = {AGENTCTX: "agentctx", RECENT: "recent", BM25: "BM25", HYBRID: "hybrid"}
LATENCY_P95_MAX_MS = 50.0
MISS_RATIO_MAX = 0.5  # agentctx's misses / hybrid's misses
_TEXT_PART_TYPES = frozenset({"text", "input_text", "output_text"})


# ---------------------------------------------------------------- matching


def normalize(text: str) -> str:
    """``text`` with every run of whitespace made one space, and trimmed."""
    return " ".join(text.split())


def message_text(message: Mapping[str, Any]) -> str:
    """The text of one chat-format message: its string content or its text parts."""
    content = message.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, Mapping)
            and part.get("type") in _TEXT_PART_TYPES
            and isinstance(part.get("text"), str)
        )
    return ""


def window_text(messages: Iterable[Mapping[str, Any]], question: str = "") -> str:
    """The normalized text of a window's messages, with ``question`` taken out."""
    text = normalize("\n".join(message_text(m) for m in messages))
    asked = normalize(question)
    return text.replace(asked, " ") if asked else text


def found_evidence(text: str, evidence: Mapping[str, str]) -> list[str]:
    """The ids of ``evidence`` (id -> turn text) whose normalized text occurs in ``text``."""
    found = []
    for dia_id, turn_text in evidence.items():
        needle = normalize(turn_text)
        if needle and needle in text:
            found.append(dia_id)
    return found


# ---------------------------------------------------------------- results


class Outcome(BaseModel):
    """One system's window for one question at one budget."""

    found: list[str]
    tokens: int
    ms: float


class QuestionResult(BaseModel):
    """A question and what every system's window held of its evidence."""

    file: str
    conversation: str
    question: str
    category: int
    evidence: list[str]
    outcomes: dict[str, dict[int, Outcome]] = {}  # system -> budget -> outcome

    def recall(self, system: str, budget: int) -> float | None:
        """Found / evidence turns (None when ``system`` was not run at ``budget``)."""
        outcome = self.outcomes.get(system, {}).get(budget)
        if outcome is None:
            return None
        return len(outcome.found) / len(self.evidence)


class Cell(BaseModel):
    """One system at one budget over a set of questions."""

    system: str
    budget: int
    questions: int
    evidence_turns: int
    recall: float  # mean over questions
    turn_recall: float  # found evidence turns / evidence turns, over all questions
    tokens_mean: float
    latency: Latency


def aggregate(results: Sequence[QuestionResult], system: str, budget: int) -> Cell | None:
    """``system`` at ``budget`` over ``results`` (None when it was not run there)."""
    rows = [
        (r, r.outcomes[system][budget]) for r in results if budget in r.outcomes.get(system, {})
    ]
    if not rows:
        return None
    evidence = sum(len(r.evidence) for r, _ in rows)
    return Cell(
        system=system,
        budget=budget,
        questions=len(rows),
        evidence_turns=evidence,
        recall=sum(len(o.found) / len(r.evidence) for r, o in rows) / len(rows),
        turn_recall=sum(len(o.found) for _, o in rows) / evidence,
        tokens_mean=sum(o.tokens for _, o in rows) / len(rows),
        latency=summarize([o.ms / 1000.0 for _, o in rows]),
    )


def aggregate_all(
    results: Sequence[QuestionResult], systems: Sequence[str], budgets: Sequence[int]
) -> list[Cell]:
    """Every system at every budget it was run at, budget-major."""
    cells = []
    for budget in budgets:
        for system in systems:
            cell = aggregate(results, system, budget)
            if cell is not None:
                cells.append(cell)
    return cells


# ---------------------------------------------------------------- targets


class RecallTarget(BaseModel):
    """One target at one budget: the figure, the bound, the verdict."""

    name: str
    budget: int
    figure: float | None
    bound: float | None
    unit: str
    direction: str
    passed: bool | None  # None: not measured in this run
    note: str = ""


def recall_bound(hybrid_recall: float) -> float:
    """The recall agentctx needs: half of hybrid's misses, or fewer."""
    return 1.0 - (1.0 - hybrid_recall) * MISS_RATIO_MAX


DEFAULT_TARGET_BUDGETS = (4000, 8000)
"""The default strategy (built for agent loops) is held to plain hybrid's recall at these
budgets; ``semantic`` (built for questions about a long past) to half its misses."""


def judge(
    cells: Sequence[Cell], budgets: Sequence[int], strategy: str | None = None
) -> list[RecallTarget]:
    """The targets at every budget, judged on pooled ``cells``: evidence recall (for the
    default strategy, at least plain hybrid's at 4k and 8k; for ``semantic`` and any
    strategy named, at most half of hybrid's misses) and build latency."""
    by_key = {(c.system, c.budget): c for c in cells}
    targets = []
    default = strategy in (None, "adaptive")
    for budget in budgets:
        ours, hybrid = by_key.get((AGENTCTX, budget)), by_key.get((HYBRID, budget))
        bound = None
        if hybrid is not None:
            bound = hybrid.recall if default else recall_bound(hybrid.recall)
        if default and budget not in DEFAULT_TARGET_BUDGETS:
            bound = None
        missing = (
            "agentctx was not measured"
            if ours is None
            else ("plain hybrid was not measured" if hybrid is None else "")
        )
        figure = ours.recall if ours is not None else None
        if default and budget not in DEFAULT_TARGET_BUDGETS:
            missing = missing or "no recall target for the default strategy at this budget"
        targets.append(
            RecallTarget(
                name=(
                    "evidence recall: at least plain hybrid's"
                    if default
                    else "evidence recall: at most half of plain hybrid's misses"
                ),
                budget=budget,
                figure=figure,
                bound=bound,
                unit="recall",
                direction=">=",
                passed=None if figure is None or bound is None else figure >= bound - 1e-12,
                note=missing,
            )
        )
        p95 = ours.latency.p95_ms if ours is not None else None
        targets.append(
            RecallTarget(
                name=f"build_context p95 <= {LATENCY_P95_MAX_MS:g} ms",
                budget=budget,
                figure=p95,
                bound=LATENCY_P95_MAX_MS,
                unit="ms",
                direction="<=",
                passed=None if p95 is None else p95 <= LATENCY_P95_MAX_MS,
                note="" if ours is not None else "agentctx was not measured",
            )
        )
    return targets
