"""Which attribute of the user a first-person clause states, if any.

:class:`StatementClassifier` turns the clauses of :mod:`agentctx.memory.extract.clauses`
into rule findings (:class:`~agentctx.memory.extract.statements.Found`) for what the
rules do not read (an attribute the rules found in a sentence is left to them):

* an English clause is compared with the example statements of each attribute
  (:data:`~agentctx.memory.extract.prototypes.PROTOTYPES`) by the engine's embedding
  model; it states the attribute it is most similar to when that similarity reaches
  ``threshold`` and beats first-person talk that states nothing (``none``) by
  ``margin``;
* a Chinese clause is classified by the words attributes are stated with
  (:data:`~agentctx.memory.extract.prototypes.ZH_CUES`): the local model is English.

A statement of an attribute a user has one value of (a job, an employer, a city, a
name, a diet) has that attribute as its subject, so a later one supersedes it; others
have the attribute and the clause's own words as subject ("language: speak korean"), so
a retraction that names the same thing ("I can't speak Korean anymore") retracts it.
A clause that says a fact stopped being true is a retraction (``data["retracted"]``).
"""

# ruff: noqa: RUF001 - Chinese punctuation on purpose

from __future__ import annotations

import re
import threading
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from agentctx.llm.embeddings import Embedder
from agentctx.memory.extract.clauses import Clause
from agentctx.memory.extract.prototypes import PROTOTYPES, SINGLE_VALUED, ZH_CUES
from agentctx.memory.extract.statements import Found, names_nobody, words
from agentctx.memory.models import CATEGORY, KEY, REPLACES, RETRACTED, MemoryKind

NONE = "none"
CLAUSES_VERSION = "rules-2+clauses-1"
"""The extractor version of the rules read together with a classifier."""
_KINDS = {
    "name": MemoryKind.PROFILE,
    "occupation": MemoryKind.PROFILE,
    "employer": MemoryKind.PROFILE,
    "residence": MemoryKind.PROFILE,
    "preference": MemoryKind.PREFERENCE,
    "diet": MemoryKind.PREFERENCE,
    "project": MemoryKind.PROJECT,
    "skill": MemoryKind.SKILL,
    "language": MemoryKind.SKILL,
}
FAMILY_MEMBER_CATEGORIES = frozenset({"family", "plan"})
"""What a clause about a family member states: who they are, or a plan of theirs."""
_CONFIDENCE = 0.6  # below the rules' (0.7-0.85): a looser reading
_ZH_CUES = [(name, re.compile(pattern)) for name, pattern in ZH_CUES.items()]
_ZH_WORKS_AS = re.compile(
    r"在[^，。]{2,10}(?:做|当)[^，。]{0,8}(?:员|师|生|家|工|手|官|长|者|警|医|经理|主管|护士|会计|"
    r"司机|销售|分析|设计|开发|工程)"
)
# A name given to someone else ("we called him Kai", "我们给她取名叫朵朵"): no statement of
# the user's own name, which it would otherwise supersede.
_NAMES_ANOTHER = re.compile(r"\b(?:him|her|them|it|his|their)\b|[他她它]", re.IGNORECASE)
# Words a subject key leaves out: the speaker, negations, time and filler, so that a
# retraction ("I can't speak Korean anymore") keys like its statement ("I speak Korean").
_KEY_STOP = words(
    """
    i i'm im i've ive i'd i'll me my mine we we're we've our us user user's their they
    a an the and or but so to of in on at for with from by as is am are was were be been
    being have has had do does did don't doesn't didn't can can't cannot could couldn't
    will won't would not no never anymore any more longer still now just really very also
    again some bit little lot lots much many all basically actually currently these days
    back then this that it its it's
    """
)
_ZH_KEY_STOP = re.compile(
    r"用户|我们|我|不再|再也|已经|现在|还是|还|又|都|也|不|没|了|的|啦|呀|吧|呢|啊"
)

Vector = npt.NDArray[np.float32]

CALIBRATED: dict[str, tuple[float, float, float]] = {
    "sentence-transformers/all-MiniLM-L6-v2": (0.35, 0.05, 0.4),
}
"""(threshold, margin, single_threshold) per embedding model, measured on the ``dev``
half of the fact timelines (``agentctx bench memory --timelines``); a model without
figures here gets no classifier (its similarities are on another scale)."""


def classifier_for(embedder: Embedder | None) -> StatementClassifier | None:
    """The classifier over ``embedder`` when its thresholds are known, else None."""
    if embedder is None or embedder.name not in CALIBRATED:
        return None
    threshold, margin, single = CALIBRATED[embedder.name]
    return StatementClassifier(
        embedder, threshold=threshold, margin=margin, single_threshold=single
    )


