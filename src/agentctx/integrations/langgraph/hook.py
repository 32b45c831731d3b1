"""A LangGraph ``pre_model_hook`` that records the conversation in agentctx and hands the
model agentctx's context window.

``create_react_agent(model, tools, pre_model_hook=pre_model_hook(engine, budget=3000))``
runs the hook before every model call. The hook

1. records the messages of the graph state that agentctx does not have yet (the user's
   request, each AI message with its tool calls, each tool result), each exactly once:
   every event carries an idempotency key made of its message id, and the hook
   remembers where it stopped, so the whole list it sees at every step costs only the
   new messages. Each run of new messages up to the next ``HumanMessage`` is one
   append, and so one agentctx turn (turn-end compaction runs after it);
2. builds the context window for the next call (``Session.build_context``: within the
   budget, compacted, with the older events relevant to the latest request) and
   returns it as ``llm_input_messages``: the model sees the window, the graph state
   keeps every message.

The agentctx user and session come from the hook's arguments or, per run, from the
config: ``configurable.user_id`` and ``configurable.thread_id`` (the checkpointer's
thread is the agentctx session). The final AI message of a run is recorded by the
next call of the hook (the next request), or at once by :meth:`ContextHook.record`.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from langchain_core.messages import BaseMessage, HumanMessage
from langchain_core.runnables import RunnableConfig

from agentctx.context.window import ContextWindow
from agentctx.errors import InvalidInput
from agentctx.events import Event
from agentctx.integrations.langgraph.messages import (
    message_key,
    message_to_drafts,
    window_messages,
)
from agentctx.integrations.sessions import (
    EngineLike,
    SessionLike,
    WindowSettings,
    open_session,
)

REMEMBERED_SESSIONS = 1024
"""How many sessions a hook remembers its place (and handle) in; the least recently used
is forgotten first, and a forgotten session's messages are handed over again (the
idempotency keys drop them)."""


@dataclass
class _Place:
    """Where a hook stopped in one session's message list."""

    session: SessionLike
    recorded: int = 0  # how many messages of the list are recorded
    last: str = ""  # the key of the last of them


class ContextHook:
    """The ``pre_model_hook`` :func:`pre_model_hook` makes (see the module docstring)."""

    def __init__(
        self,
        engine: EngineLike,
        *,
        user_id: str | None = None,
        session_id: str | None = None,
        agent_id: str = "default",
        window: WindowSettings | None = None,
    ) -> None:
        self.engine = engine
        self.user_id = user_id
        self.session_id = session_id
        self.agent_id = agent_id
        self.window = window or WindowSettings()
        self.last_window: ContextWindow | None = None
        self._places: OrderedDict[tuple[str, str], _Place] = OrderedDict()
        self._lock = threading.Lock()

    def __call__(self, state: Any, config: RunnableConfig) -> dict[str, Any]:
        """The hook: record what is new, return the window as the model's input."""
        messages = _messages_of(state)
        place = self._place(config)
        self._record(place, messages)
        window = self.window.build(place.session, latest_request(messages))
        self.last_window = window
        return {"llm_input_messages": window_messages(window.messages)}

    def session(self, config: RunnableConfig | None = None) -> SessionLike:
        """The agentctx session of a run (created on first use)."""
        return self._place(config).session

    def record(
        self, messages: Sequence[BaseMessage], config: RunnableConfig | None = None
    ) -> list[Event]:
        """Record the messages agentctx does not have yet; returns the events written
        now (or found stored: a message recorded before writes nothing new)."""
        return self._record(self._place(config), messages)

    def _record(self, place: _Place, messages: Sequence[BaseMessage]) -> list[Event]:
        done = place.recorded
        known = 0 < done <= len(messages) and message_key(messages[done - 1]) == place.last
        new = list(messages[done if known else 0 :])
        written: list[Event] = []
        for group in _runs_by_request(new):
            drafts = [draft for message in group for draft in message_to_drafts(message)]
            written.extend(place.session.append(*drafts))
        if messages:
            place.recorded, place.last = len(messages), message_key(messages[-1])
        return written

    def _place(self, config: RunnableConfig | None) -> _Place:
        ids = self._ids(config)
        with self._lock:
            place = self._places.get(ids)
            if place is not None:
                self._places.move_to_end(ids)
                return place
        user_id, session_id = ids
        place = _Place(open_session(self.engine, session_id, user_id, self.agent_id))
        with self._lock:
            place = self._places.setdefault(ids, place)
            while len(self._places) > REMEMBERED_SESSIONS:
                self._places.popitem(last=False)
        return place

    def _ids(self, config: RunnableConfig | None) -> tuple[str, str]:
        configurable: Mapping[str, Any] = (config or {}).get("configurable") or {}
        user_id = self.user_id or configurable.get("user_id")
        session_id = self.session_id or configurable.get("thread_id")
        if not isinstance(user_id, str) or not user_id:
            raise InvalidInput("no user: pass user_id to the hook or configurable.user_id")
        if not isinstance(session_id, str) or not session_id:
            raise InvalidInput("no session: pass session_id to the hook or a thread_id")
        return user_id, session_id


def pre_model_hook(
    engine: EngineLike,
    *,
    user_id: str | None = None,
    session_id: str | None = None,
    agent_id: str = "default",
    budget: int = 4000,
    query: str | None = None,
    strategy: str | None = None,
    system_prompt: str | None = None,
    context_config: dict[str, Any] | None = None,
) -> ContextHook:
    """A ``pre_model_hook`` for ``create_react_agent`` kept in agentctx.

    ``budget``, ``query`` (default: the latest ``HumanMessage``'s text), ``strategy``,
    ``system_prompt`` and ``context_config`` shape the window (``Session.build_context``'s
    arguments). ``user_id`` / ``session_id`` fix the agentctx user and session; without
    them each run names them in ``configurable.user_id`` and ``configurable.thread_id``.
    """
    window = WindowSettings(budget, query, strategy, system_prompt, context_config)
    return ContextHook(
        engine, user_id=user_id, session_id=session_id, agent_id=agent_id, window=window
    )


def latest_request(messages: Sequence[BaseMessage]) -> str | None:
    """The text of the newest ``HumanMessage`` (what the window should be relevant to)."""
    for message in reversed(messages):
        if isinstance(message, HumanMessage):
            return message.text or None
    return None


def _messages_of(state: Any) -> list[BaseMessage]:
    messages = state.get("messages") if isinstance(state, Mapping) else state.messages
    if not isinstance(messages, list):
        raise InvalidInput("the graph state has no list of messages")
    return messages


def _runs_by_request(messages: Sequence[BaseMessage]) -> list[list[BaseMessage]]:
    """``messages`` cut before each ``HumanMessage``: one run per request."""
    runs: list[list[BaseMessage]] = []
    for message in messages:
        if isinstance(message, HumanMessage) or not runs:
            runs.append([])
        runs[-1].append(message)
    return runs


__all__ = ["REMEMBERED_SESSIONS", "ContextHook", "latest_request", "pre_model_hook"]
