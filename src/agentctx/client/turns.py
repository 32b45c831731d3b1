"""``RemoteTurn``: a turn of a session on a server, used like the embedded ``Turn``.

``with session.turn() as turn:`` begins the turn (``POST …/turns``); every event
written inside the block, through the turn or through the session from the same
thread or asyncio task, carries its ``turn_id``; leaving the block ends it
(``POST …/turns/{id}/end``) with ``ok``, or, when the block raises, records an
``error`` event first and ends it with ``error`` (the exception propagates), exactly
as the embedded turn does. The current turn lives in a ``ContextVar`` of its own.
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
    from agentctx.client.session import RemoteSession

TurnKey = tuple[str, str, str]  # (server url, user id, session id)
_EMPTY: MappingProxyType[TurnKey, RemoteTurn] = MappingProxyType({})
_current: contextvars.ContextVar[MappingProxyType[TurnKey, RemoteTurn]] = contextvars.ContextVar(
    "agentctx_remote_turns", default=_EMPTY
)


def current_remote_turn(key: TurnKey) -> RemoteTurn | None:
    """The remote turn open on this session in the current context, if any."""
    return _current.get().get(key)


class RemoteTurn(EventRecorder):
    """An open turn of a remote session. Use it as a context manager (``session.turn()``)."""

    def __init__(
        self, session: RemoteSession, turn_id: str, request_id: str, author: str | None
    ) -> None:
        self.session = session
        self.turn_id = turn_id
        self.request_id = request_id
        self.author = author
        self.status: str = "open"
        self._token: contextvars.Token[MappingProxyType[TurnKey, RemoteTurn]] | None = None

    def __repr__(self) -> str:
        return f"RemoteTurn(turn_id={self.turn_id!r}, status={self.status!r})"

    @property
    def ended(self) -> bool:
        """Whether the turn has ended."""
        return self.status != "open"

    def _write(self, drafts: Sequence[EventDraft], *, expected_last_seq: int | None) -> list[Event]:
        if self.ended:
            raise TurnError(f"turn {self.turn_id} has ended; open a new turn")
        return self.session._write_in_turn(self, drafts, expected_last_seq=expected_last_seq)

    def end(self, status: str = "ok") -> None:
        """End the turn (idempotent); the server queues its turn-end work."""
        try:
            self._finish(status)
        finally:
            self._deactivate()

    def _finish(self, status: str, error: BaseException | None = None) -> None:
        if self.ended:
            return
        try:
            if error is not None:
                self.session._record_turn_error(self, error)
        finally:
            self.session._end_turn(self, status)
            self.status = status

    def _activate(self) -> None:
        key = self.session._turn_key
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
            key = self.session._turn_key
            if _current.get().get(key) is self:
                _current.set(
                    MappingProxyType({k: v for k, v in _current.get().items() if k != key})
                )
        self._token = None

    def __enter__(self) -> RemoteTurn:
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
