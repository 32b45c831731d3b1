"""The asyncio API: the same operations, run in worker threads so the event loop never blocks.

One implementation serves both APIs: each coroutine here hands the synchronous
call to ``asyncio.to_thread``, which copies the caller's ``contextvars`` (so an
open turn follows the call). Use it from async servers and agents::

    engine = AsyncContextEngine(ContextEngine())
    session = await engine.create_session(user_id="u1")
    async with session.turn() as turn:
        await turn.add_message("user", "hi")
"""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Callable
from types import TracebackType
from typing import Any, ParamSpec, TypeVar

from agentctx.engine import ContextEngine
from agentctx.events import Event, EventDraft, EventType
from agentctx.sessions.erasures import Erasure
from agentctx.sessions.models import DeleteReport, Page, SessionInfo, TurnInfo, VerifyReport
from agentctx.sessions.recording import EventRecorder
from agentctx.sessions.session import Session
from agentctx.sessions.turns import Turn

P = ParamSpec("P")
R = TypeVar("R")


async def _run(function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    return await asyncio.to_thread(functools.partial(function, *args, **kwargs))


class _AsyncRecorder:
    """The recording calls shared by AsyncTurn and AsyncSession."""

    sync: EventRecorder

    async def add_message(self, role: str, text: str, **kwargs: Any) -> Event:
        """See ``Session.add_message``."""
        return await _run(self.sync.add_message, role, text, **kwargs)

    async def add_tool_call(
        self, name: str, arguments: dict[str, Any] | None = None, **kwargs: Any
    ) -> Event:
        """See ``Session.add_tool_call``."""
        return await _run(self.sync.add_tool_call, name, arguments, **kwargs)

    async def add_tool_result(
        self, call_id: str | None, content: str | None = None, **kwargs: Any
    ) -> Event:
        """See ``Session.add_tool_result``."""
        return await _run(self.sync.add_tool_result, call_id, content, **kwargs)

    async def add_event(
        self, type: EventType | str, text: str | None = None, **kwargs: Any
    ) -> Event:
        """See ``Session.add_event``."""
        return await _run(self.sync.add_event, type, text, **kwargs)

    async def append(
        self, *drafts: EventDraft, expected_last_seq: int | None = None
    ) -> list[Event]:
        """See ``Session.append``."""
        return await _run(self.sync.append, *drafts, expected_last_seq=expected_last_seq)


class AsyncTurn(_AsyncRecorder):
    """An open turn (async). Leaving ``async with`` ends it."""

    def __init__(self, turn: Turn) -> None:
        self.sync: Turn = turn
        self.turn_id = turn.turn_id

    async def end(self, status: str = "ok", error: BaseException | None = None) -> None:
        """End the turn (storage in a thread; the context change here, in the task)."""
        try:
            await _run(self.sync._finish, status, error)
        finally:
            self.sync._deactivate()

    async def __aenter__(self) -> AsyncTurn:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:  # the block's exception is not replaced by a failure to end the turn
            await _run(self.sync._leave, exc)
        finally:
            self.sync._deactivate()


class AsyncSession(_AsyncRecorder):
    """A session (async). Wraps a ``Session``; ``sync`` is the synchronous handle."""

    def __init__(self, session: Session) -> None:
        self.sync: Session = session

    @property
    def id(self) -> str:
        """The session id."""
        return self.sync.id

    @property
    def user_id(self) -> str:
        """The owner."""
        return self.sync.user_id

    @property
    def state(self) -> dict[str, Any]:
        """The state as last read."""
        return self.sync.state

    @property
    def state_version(self) -> int:
        """The state version as last read."""
        return self.sync.state_version

    def turn(self, *, request_id: str | None = None, author: str | None = None) -> _TurnOpener:
        """``async with session.turn() as turn:``."""
        return _TurnOpener(self.sync, request_id, author)

    async def events(self, **filters: Any) -> list[Event]:
        """See ``Session.events``."""
        return await _run(self.sync.events, **filters)

    async def turns(self) -> list[TurnInfo]:
        """See ``Session.turns``."""
        return await _run(self.sync.turns)

    async def update_state(self, changes: dict[str, Any], **kwargs: Any) -> dict[str, Any]:
        """See ``Session.update_state``."""
        return await _run(self.sync.update_state, changes, **kwargs)

    async def refresh(self) -> SessionInfo:
        """See ``Session.refresh``."""
        return await _run(self.sync.refresh)

    async def verify(self) -> VerifyReport:
        """See ``Session.verify``."""
        return await _run(self.sync.verify)

    async def delete(self) -> DeleteReport:
        """See ``Session.delete``."""
        return await _run(self.sync.delete)


class _TurnOpener:
    def __init__(self, session: Session, request_id: str | None, author: str | None) -> None:
        self._session, self._request_id, self._author = session, request_id, author
        self._turn: AsyncTurn | None = None

    async def __aenter__(self) -> AsyncTurn:
        turn = await _run(
            self._session._begin_turn, request_id=self._request_id, author=self._author
        )
        # Activate in the task's own context (to_thread ran in a copy), so the task's
        # later session.add_* calls join this turn.
        turn._activate()
        self._turn = AsyncTurn(turn)
        return self._turn

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._turn is not None
        await self._turn.__aexit__(exc_type, exc, tb)


class AsyncContextEngine:
    """The engine (async). Wraps a ``ContextEngine``; ``sync`` is the synchronous engine."""

    def __init__(self, engine: ContextEngine | None = None, **kwargs: Any) -> None:
        self.sync = engine or ContextEngine(**kwargs)

    async def create_session(
        self, user_id: str, agent_id: str = "default", **kwargs: Any
    ) -> AsyncSession:
        """See ``ContextEngine.create_session``."""
        return AsyncSession(await _run(self.sync.create_session, user_id, agent_id, **kwargs))

    async def get_session(self, session_id: str, user_id: str) -> AsyncSession:
        """See ``ContextEngine.get_session``."""
        return AsyncSession(await _run(self.sync.get_session, session_id, user_id))

    async def list_sessions(self, user_id: str, **kwargs: Any) -> Page[SessionInfo]:
        """See ``ContextEngine.list_sessions``."""
        return await _run(self.sync.list_sessions, user_id, **kwargs)

    async def delete_session(self, session_id: str, user_id: str) -> DeleteReport:
        """See ``ContextEngine.delete_session``."""
        return await _run(self.sync.delete_session, session_id, user_id)

    async def verify(self, session_id: str, user_id: str) -> VerifyReport:
        """See ``ContextEngine.verify``."""
        return await _run(self.sync.verify, session_id, user_id)

    async def get_blob(self, blob_id: str, user_id: str) -> bytes:
        """See ``ContextEngine.get_blob``."""
        return await _run(self.sync.get_blob, blob_id, user_id)

    async def restore_image(self, image_id: str, user_id: str) -> bytes:
        """See ``ContextEngine.restore_image``."""
        return await _run(self.sync.restore_image, image_id, user_id)

    async def delete_user_data(self, user_id: str) -> DeleteReport:
        """See ``ContextEngine.delete_user_data``."""
        return await _run(self.sync.delete_user_data, user_id)

    async def forget_erased(self) -> list[Erasure]:
        """See ``ContextEngine.forget_erased``."""
        return await _run(self.sync.forget_erased)

    async def aclose(self) -> None:
        """Close the engine."""
        await _run(self.sync.close)


__all__ = ["AsyncContextEngine", "AsyncSession", "AsyncTurn"]
