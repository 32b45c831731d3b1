"""Turns: one user request and everything the agent does for it.

``with session.turn() as turn:`` opens a turn; every event written inside the
block (through the turn, or through the session from the same thread or asyncio
task) carries its ``turn_id``. Leaving the block ends the turn and, in the same
transaction, queues the registered turn-end hooks as durable jobs. If the block
raises, an ``error`` event records the exception before the turn ends with
status ``error``; the exception propagates.

The current turn lives in a ``contextvars.ContextVar``, so it follows the code
into threads started with ``contextvars.copy_context()`` and into asyncio
tasks, and two sessions can each have a turn open at once.
"""

from __future__ import annotations

import contextvars
from collections.abc import Sequence
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING

from agentctx.errors import TurnError
from agentctx.events import Event, EventDraft
from agentctx.sessions.recording import EventRecorder

if TYPE_CHECKING:
    from agentctx.sessions.session import Session

SessionKey = tuple[str, str]
_EMPTY: MappingProxyType[SessionKey, Turn] = MappingProxyType({})
_current: contextvars.ContextVar[MappingProxyType[SessionKey, Turn]] = contextvars.ContextVar(
    "agentctx_current_turns", default=_EMPTY
)


def current_turn(user_id: str, session_id: str) -> Turn | None:
    """The turn open on this session in the current context, if any."""
    return _current.get().get((user_id, session_id))


class Turn(EventRecorder):
    """An open turn of a session. Use it as a context manager (``session.turn()``)."""

    def __init__(self, session: Session, turn_id: str, request_id: str, author: str | None) -> None:
        self.session = session
        self.turn_id = turn_id
        self.request_id = request_id
        self.author = author
        self.status: str = "open"
        self._token: contextvars.Token[MappingProxyType[SessionKey, Turn]] | None = None

    @property
    def ended(self) -> bool:
        """Whether the turn has ended."""
        return self.status != "open"

    def _write(self, drafts: Sequence[EventDraft], *, expected_last_seq: int | None) -> list[Event]:
        if self.ended:
            raise TurnError(f"turn {self.turn_id} has ended; open a new turn")
        return self.session._write_in_turn(self, drafts, expected_last_seq=expected_last_seq)

    def end(self, status: str = "ok") -> None:
        """End the turn (idempotent) and queue its turn-end hooks."""
        try:
            self._finish(status)
        finally:
            self._deactivate()

    def _finish(self, status: str, error: BaseException | None = None) -> None:
        """The storage half of ending: record ``error`` (if any), end the turn, run hooks."""
        if self.ended:
            return
        try:
            if error is not None:
                self.session._record_turn_error(self, error)
        finally:
            self.session._end_turn(self, status)
            self.status = status

    def _activate(self) -> None:
        key = (self.session.user_id, self.session.id)
        turns = _current.get()
        if key in turns:
            raise TurnError(f"session {self.session.id} already has an open turn in this context")
        self._token = _current.set(MappingProxyType({**turns, key: self}))

    def _deactivate(self) -> None:
        if self._token is None:
            return
        try:
            _current.reset(self._token)
        except ValueError:  # ended in another context than it began in: drop only our key
            key = (self.session.user_id, self.session.id)
            if _current.get().get(key) is self:
                _current.set(
                    MappingProxyType({k: v for k, v in _current.get().items() if k != key})
                )
        self._token = None

    def __enter__(self) -> Turn:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._finish("error" if exc is not None else "ok", exc)
        finally:
            self._deactivate()