class StatementClassifier:
    """Reads the attribute a clause states (see the module docstring).

    ``threshold``, ``margin`` and ``single_threshold`` are cosine similarities of the
    embedding model's vectors (:data:`CALIBRATED` holds them per model; use
    :func:`classifier_for`). The example statements are embedded once, on first use, under a lock so
    two extraction threads never embed them twice.
    """

    def __init__(
        self,
        embedder: Embedder,
        *,
        threshold: float,
        margin: float,
        single_threshold: float,
    ) -> None:
        self.embedder = embedder
        self.threshold = threshold
        self.margin = margin
        self.single_threshold = single_threshold
        self._labels: list[str] = []
        self._vectors: Vector | None = None
        self._lock = threading.Lock()

    def findings(self, clauses: Sequence[Clause]) -> list[tuple[Found, ...]]:
        """Per clause, the statements it makes (none, or one per attribute). A name the
        redaction gate withheld ("we called him [PERSON]") states nothing to keep."""
        return [
            tuple(
                statement_of(clause, category)
                for category in (
                    _whose_name(c, clause)
                    for c in categories
                    if not (c == "name" and names_nobody(clause.text))
                )
                if not clause.family or category in FAMILY_MEMBER_CATEGORIES
            )
            for clause, categories in zip(clauses, self.categories(clauses), strict=True)
        ]

    def categories(self, clauses: Sequence[Clause]) -> list[tuple[str, ...]]:
        """The attributes each clause states (most often one, or none)."""
        out: list[tuple[str, ...]] = [
            ("preference",) if c.request else _zh_categories(c.text) if c.chinese else ()
            for c in clauses
        ]
        english = [i for i, c in enumerate(clauses) if not c.chinese and not c.request]
        if english:
            vectors = np.asarray(
                self.embedder.embed([clauses[i].text for i in english]), dtype=np.float32
            )
            for i, row in zip(english, vectors @ self._prototypes().T, strict=True):
                best = self._best(row)
                out[i] = (best,) if best is not None else ()
        return out

    def _best(self, similarities: Vector) -> str | None:
        best: dict[str, float] = {}
        for label, value in zip(self._labels, similarities.tolist(), strict=True):
            best[label] = max(best.get(label, -1.0), float(value))
        none = best.pop(NONE, -1.0)
        label, score = max(best.items(), key=lambda item: item[1])
        if score < self.threshold or score - none < self.margin:
            return None
        if label in SINGLE_VALUED and score < self.single_threshold:
            return None  # a statement that supersedes needs more than a loose likeness
        return label

    def _prototypes(self) -> Vector:
        with self._lock:
            if self._vectors is None:
                labels = [name for name, texts in PROTOTYPES.items() for _ in texts]
                texts = [text for group in PROTOTYPES.values() for text in group]
                self._vectors = np.asarray(self.embedder.embed(texts), dtype=np.float32)
                self._labels = labels
            return self._vectors


def _whose_name(category: str, clause: Clause) -> str:
    """A name given to someone else ("we called him Kai") states who is in the family, not
    the user's own name (which, having one value, it would supersede)."""
    return "family" if category == "name" and _NAMES_ANOTHER.search(clause.text) else category


def _zh_categories(text: str) -> tuple[str, ...]:
    if _ZH_WORKS_AS.search(text):
        return ("employer", "occupation")  # 在<单位>做<职位>: both
    first = next((name for name, cue in _ZH_CUES if cue.search(text)), None)
    return (first,) if first is not None else ()


def subject_of(category: str, clause: Clause) -> str:
    """The subject a statement of ``category`` in ``clause`` has (module docstring)."""
    if clause.answer_aspect is not None:
        return f"answer style: {clause.answer_aspect}"
    if category in SINGLE_VALUED:
        return category
    return f"{category}: {clause_key(clause)}"


def clause_key(clause: Clause) -> str:
    """The clause's own words without the speaker, negations, time and filler."""
    if clause.chinese:
        return _ZH_KEY_STOP.sub("", clause.text)[:60]
    words = [
        w
        for w in re.findall(r"[\w'-]+", clause.text.lower())
        if w not in _KEY_STOP and not w.endswith("n't")
    ]
    return " ".join(words)[:80]


def statement_of(clause: Clause, category: str) -> Found:
    """What ``clause`` states as a statement of ``category``: its text in the third
    person, the subject (:func:`subject_of`), and a retraction or a change marked."""
    data: dict[str, object] = {CATEGORY: category, KEY: clause_key(clause)}
    if clause.negated:
        data[RETRACTED] = True
    elif clause.changes and category not in SINGLE_VALUED:
        data[REPLACES] = True
    return Found(
        _KINDS.get(category, MemoryKind.FACT),
        clause.third_person[:300],
        subject_of(category, clause),
        _CONFIDENCE,
        data=data,
    )


__all__ = [
    "CALIBRATED",
    "CLAUSES_VERSION",
    "FAMILY_MEMBER_CATEGORIES",
    "NONE",
    "StatementClassifier",
    "classifier_for",
    "clause_key",
    "statement_of",
    "subject_of",
]
