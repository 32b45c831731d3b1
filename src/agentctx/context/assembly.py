"""What every strategy works with during one build: the request, the gathered sources, the
log reader, the pricer, the retriever, and the counts and timings the report gives."""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any

from agentctx.context.config import ContextConfig
from agentctx.context.gather import Request, Sources, memory_block, summary_messages
from agentctx.context.plan import Plan
from agentctx.context.pricing import Pricer
from agentctx.context.reader import LogReader, Recent
from agentctx.context.sources import Retrieval, Retriever
from agentctx.context.units import Unit, units_of
from agentctx.events import EventType


class RecordingRetriever:
    """The build's retriever, keeping the last search's answer: the report says whether
    vectors took part and how many new events had none yet."""

    def __init__(self, inner: Retriever) -> None:
        self.inner = inner
        self.last: Retrieval | None = None

    def retrieve(
        self, user_id: str, session_id: str, query: str, *, limit: int, before_seq: int | None
    ) -> Retrieval:
        """The inner retriever's answer, remembered."""
        found = self.inner.retrieve(user_id, session_id, query, limit=limit, before_seq=before_seq)
        self.last = found
        return found

    def prefetch(self, user_id: str, session_id: str, query: str) -> None:
        """The inner retriever's head start."""
        self.inner.prefetch(user_id, session_id, query)


@dataclass
class Assembly:
    """One build in progress."""

    request: Request
    sources: Sources
    reader: LogReader
    pricer: Pricer
    retriever: RecordingRetriever | None
    memory_max_tokens: int | None
    timings: dict[str, float] = field(default_factory=dict)
    recent: Recent | None = None  # the newest events read for the history
    skipped: int = 0  # events of a turn read only in part, left out whole
    digest: dict[str, Any] | None = None  # the compacted past's message, when there is one
    digest_ids: list[str] = field(default_factory=list)  # the events it shows

    @property
    def config(self) -> ContextConfig:
        """The context settings of this build."""
        return self.request.config

    def new_plan(self) -> Plan:
        """A plan holding the system and summary sections as gathered."""
        summary, ids = summary_messages(self.sources.summaries)
        return Plan(system=[dict(m) for m in self.sources.system], summary=summary, summary_ids=ids)

    def memories_message(self) -> dict[str, Any] | None:
        """The memory block, at most the memory source's own limit."""
        if not self.sources.memories:
            return None
        return memory_block(self.sources.memories, self.pricer.cost, self.memory_max_tokens)

    def turns(self, recent: Recent) -> list[Unit]:
        """The events of ``recent`` as whole turns (the session's system events are the
        system section's, not history's). A turn read only in part is left out when it is
        not the only one: a window never starts mid-turn. The read is what the report
        counts as considered."""
        self.recent = recent
        units = units_of([e for e in recent.events if e.type is not EventType.SYSTEM])
        self.skipped = 0
        if not recent.complete and len(units) > 1:
            self.skipped = len(units.pop(0).events)
        return units

    @property
    def last_seq(self) -> int:
        """The newest seq read (0 before any read)."""
        read = self.recent.read if self.recent is not None else []
        return read[-1].seq if read else 0

    def time(self, name: str, started: float) -> None:
        """Record ``name`` as the milliseconds since ``started``."""
        self.timings[name] = round((time.perf_counter() - started) * 1000, 3)
