"""What an integration needs of an engine and a session, and a session opened on first use.

The engine is anything with these ``ContextEngine`` methods: the in-process engine, or
a client of an agentctx server with the same methods.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

from agentctx.context.window import ContextWindow
from agentctx.errors import BlobNotFound, SessionExists, SessionNotFound
from agentctx.events import BlobPart, Event, EventDraft, ImagePart


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


@dataclass(frozen=True)
class WindowSettings:
    """What shapes a context window: ``Session.build_context``'s arguments."""

    budget: int = 4000
    query: str | None = None
    strategy: str | None = None
    system_prompt: str | None = None
    context_config: dict[str, Any] | None = None

    def build(self, session: SessionLike, query: str | None = None) -> ContextWindow:
        """The session's window, relevant to the settings' ``query`` or else ``query``."""
        return session.build_context(
            self.query if self.query is not None else query,
            self.budget,
            strategy=self.strategy,
            system_prompt=self.system_prompt,
            config=self.context_config,
        )


def read_blob(engine: EngineLike, user_id: str, part: BlobPart) -> bytes:
    """The bytes an offloaded part of the user's event stands for."""
    return engine.get_blob(part.blob_id, user_id)


def read_image(engine: EngineLike, user_id: str, part: ImagePart) -> bytes | None:
    """The bytes of an image part of the user's event (None once retention removed them)."""
    try:
        return engine.restore_image(part.image_id, user_id)
    except BlobNotFound:  # ImageExpired included
        return None


__all__ = [
    "EngineLike",
    "SessionLike",
    "WindowSettings",
    "open_session",
    "read_blob",
    "read_image",
]
