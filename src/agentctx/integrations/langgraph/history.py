"""``AgentCtxChatMessageHistory``: a LangChain chat message history kept in agentctx.

For chains that keep their history in a ``BaseChatMessageHistory`` (for instance
``RunnableWithMessageHistory``): every message added becomes events of an agentctx
session (:mod:`agentctx.integrations.langgraph.messages`: redacted, hash-chained,
searchable, compacted), and ``messages`` reads them back as the messages they were,
types, ids, tool calls and tool call ids included (content redacted).

* ``add_messages`` writes one batch as one all-or-nothing append, one agentctx turn.
  A message that carries an id is recorded once: adding it again writes nothing.
* ``messages`` is every recorded message, oldest first; with ``window`` settings it
  is the context window instead (``Session.build_context`` within the budget, as LangChain
  messages with tool calls and results paired).
* ``clear`` deletes the session and its data and starts it again, empty, with the
  same id.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from agentctx.errors import SessionNotFound
from agentctx.events import BlobPart, ImagePart
from agentctx.integrations.langgraph.messages import (
    event_to_message,
    message_to_drafts,
    window_messages,
)
from agentctx.integrations.sessions import (
    EngineLike,
    SessionLike,
    WindowSettings,
    open_session,
    read_blob,
    read_image,
)


class AgentCtxChatMessageHistory(BaseChatMessageHistory):
    """A ``BaseChatMessageHistory`` whose messages are an agentctx session's events.

    ``window`` (budget, query, strategy, …) makes ``messages`` the context window
    rather than every message.
    """

    def __init__(
        self,
        engine: EngineLike,
        *,
        session_id: str,
        user_id: str,
        agent_id: str = "default",
        window: WindowSettings | None = None,
    ) -> None:
        super().__init__()
        self.engine = engine
        self.session_id = session_id
        self.user_id = user_id
        self.agent_id = agent_id
        self.window = window
        self._handle: SessionLike | None = None

    def __repr__(self) -> str:
        return (
            f"AgentCtxChatMessageHistory(session_id={self.session_id!r}, user_id={self.user_id!r})"
        )

    def session(self) -> SessionLike:
        """The agentctx session (created on first use)."""
        if self._handle is None:
            self._handle = open_session(self.engine, self.session_id, self.user_id, self.agent_id)
        return self._handle

    @property
    def messages(self) -> list[BaseMessage]:  # type: ignore[override]
        """Every recorded message, oldest first (with ``window``: the window)."""
        if self.window is not None:
            return window_messages(self.window.build(self.session()).messages)
        found: list[BaseMessage] = []
        for event in self.session().events():
            message = event_to_message(event, self._read_blob, self._read_image)
            if message is not None:
                found.append(message)
        return found

    def add_messages(self, messages: Sequence[BaseMessage]) -> None:
        """Record ``messages`` in one append (one transaction, one turn)."""
        drafts = [
            draft
            for message in messages
            for draft in message_to_drafts(message, message.id or uuid.uuid4().hex)
        ]
        if drafts:
            self.session().append(*drafts)

    def clear(self) -> None:
        """Delete the session's data; it starts again, empty, with the same id."""
        with contextlib.suppress(SessionNotFound):
            self.engine.delete_session(self.session_id, self.user_id)
        self._handle = None
        self.session()

    def _read_blob(self, part: BlobPart) -> bytes:
        return read_blob(self.engine, self.user_id, part)

    def _read_image(self, part: ImagePart) -> bytes | None:
        return read_image(self.engine, self.user_id, part)


__all__ = ["AgentCtxChatMessageHistory"]
