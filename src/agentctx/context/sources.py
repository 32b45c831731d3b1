"""Where the builder's sections come from, as small protocols the engine wires up.

The builder reads events through the session service; summaries, memories and the
retrieval index are optional sources. A section whose source is absent stays empty,
and its budget share flows to the others.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, Protocol, runtime_checkable

from agentctx.events import Event
from agentctx.tokens import TokenCounter

DenseState = Literal["used", "pending", "loading", "failed", "off"]
"""Whether a search ranked by vectors: ``used``; ``pending`` when the query's vector was
not computed yet (the background worker computes it, for the next window); ``loading``
while the embedding model loads in the background (the search did not wait for either);
``failed`` when the model or endpoint failed; ``off`` without an embedder or vector
search."""


@dataclass(frozen=True, slots=True)
class RetrievedHit:
    """An older event that matches the query, with its fused relevance score.

    ``tokens``: the event's stored token estimate, when the retriever knows it; the
    builder then reads only as many hits as a window could use.
    """

    seq: int
    score: float
    tokens: int | None = None


@dataclass(frozen=True, slots=True)
class Retrieval:
    """What a search found for a window: its hits, best first, and whom the query is about.

    ``dense`` says whether vectors took part in the ranking (see :data:`DenseState`);
    ``unembedded`` counts the newest events that had no vector yet (embedding runs in the
    background), which only the lexical ranking could find.

    ``subject``: the one session author the query names (by name, or by an alias the
    search learned), whose own events the search ranked on their own; None when it names
    nobody, or two people ("Kate and Elise"). Questions about a person are mostly
    answered by what that person wrote, so the window favours their lines.
    """

    hits: tuple[RetrievedHit, ...] = ()
    subject: str | None = None
    dense: DenseState = "off"
    unembedded: int = 0  # events newer than the session's vectors: ranked lexically only


@runtime_checkable
class Retriever(Protocol):
    """Ranks a session's events by relevance to a query (hybrid lexical + dense)."""

    def retrieve(
        self, user_id: str, session_id: str, query: str, *, limit: int, before_seq: int | None
    ) -> Retrieval:
        """The best ``limit`` events with ``seq < before_seq`` (all when None), best first,
        and the author the query is about."""
        ...

    def prefetch(self, user_id: str, session_id: str, query: str) -> None:
        """Start, without waiting, what ranking the session's events by ``query`` will
        need (its embedding): the builder asks at a window's start, and :meth:`retrieve`
        comes later."""
        ...


@dataclass(frozen=True, slots=True)
class SummaryItem:
    """A summary covering an exact set of events (seq ranges, inclusive)."""

    summary_id: str
    text: str
    seq_ranges: tuple[tuple[int, int], ...]
    kind: str = "thread"  # "thread" or "topic"


@runtime_checkable
class SummarySource(Protocol):
    """The current summaries of a session, oldest coverage first."""

    def summaries(self, user_id: str, session_id: str) -> Sequence[SummaryItem]:
        """Every live summary of the session."""
        ...


@dataclass(frozen=True, slots=True)
class CombinedSummaries:
    """Several summary sources as one: each source's summaries, in the order given."""

    sources: tuple[SummarySource, ...]

    def summaries(self, user_id: str, session_id: str) -> Sequence[SummaryItem]:
        """The summaries of every source, the first source's first."""
        return [item for source in self.sources for item in source.summaries(user_id, session_id)]


@dataclass(frozen=True, slots=True)
class MemoryItem:
    """A long-term memory chosen for the window."""

    memory_id: str
    text: str
    kind: str
    updated_at: datetime | None = None
    confidence: float | None = None
    support: int | None = None  # independent sessions it was learned from
    provenance: str | None = None  # where it came from, as the window cites it


@runtime_checkable
class MemorySource(Protocol):
    """Long-term memories of a user relevant to a query."""

    @property
    def max_tokens(self) -> int | None:
        """Most tokens the memory block may take in a window (None: its section's share)."""
        ...

    def memories(
        self, user_id: str, agent_id: str, query: str | None, *, limit: int
    ) -> Sequence[MemoryItem]:
        """The most relevant memories, best first. Raises TimeoutError when they cannot
        be had in time; the window is then built without them and its report says so."""
        ...


ToolOutput = Callable[[str, str], Callable[[Event, TokenCounter], str]]
"""(user_id, session_id) -> a function giving the text a window shows for a tool_result
event: the output compressed by its tool's strategy, or a preview and a pointer to the
offloaded original (``agentctx.compaction.tool_output``). Called at most once per build,
on the first tool result the build renders."""


EventLoader = Callable[..., list[Event]]
"""Reads a session's events in seq order: ``(user_id, session_id, *, last=, start_seq=,
end_seq=, seqs=, types=)`` (the session service's ``events``)."""


class FrameState(Protocol):
    """What visual compaction recorded about one image of an ended turn."""

    @property
    def turn_id(self) -> str | None: ...

    @property
    def seq(self) -> int | None: ...

    @property
    def is_compressed(self) -> bool: ...


ImageStates = Callable[[str, str], Mapping[tuple[str, int], FrameState]]
"""(user_id, session_id) -> the frame state of each compacted image, by (event id, part
index)."""


@dataclass(frozen=True, slots=True)
class LogHead:
    """Where a session's log stands: its last seq and the running total of its events'
    history weights through it (``agentctx.tokens.weight``); with ``created_at`` (the
    session's, as read with them), the build's reads stop there (see ``LogOpener``)."""

    last_seq: int = 0
    weight_total: int = 0
    created_at: datetime | None = None


LogOpener = Callable[[str, str, LogHead], EventLoader]
"""How one build reads a session's log: ``(user_id, session_id, head)`` -> the loader of
its reads. A head with ``created_at`` was read just before the build (with the session's
row), and the reads serve the log as it stood then."""
