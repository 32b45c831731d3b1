"""``AgentCtxMemoryService``: ADK's memory service backed by agentctx long-term memory.

* ``add_session_to_memory(session)`` ends the session's open invocation turn and runs
  agentctx's extraction over its stored (redacted) events: self-statements,
  preferences, decisions and tool paths become memories of the user, consolidated
  with what is known already (a duplicate strengthens a memory, a contradiction
  replaces it). Extraction is idempotent: a session added again only adds what its
  new events teach. A session kept by another
  session service is recorded in agentctx first (through ``AgentCtxSessionService``).
* ``add_events_to_memory`` does the same for the events given (those not recorded yet
  are recorded in the session, created if need be).
* ``add_memory`` adds explicit memories for the app; ``delete_memory`` deletes one.
* ``search_memory`` is agentctx's memory search (lexical and dense, weighted by
  confidence and freshness) over the user's memories: those learned from any session
  of the user, and those added for this app. Each hit is a ``MemoryEntry``: its text
  as a ``user`` content, the memory id, the time it was last confirmed, and its kind,
  confidence and score as ``custom_metadata``.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from google.adk.memory.base_memory_service import BaseMemoryService, SearchMemoryResponse
from google.adk.memory.memory_entry import MemoryEntry
from google.genai import types
from typing_extensions import override

from agentctx.engine import ContextEngine
from agentctx.errors import MemoryNotFound
from agentctx.integrations.adk.names import to_id
from agentctx.integrations.adk.session_service import AgentCtxSessionService
from agentctx.memory.models import MemoryHit

if TYPE_CHECKING:
    from google.adk.events.event import Event as AdkEvent
    from google.adk.sessions.session import Session as AdkSession


class AgentCtxMemoryService(BaseMemoryService):
    """An ADK ``BaseMemoryService`` over ``engine.memory`` (see the module text).

    ``sessions`` is the session service sessions are recorded through when they are
    not in agentctx yet (by default one on the same engine); ``limit`` caps a search.
    """

    def __init__(
        self,
        engine: ContextEngine,
        *,
        sessions: AgentCtxSessionService | None = None,
        limit: int = 10,
    ) -> None:
        self.engine = engine
        self.sessions = sessions or AgentCtxSessionService(engine)
        self.limit = limit

    @override
    async def add_session_to_memory(self, session: AdkSession) -> None:
        await asyncio.to_thread(
            self.learn, session.app_name, session.user_id, session.id, session.events
        )

    @override
    async def add_events_to_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        events: Sequence[AdkEvent],
        session_id: str | None = None,
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        if session_id is None:
            raise ValueError("agentctx learns from sessions: name the events' session_id")
        await asyncio.to_thread(self.learn, app_name, user_id, session_id, events)

    @override
    async def add_memory(
        self,
        *,
        app_name: str,
        user_id: str,
        memories: Sequence[MemoryEntry],
        custom_metadata: Mapping[str, object] | None = None,
    ) -> None:
        app_id, user = to_id(app_name, "app_name"), to_id(user_id, "user_id")

        def add() -> None:
            for entry in memories:
                text = "\n".join(p.text for p in entry.content.parts or () if p.text)
                if text.strip():
                    self.engine.memory.add(user, text, agent_id=app_id)

        await asyncio.to_thread(add)

    @override
    async def search_memory(
        self, *, app_name: str, user_id: str, query: str
    ) -> SearchMemoryResponse:
        hits = await asyncio.to_thread(self.search, app_name, user_id, query)
        return SearchMemoryResponse(memories=[memory_entry(hit) for hit in hits])

    @override
    async def delete_memory(
        self, *, app_name: str, user_id: str, memory_id: str | None = None
    ) -> None:
        if not memory_id:
            return
        user = to_id(user_id, "user_id")
        with contextlib.suppress(MemoryNotFound):
            await asyncio.to_thread(self.engine.memory.delete, user, memory_id)

    # The same operations, synchronous ------------------------------------------------

    def learn(
        self, app_name: str, user_id: str, session_id: str, events: Sequence[AdkEvent]
    ) -> None:
        """Record the ``events`` the session's log lacks, end its open invocation turn
        (extraction reads whole turns), then extract its memories."""
        stored = self.sessions.get_session_sync(app_name, user_id, session_id)
        if stored is None:
            stored = self.sessions.create_session_sync(app_name, user_id, None, session_id)
        known = {event.id for event in stored.events}
        for event in events:
            if event.id not in known and not event.partial:
                self.sessions.record_event(stored, event)
        self.sessions.end_turn_of(user_id, session_id, app_name)
        self.engine.memory.extract_session(
            to_id(user_id, "user_id"), to_id(session_id, "session_id")
        )

    def search(self, app_name: str, user_id: str, query: str) -> list[MemoryHit]:
        """The user's memories best matching ``query``: learned from any session, or
        added for this app."""
        app_id = to_id(app_name, "app_name")
        hits = self.engine.memory.search(
            to_id(user_id, "user_id"), query or None, limit=self.limit * 3
        )
        return [h for h in hits if h.memory.agent_id in (None, app_id)][: self.limit]


def memory_entry(hit: MemoryHit) -> MemoryEntry:
    """A search hit as ADK's ``MemoryEntry``."""
    memory = hit.memory
    return MemoryEntry(
        id=memory.memory_id,
        content=types.Content(role="user", parts=[types.Part(text=memory.content)]),
        timestamp=memory.updated_at.isoformat(),
        custom_metadata={
            "kind": memory.kind.value,
            "confidence": memory.confidence,
            "score": hit.score,
            "support_count": memory.support_count,
        },
    )
