"""What an open turn is, whether its session is embedded or on a server.

A turn is begun by its session, written to until it ends, and ended by leaving its
``with`` block: with ``ok``, or, when the block raises, after an ``error`` event
records the exception (which propagates). The turn open on a session in the current
context is found through a ``ContextVar`` (:class:`OpenTurns`), so it follows the
code into threads started with ``contextvars.copy_context()`` and into asyncio
tasks, and two sessions can each have a turn open at once.

:class:`~agentctx.sessions.turns.Turn` (embedded sessions) and
:class:`~agentctx.client.turns.RemoteTurn` (sessions on a server) are both an
:class:`OpenTurn`; they differ in their session and in the key their open turns are
found by.
"""

from __future__ import annotations

import contextvars
import logging
from collections.abc import Hashable, Sequence
from types import MappingProxyType, TracebackType
from typing import Any, ClassVar, Generic, Protocol, Self, TypeVar

from agentctx.errors import TurnError
from agentctx.events import Event, EventDraft
from agentctx.sessions.recording import EventRecorder

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
T = TypeVar("T")


def note_unended(error: BaseException, turn_id: str | None, ending: Exception) -> None:
    """A block that raised ``error`` left a turn that could not be ended (``ending``):
    ``error`` stays the exception the caller sees, with the failure noted on it (and
    logged)."""
    log.warning(
        "turn %s could not be ended after its block raised %s: %s",
        turn_id,
        type(error).__name__,
        ending,
    )
    error.add_note(
        f"agentctx: turn {turn_id} could not be ended either: {type(ending).__name__}: {ending}"
    )


class OpenTurns(Generic[K, T]):
    """The turns open in the current context, by session key (one ``ContextVar``)."""

    def __init__(self, name: str) -> None:
        self._turns: contextvars.ContextVar[MappingProxyType[K, T]] = contextvars.ContextVar(
            name, default=MappingProxyType({})
        )

    def get(self, key: K) -> T | None:
        """The turn open on the session ``key`` names in this context, if any."""
        return self._turns.get().get(key)

    def open(self, key: K, turn: T, session_id: str) -> contextvars.Token[MappingProxyType[K, T]]:
        """Make ``turn`` the open turn of the session ``key`` names in this context (one
        at a time: a second raises TurnError)."""
        turns = self._turns.get()
        if key in turns:
            raise TurnError(f"session {session_id} already has an open turn in this context")
        return self._turns.set(MappingProxyType({**turns, key: turn}))

    def close(self, key: K, turn: T, token: contextvars.Token[MappingProxyType[K, T]]) -> None:
        """Undo :meth:`open`; a turn ended in another context than it began in drops
        only its own key there."""
        try:
            self._turns.reset(token)
        except ValueError:
            if self._turns.get().get(key) is turn:
                self._turns.set(
                    MappingProxyType({k: v for k, v in self._turns.get().items() if k != key})
                )


class TurnSession(Protocol):
    """What an open turn asks of its session."""

    @property
    def id(self) -> str: ...

    def _write_in_turn(
        self, turn: Any, drafts: Sequence[EventDraft], *, expected_last_seq: int | None
    ) -> list[Event]: ...

    def _record_turn_error(self, turn: Any, error: BaseException) -> None: ...

    def _end_turn(self, turn: Any, status: str) -> None: ...


class OpenTurn(EventRecorder):
    """An open turn of a session. Use it as a context manager (``session.turn()``).

    Subclasses name the registry their open turns are found in (``_open``) and the key
    of their session there (:meth:`_key`).
    """

    _open: ClassVar[OpenTurns[Any, Any]]

    def __init__(
        self, session: TurnSession, turn_id: str, request_id: str, author: str | None
    ) -> None:
        self.session = session
        self.turn_id = turn_id
        self.request_id = request_id
        self.author = author
        self.status: str = "open"
        self._token: contextvars.Token[Any] | None = None

    def __repr__(self) -> str:
        return f"{type(self).__name__}(turn_id={self.turn_id!r}, status={self.status!r})"

    def _key(self) -> Hashable:
        raise NotImplementedError

    @property
    def ended(self) -> bool:
        """Whether the turn has ended."""
        return self.status != "open"

    def _write(self, drafts: Sequence[EventDraft], *, expected_last_seq: int | None) -> list[Event]:
        if self.ended:
            raise TurnError(f"turn {self.turn_id} has ended; open a new turn")
        return self.session._write_in_turn(self, drafts, expected_last_seq=expected_last_seq)

    def end(self, status: str = "ok") -> None:
        """End the turn (idempotent); its turn-end work is queued."""
        try:
            self._finish(status)
        finally:
            self._deactivate()

    def _leave(self, error: BaseException | None) -> None:
        """The storage half of leaving the ``with`` block: ``ok``, or ``error`` after
        ``error`` (the block's exception) is recorded. When the block raised, a failure
        to record or end the turn (its session erased meanwhile, the database gone) does
        not replace the block's exception, which is the one the caller must see: it is
        noted on it (and logged) instead."""
        if error is None:
            self._finish("ok")
            return
        try:
            self._finish("error", error)
        except Exception as ending:
            note_unended(error, self.turn_id, ending)

    def _finish(self, status: str, error: BaseException | None = None) -> None:
        """The storage half of ending: record ``error`` (if any), then end the turn."""
        if self.ended:
            return
        try:
            if error is not None:
                self.session._record_turn_error(self, error)
        finally:
            self.session._end_turn(self, status)
            self.status = status

    def _activate(self) -> None:
        self._token = self._open.open(self._key(), self, self.session.id)

    def _deactivate(self) -> None:
        if self._token is None:
            return
        self._open.close(self._key(), self, self._token)
        self._token = None

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        try:
            self._leave(exc)
        finally:
            self._deactivate()
