"""The similarity a memory needs to a question before the dense ranking counts it.

A fixed cut-off fits one model: a small local model scores a right answer 0.3 where a
large one scores it 0.6. The threshold is therefore *calibrated*: on a labelled set of
(question, memory, relevant?) pairs, the cosine of each pair is measured with the
embedder, and the threshold is the highest that still lets :data:`KEEP_RELEVANT` of the
relevant pairs through. The cut-off only drops what is clearly unrelated (the fused
ranking orders the rest), so it is chosen for recall; the share of irrelevant pairs it
lets through is reported beside it.

:data:`CALIBRATED` holds the thresholds measured for the embedders agentctx ships
(``agentctx bench memory --timelines … --calibrate`` prints them again from the
labelled dev half of the fact-timeline suite, and ``--calibrate-with CHAT`` adds the
pairs of chats); an embedder not in it gets :data:`DEFAULT_THRESHOLD`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from agentctx.llm.embeddings import Embedder
from agentctx.memory.questions import about_user

DEFAULT_THRESHOLD = 0.2
"""The cut-off of an embedder that was never calibrated."""

KEEP_RELEVANT = 0.95
"""The share of relevant pairs a calibrated threshold lets through."""

CALIBRATED: dict[str, float] = {
    # 114 relevant / 344 irrelevant pairs of tests/data/memory_timelines/dev (names said as
    # names withheld by the redaction gate); 0.96 of the relevant and 0.70 of the
    # irrelevant pairs pass (the ranking orders those). With the
    # first five REALTALK chats' pairs too it would be 0.031: more recall on open
    # conversations, but the window's memory injection has no other relevance floor
    # (docs/benchmarks.md, "one cut-off for both").
    "sentence-transformers/all-MiniLM-L6-v2": 0.279,
}
"""Calibrated thresholds by embedder name (:attr:`Embedder.name`)."""


@dataclass(frozen=True, slots=True)
class LabelledPair:
    """A question, a memory's indexed text, and whether the memory answers it."""

    question: str
    memory_text: str
    relevant: bool


@dataclass(frozen=True, slots=True)
class Calibration:
    """A calibrated threshold and how well it separates the labelled pairs."""

    embedder: str
    threshold: float
    relevant: int
    irrelevant: int
    relevant_passing: float  # share of relevant pairs at or above the threshold
    irrelevant_passing: float  # share of irrelevant pairs at or above it


def threshold_for(embedder: Embedder | None) -> float:
    """The calibrated cut-off of ``embedder``, else :data:`DEFAULT_THRESHOLD`."""
    if embedder is None:
        return DEFAULT_THRESHOLD
    return CALIBRATED.get(embedder.name, DEFAULT_THRESHOLD)


def separate(
    scored: Sequence[tuple[float, bool]], keep: float = KEEP_RELEVANT
) -> tuple[float, float, float]:
    """The highest threshold that lets ``keep`` of the relevant scored pairs through,
    with the shares of relevant and irrelevant pairs at or above it."""
    relevant = sorted((score for score, label in scored if label), reverse=True)
    irrelevant = [score for score, label in scored if not label]
    if not relevant or not irrelevant:
        raise ValueError("calibration needs relevant and irrelevant pairs")
    needed = max(1, math.ceil(keep * len(relevant)))
    threshold = relevant[needed - 1]
    tp = sum(score >= threshold for score in relevant) / len(relevant)
    fp = sum(score >= threshold for score in irrelevant) / len(irrelevant)
    return threshold, tp, fp


def calibrate(embedder: Embedder, pairs: Sequence[LabelledPair]) -> Calibration:
    """Measure every pair's cosine with ``embedder`` (questions put the way memories are
    written, as a search does) and choose the threshold that separates them best."""
    questions = sorted({pair.question for pair in pairs})
    texts = sorted({pair.memory_text for pair in pairs})
    vectors = embedder.embed([about_user(q) for q in questions] + texts)
    by_question = dict(zip(questions, vectors[: len(questions)], strict=True))
    by_text = dict(zip(texts, vectors[len(questions) :], strict=True))
    scored = [
        (
            float(np.dot(by_question[p.question], by_text[p.memory_text])),
            p.relevant,
        )
        for p in pairs
    ]
    threshold, tp, fp = separate(scored)
    return Calibration(
        embedder=embedder.name,
        threshold=round(threshold, 3),
        relevant=sum(p.relevant for p in pairs),
        irrelevant=sum(not p.relevant for p in pairs),
        relevant_passing=tp,
        irrelevant_passing=fp,
    )


__all__ = [
    "CALIBRATED",
    "DEFAULT_THRESHOLD",
    "Calibration",
    "LabelledPair",
    "calibrate",
    "separate",
    "threshold_for",
]
