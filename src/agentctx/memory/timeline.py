"""Facts in time: which of two statements about one attribute of a user is true now.

A memory with a ``subject`` (``occupation``, ``residence``, ``allergy: peanuts``…) states
the value of something that can change. When a new statement of the subject says
something else than the memory currently believed (its *rival*), one rule decides
(seed 003 A.1.4, A.1.7):

* said **before** the rival's truth began (an older session extracted late): it was true
  until the rival was said; it is stored superseded by the rival;
* said in a session the rival was also said in, later (a correction: "I'm a nurse…
  actually, a paramedic"): it **supersedes** the rival;
* said later, but the rival has **clearly more independent support** (at least
  ``supersede_support_ratio`` times the sessions, and ``supersede_support_margin`` more):
  it is **contested**, kept stale, and gains support each time it is said again until it
  outweighs the rival;
* otherwise said later: it **supersedes** the rival.

Superseding ends the rival's validity (``valid_to``: when the new statement was first
made) and names its successor (``superseded_by``); the history of both says why. The
N-session rule (``min_support_sessions``) decides what is *injected*, never what is
*true*.

A statement the classifier read (:mod:`agentctx.memory.extract.categories`) that
retracts or replaces a value ("the Japan trip is off", "we moved it to August") and
finds no memory of its own subject has the latest active memory of its attribute as
rival instead (a retraction: only one that shares a word with it).

Two statements of one subject are the same fact when their values match
(``data["value"]``, set by the extractors; for a plan, the dates they name
``data["when"]`` as well), their texts match, or they are near duplicates; then they
merge instead of contradicting.
"""

from __future__ import annotations

import re
from datetime import datetime
from typing import Literal

from agentctx.memory.config import MemoryConfig
from agentctx.memory.models import Memory, MemoryCandidate, MemoryKind

Verdict = Literal["supersede", "contested", "earlier"]

_WORD = re.compile(r"\w+", re.UNICODE)


def normalized(text_value: str) -> str:
    """Lower-cased words: what exact-duplicate checks compare."""
    return " ".join(_WORD.findall(text_value.lower()))


def word_similarity(first: str, second: str) -> float:
    """Jaccard similarity of the two texts' word sets."""
    a, b = set(_WORD.findall(first.lower())), set(_WORD.findall(second.lower()))
    if not a or not b:
        return 1.0 if a == b else 0.0
    return len(a & b) / len(a | b)


def in_time(candidate: MemoryCandidate) -> bool:
    """Whether the candidate states an attribute that can change (it has a subject and
    is not a procedural statistic): the statements this module resolves."""
    return bool(candidate.subject) and candidate.kind is not MemoryKind.PROCEDURAL


def statement_value(kind_data: dict[str, object], content: str) -> str:
    """What a statement says its subject is: the extractor's value, else its words."""
    value = kind_data.get("value")
    retracted = "retracted:" if kind_data.get("retracted") else ""
    return retracted + normalized(str(value) if value else content)


def same_statement(memory: Memory, candidate: MemoryCandidate, threshold: float) -> bool:
    """Whether ``candidate`` says what ``memory`` says (a duplicate, not a contradiction)."""
    if memory.kind is not candidate.kind:
        return False
    mine = statement_value(memory.data, memory.content)
    theirs = statement_value(candidate.data, candidate.content)
    if mine == theirs:
        # One plan on two dates (the IELTS in June, then in August) is a change of it.
        return not _other_dates(memory.data, candidate.data)
    if bool(memory.data.get("retracted")) != bool(candidate.data.get("retracted")):
        return False
    if memory.data.get("value") and candidate.data.get("value"):
        return False  # both name their value, and the values differ
    return word_similarity(memory.content, candidate.content) >= threshold


ATTRIBUTE_SUBJECTS: dict[str, tuple[str, ...]] = {
    "health": ("health", "allergy"),
    "preference": ("preference", "favourite", "answer style"),
}
"""The subject heads statements of an attribute have, where more than its own name
(the rules say ``allergy: peanuts`` for a health fact)."""


def attribute_subjects(category: str) -> tuple[str, ...]:
    """The subject heads of ``category``'s statements."""
    return ATTRIBUTE_SUBJECTS.get(category, (category,))


def shares_words(key: str, content: str) -> bool:
    """Whether ``content`` holds a word of ``key`` (for Chinese: two characters of it
    in a row)."""
    words = set(_WORD.findall(content.lower()))
    for word in _WORD.findall(key.lower()):
        if re.search(r"[\u4e00-\u9fff]", word):
            if any(word[i : i + 2] in content for i in range(len(word) - 1)):
                return True
        elif len(word) > 2 and word in words:
            return True
    return False


def _other_dates(first: dict[str, object], second: dict[str, object]) -> bool:
    """Whether two statements name different dates (``data["when"]``) for their value."""
    one, other = first.get("when"), second.get("when")
    return bool(one and other) and normalized(str(one)) != normalized(str(other))


def began(memory: Memory) -> datetime:
    """When the memory's statement became true."""
    return memory.valid_from or memory.created_at


def verdict(
    *,
    said: datetime,
    sessions: set[str],
    support: int,
    rival: Memory,
    config: MemoryConfig,
) -> Verdict:
    """The rule of the module docstring for a statement said at ``said`` in ``sessions``
    with ``support`` independent sessions, against the currently believed ``rival``."""
    if said < began(rival):
        return "earlier"
    if sessions & set(rival.session_ids):
        return "supersede"  # a correction within a session the rival was said in
    stronger = rival.support_count >= config.supersede_support_ratio * max(1, support)
    if stronger and rival.support_count - support >= config.supersede_support_margin:
        return "contested"
    return "supersede"


def why(outcome: Verdict, *, statement: str, rival: Memory, support: int, said: datetime) -> str:
    """The history's reason for ``outcome`` (ids, dates and counts; never content)."""
    day = said.date().isoformat()
    counts = f"support {support} vs {rival.support_count}"
    if outcome == "supersede":
        return f"superseded by {statement}, stated later ({day}; {counts})"
    if outcome == "contested":
        return f"contradicts {rival.memory_id}, which has clearly more support ({counts})"
    return f"stated before {rival.memory_id} became true ({day}); superseded by it"


__all__ = [
    "ATTRIBUTE_SUBJECTS",
    "Verdict",
    "attribute_subjects",
    "began",
    "in_time",
    "normalized",
    "same_statement",
    "shares_words",
    "statement_value",
    "verdict",
    "why",
    "word_similarity",
]
