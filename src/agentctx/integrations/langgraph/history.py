"""``AgentCtxChatMessageHistory``: a LangChain chat message history kept in agentctx.

For chains that keep their history in a ``BaseChatMessageHistory`` (for instance
``RunnableWithMessageHistory``): every message added becomes events of an agentctx
session (:mod:`agentctx.integrations.langgraph.messages`: redacted, hash-chained,
searchable, compacted), and ``messages`` reads them back as the messages they were,
types, ids, tool calls and tool call ids included (content redacted).

* ``add_messages`` writes one batch as one all-or-nothing append, one agentctx turn.
  A message that carries an id is recorded once: adding it again writes nothing.
* ``messages`` is every recorded message, oldest first; with a ``budget`` it is the
  context window instead (``Session.build_context`` within the budget, as LangChain
  messages with tool calls and results paired).
* ``clear`` deletes the session and its data and starts it again, empty, with the
  same id.
"""

from __future__ import annotations

import contextlib
import uuid
from collections.abc import Sequence
from typing import Any

from langchain_core.chat_history import BaseChatMessageHistory
from langchain_core.messages import BaseMessage

from agentctx.errors import BlobNotFound, SessionNotFound
from agentctx.events import BlobPart, ImagePart
from agentctx.integrations.langgraph.messages import (
    event_to_message,
    message_to_drafts,
    window_messages,
)
from agentctx.integrations.sessions import EngineLike, SessionLike, open_session


class AgentCtxChatMessageHistory(BaseChatMessageHistory):
    """A ``BaseChatMessageHistory`` whose messages are an agentctx session's events.

    ``budget`` (with ``query``, ``strategy``, ``system_prompt``, ``context_config``)
    makes ``messages`` the context window rather than every message.
    """

    def __init__(
        self,
        engine: EngineLike,
        *,
        session_id: str,
        user_id: str,
        agent_id: str = "default",
        budget: int | None = None,
        query: str | None = None,
        strategy: str | None = None,
        system_prompt: str | None = None,
        context_config: dict[str, Any] | None = None,
    ) -> None:
        super().__init__()
        self.engine = engine
        self.session_id = session_id
        self.user_id = user_id
        self.agent_id = agent_id
        self.budget = budget
        self.query = query
        self.strategy = strategy
        self.system_prompt = system_prompt
        self.context_config = context_config
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
        """Every recorded message, oldest first (with a ``budget``: the window)."""
        if self.budget is not None:
            window = self.session().build_context(
                self.query,
                self.budget,
                strategy=self.strategy,
                system_prompt=self.system_prompt,
                config=self.context_config,
            )
            return window_messages(window.messages)
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
        return self.engine.get_blob(part.blob_id, self.user_id)

    def _read_image(self, part: ImagePart) -> bytes | None:
        try:
            return self.engine.restore_image(part.image_id, self.user_id)
        except BlobNotFound:  # retention removed the bytes
            return None


__all__ = ["AgentCtxChatMessageHistory"]
