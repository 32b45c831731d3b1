"""Topics, profile facts, and the plan an archiving step computes before it writes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import RowMapping

from agentctx.context.sources import SummaryItem

ACTIVE = "active"
"""The status of a session's newest topic: the conversation may still be on it."""
ARCHIVED = "archived"
"""The status of every older topic."""

PROFILE_FIELDS = ("preferred_name", "occupation", "gender", "language", "location")
"""What the identification call may learn about the user (each value nullable)."""


@dataclass(frozen=True, slots=True)
class Topic:
    """A stored topic: a title, a summary and keywords standing for a run of events.

    It covers exactly the events ``first_seq..last_seq`` (inclusive; each one has its
    ``topic_events`` link). ``message_count`` counts the conversational ones among
    them, ``source_tokens`` their stored token estimates, ``token_count`` the
    summary's size. ``status`` is ``active`` for the session's newest topic and
    ``archived`` for the older ones. ``method``: ``offline``, ``llm:<model>`` or
    ``offline (llm failed: <code>)``.
    """

    topic_id: str
    user_id: str
    session_id: str
    title: str
    summary: str
    keywords: tuple[str, ...]
    message_count: int
    status: str
    first_seq: int
    last_seq: int
    token_count: int
    source_tokens: int
    method: str
    created_at: datetime

    @property
    def seq_ranges(self) -> tuple[tuple[int, int], ...]:
        """The covered events as inclusive seq ranges."""
        return ((self.first_seq, self.last_seq),)

    @property
    def text(self) -> str:
        """How the topic reads in a context window: ``Title: summary (keywords: …)``."""
        text = f"{self.title}: {self.summary}" if self.summary else self.title
        if self.keywords:
            text += f" (keywords: {', '.join(self.keywords)})"
        return text

    def item(self) -> SummaryItem:
        """This topic as the context builder's summary section takes it."""
        return SummaryItem(
            summary_id=self.topic_id, text=self.text, seq_ranges=self.seq_ranges, kind="topic"
        )

    @classmethod
    def from_row(cls, row: RowMapping | Mapping[str, Any]) -> Topic:
        """A topic from a ``topics`` row."""
        values = {name: row[name] for name in cls.__dataclass_fields__}
        values["keywords"] = tuple(str(k) for k in (row["keywords"] or ()))
        return cls(**values)


@dataclass(frozen=True, slots=True)
class ProfileFact:
    """One thing a user said about themselves, and where it was learned.

    ``session_id``/``topic_id``/``first_seq..last_seq`` name the source events (the
    topic may be None when the value could not be traced to one topic; then the seq
    range is the whole archived batch).
    """

    fact_id: str
    user_id: str
    field: str
    value: str
    session_id: str | None
    topic_id: str | None
    first_seq: int | None
    last_seq: int | None
    method: str
    created_at: datetime

    @classmethod
    def from_row(cls, row: RowMapping | Mapping[str, Any]) -> ProfileFact:
        """A fact from a ``profile_facts`` row."""
        return cls(**{name: row[name] for name in cls.__dataclass_fields__})


@dataclass(frozen=True, slots=True)
class TopicDraft:
    """A topic computed but not stored: the events it covers and what stands for them."""

    title: str
    summary: str
    keywords: tuple[str, ...]
    seqs: tuple[int, ...]  # every event linked to it, ascending (first..last, no gaps)
    message_count: int
    token_count: int
    source_tokens: int

    @property
    def first_seq(self) -> int:
        """The first covered seq."""
        return self.seqs[0]

    @property
    def last_seq(self) -> int:
        """The last covered seq."""
        return self.seqs[-1]


@dataclass(frozen=True, slots=True)
class FactDraft:
    """A profile fact computed but not stored; ``topic`` indexes the plan's topics."""

    field: str
    value: str
    topic: int | None
    first_seq: int
    last_seq: int


@dataclass(frozen=True, slots=True)
class TopicPlan:
    """One archiving step, computed and not yet written (:meth:`TopicArchiver.commit`).

    ``base`` is the highest archived seq when the plan was made (0: none); the commit
    writes only if it still is, so a plan made from a stale view is dropped.
    """

    user_id: str
    session_id: str
    base: int
    topics: tuple[TopicDraft, ...]
    facts: tuple[FactDraft, ...]
    method: str

    @property
    def first_seq(self) -> int:
        """The first seq the plan archives."""
        return self.topics[0].first_seq

    @property
    def last_seq(self) -> int:
        """The last seq the plan archives."""
        return self.topics[-1].last_seq
