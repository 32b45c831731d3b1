"""Long-term memory records (seed 003 A.1.2, 8.2.1; seed 002 LongTermMemory).

A :class:`Memory` is what agentctx learned about a user (or how an agent works best)
from sessions: a kind, a text, structured data for procedural memory, where it came
from (:class:`Provenance`), how much it is trusted (confidence, support from
independent sessions, a tainted flag), and a version for compare-and-set. Every
change is kept as a :class:`MemoryChange`.
"""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field


class MemoryKind(StrEnum):
    """What a memory is about."""

    FACT = "fact"
    PREFERENCE = "preference"
    PROFILE = "profile"  # a profile field: name, occupation, home town, …
    PROJECT = "project"  # project context
    SKILL = "skill"
    EPISODIC = "episodic"  # something that happened, with its date
    PROCEDURAL = "procedural"  # how a task is best done: tool paths and their statistics


DECLARATIVE_KINDS: frozenset[MemoryKind] = frozenset(set(MemoryKind) - {MemoryKind.PROCEDURAL})
"""Kinds a user's declarative opt-out stops (seed 003 A.1.10)."""

MemoryStatus = Literal["active", "stale", "deleted"]
"""``active``: believed true now. ``stale``: no longer believed: superseded by a later
statement (``valid_to`` and ``superseded_by`` say when and by what), or contested (a
later statement outweighed by clearly more support; ``valid_to`` empty). ``deleted``:
removed by the user or the API."""

RETRACTED = "retracted"
"""The ``data`` key of a memory that retracts an earlier fact of its subject ("User is no
longer vegetarian"): it supersedes that fact and states nothing true by itself."""
CATEGORY = "category"
"""``data`` key: the attribute a statement read by the classifier is about (``plan``)."""
KEY = "key"
"""``data`` key: the statement's own words, as a retraction of it would repeat them."""
REPLACES = "replaces"
"""``data`` key: the statement replaces the latest value of its attribute ("the trip
moved to August", "renamed it Cairn"), whatever that value's subject."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class Provenance(_Frozen):
    """One event a memory was learned from."""

    session_id: str
    event_id: str
    seq: int | None = None
    extractor_version: str
    model: str | None = None


class ProceduralData(_Frozen):
    """The statistics of a procedural memory (seed 003 A.1.2, procedural memory)."""

    scenario: str
    tools: tuple[str, ...]
    successes: int = 0
    failures: int = 0
    failure_reasons: dict[str, int] = Field(default_factory=dict)
    best_iterations: int | None = None

    @property
    def runs(self) -> int:
        """Successes plus failures."""
        return self.successes + self.failures

    @property
    def success_rate(self) -> float:
        """Successes over runs (0 with no runs)."""
        return self.successes / self.runs if self.runs else 0.0

    def render(self) -> str:
        """The memory's text, made from these statistics alone: after a merge the text
        says what the merged counts say."""
        line = (
            f"For '{self.scenario}': {' → '.join(self.tools)} worked "
            f"{self.successes}/{self.runs} ({self.success_rate:.0%})"
        )
        if self.failure_reasons:
            common = max(self.failure_reasons.items(), key=lambda item: (item[1], item[0]))[0]
            line += f"; most common failure: {common}"
        return line


def procedural_data(data: dict[str, Any]) -> ProceduralData:
    """The statistics in a procedural memory's ``data`` (which also carries the derived
    ``success_rate`` for readers of the raw record)."""
    return ProceduralData.model_validate({k: v for k, v in data.items() if k != "success_rate"})


def procedural_record(stats: ProceduralData) -> dict[str, Any]:
    """What a procedural memory stores as ``data``: the statistics and their success rate."""
    return {**stats.model_dump(), "success_rate": round(stats.success_rate, 4)}


class MemoryCandidate(_Frozen):
    """What an extractor proposes; consolidation decides whether it becomes a new memory,
    merges into one, or replaces a contradicted one."""

    kind: MemoryKind
    content: str = Field(min_length=1, max_length=4000)
    subject: str | None = Field(default=None, max_length=256)
    data: dict[str, Any] = Field(default_factory=dict)
    keywords: tuple[str, ...] = ()
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    sources: tuple[Provenance, ...] = ()
    tainted: bool = False
    agent_id: str | None = None
    session_id: str | None = None  # narrows the memory's scope to one session
    ts: datetime | None = None  # when what it says was said (the newest source)

    @property
    def retracted(self) -> bool:
        """Whether it retracts its subject's earlier fact instead of stating one."""
        return bool(self.data.get(RETRACTED))


class Memory(_Frozen):
    """A stored long-term memory."""

    memory_id: str
    user_id: str
    agent_id: str | None
    session_id: str | None
    kind: MemoryKind
    subject: str | None
    content: str
    data: dict[str, Any]
    keywords: tuple[str, ...]
    confidence: float
    support_count: int
    tainted: bool
    version: int
    status: MemoryStatus
    extractor_version: str
    model: str | None
    created_at: datetime
    updated_at: datetime
    expires_at: datetime | None
    sources: tuple[Provenance, ...] = ()
    valid_from: datetime | None = None
    """When what it says became true: when it was first said (facts in time)."""
    valid_to: datetime | None = None
    """When it stopped being true: the time the statement that superseded it was made."""
    superseded_by: str | None = None
    """The memory that replaced it."""

    def true_at(self, when: datetime) -> bool:
        """Whether it was believed true at ``when``: within its validity, and neither
        contested nor deleted."""
        if self.status == "deleted" or (self.status == "stale" and self.valid_to is None):
            return False
        start = self.valid_from or self.created_at
        return start <= when and (self.valid_to is None or when < self.valid_to)

    @property
    def retracted(self) -> bool:
        """Whether it retracts its subject's earlier fact instead of stating one."""
        return bool(self.data.get(RETRACTED))

    @property
    def procedural(self) -> ProceduralData | None:
        """The statistics of a procedural memory (None for other kinds)."""
        if self.kind is not MemoryKind.PROCEDURAL:
            return None
        return procedural_data(self.data)

    @property
    def session_ids(self) -> tuple[str, ...]:
        """The distinct sessions it was learned from, in first-seen order."""
        return tuple(dict.fromkeys(source.session_id for source in self.sources))


class MemoryChange(_Frozen):
    """One entry of a memory's history: what changed, why, and from where."""

    memory_id: str
    version: int
    action: Literal["create", "merge", "update", "stale", "supersede", "delete", "restore"]
    old_value: dict[str, Any] | None
    new_value: dict[str, Any] | None
    reason: str
    source: dict[str, Any]
    ts: datetime


class MemoryHit(_Frozen):
    """A memory found by a search, with the parts of its score."""

    memory: Memory
    score: float
    relevance: float
    lexical_rank: int | None = None
    dense_rank: int | None = None
