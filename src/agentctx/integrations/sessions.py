"""What an integration needs of an engine and a session, and a session opened on first use.

The engine is anything with these ``ContextEngine`` methods: the in-process engine, or
a client of an agentctx server with the same methods.
"""

from __future__ import annotations

from typing import Any, Protocol

from agentctx.context.window import ContextWindow
from agentctx.errors import SessionExists, SessionNotFound
from agentctx.events import Event, EventDraft


class SessionLike(Protocol):
    """The ``Session`` methods the integration uses."""

    @property
    def id(self) -> str: ...

    @property
    def state(self) -> dict[str, Any]: ...

    def refresh(self) -> Any: ...

    def append(self, *drafts: EventDraft, expected_last_seq: int | None = None) -> list[Event]: ...

    def events(
        self,
        *,
        start_seq: int | None = None,
        end_seq: int | None = None,
        last: int | None = None,
    ) -> list[Event]: ...

    def update_state(
        self, changes: dict[str, Any], *, expected_version: int | None = None
    ) -> dict[str, Any]: ...

    def build_context(
        self,
        query: str | None = None,
        budget: int = 4000,
        *,
        strategy: str | None = None,
        system_prompt: str | None = None,
        config: dict[str, Any] | None = None,
    ) -> ContextWindow: ...


class EngineLike(Protocol):
    """The ``ContextEngine`` methods the integration uses."""

    def get_session(self, session_id: str, user_id: str) -> SessionLike: ...

    def create_session(
        self, user_id: str, agent_id: str = "default", *, session_id: str | None = None
    ) -> SessionLike: ...

    def delete_session(self, session_id: str, user_id: str) -> Any: ...

    def get_blob(self, blob_id: str, user_id: str) -> bytes: ...

    def restore_image(self, image_id: str, user_id: str) -> bytes: ...


def open_session(engine: EngineLike, session_id: str, user_id: str, agent_id: str) -> SessionLike:
    """The user's session ``session_id``, created (for ``agent_id``) when it does not exist."""
    try:
        return engine.get_session(session_id, user_id)
    except SessionNotFound:
        try:
            return engine.create_session(user_id, agent_id, session_id=session_id)
        except SessionExists:  # created meanwhile by another handle
            return engine.get_session(session_id, user_id)


__all__ = ["EngineLike", "SessionLike", "open_session"]
