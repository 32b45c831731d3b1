"""What every session handle has, embedded (``Session``) or remote (``RemoteSession``):
its identity and state as last read, event recording, and the active-task methods."""

from __future__ import annotations

from abc import abstractmethod
from datetime import datetime
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from agentctx.context.task import TaskMethods
from agentctx.errors import InvalidInput
from agentctx.sessions.importer import ImportReport, MessageFormat, import_messages
from agentctx.sessions.models import SessionInfo
from agentctx.sessions.open_turns import OpenTurn
from agentctx.sessions.recording import EventRecorder

StateModel = TypeVar("StateModel", bound=BaseModel)


class SessionHandle(EventRecorder, TaskMethods):
    """A handle on one session; subclasses say how it is read and written."""

    _info: SessionInfo

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(id={self.id!r}, user_id={self.user_id!r}, "
            f"agent_id={self.agent_id!r})"
        )

    @property
    def id(self) -> str:
        """The session id."""
        return self._info.session_id

    @property
    def user_id(self) -> str:
        """The user the session belongs to."""
        return self._info.user_id

    @property
    def agent_id(self) -> str:
        """The agent the session is with."""
        return self._info.agent_id

    @property
    def info(self) -> SessionInfo:
        """The session row as last read."""
        return self._info

    @property
    def state(self) -> dict[str, Any]:
        """The session state as last read or written through this handle."""
        return dict(self._info.state)

    @property
    def state_version(self) -> int:
        """The state version as last read or written through this handle."""
        return self._info.state_version

    @property
    def last_activity(self) -> datetime:
        """When the session was last written (as last read)."""
        return self._info.updated_at

    def state_as(self, model: type[StateModel]) -> StateModel:
        """The state validated as a pydantic model (typed state)."""
        try:
            return model.model_validate(self._info.state)
        except ValidationError as exc:
            raise InvalidInput(f"session state does not match {model.__name__}: {exc}") from exc

    @abstractmethod
    def begin_turn(self, *, request_id: str | None = None, author: str | None = None) -> OpenTurn:
        """Begin a turn that spans calls; end it with ``turn.end(status)``."""

    def import_messages(
        self, messages: Any, *, format: MessageFormat | str = "openai"
    ) -> ImportReport:
        """Record a conversation given as chat messages (OpenAI's format, or ``"anthropic"``
        for Anthropic's) as the agent made it: each user message opens a turn, tool calls
        and their results keep their ids (see :mod:`agentctx.sessions.importer`).
        ``messages`` is a list of messages or an object with ``messages`` (and ``system``).
        """
        return import_messages(self, messages, format)
