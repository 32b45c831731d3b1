"""Turns: one user request and everything the agent does for it.

``with session.turn() as turn:`` opens a turn; every event written inside the
block (through the turn, or through the session from the same thread or asyncio
task) carries its ``turn_id``. Leaving the block ends the turn and, in the same
transaction, queues the registered turn-end hooks as durable jobs. If the block
raises, an ``error`` event records the exception before the turn ends with
status ``error``; the exception propagates.

The current turn lives in a ``contextvars.ContextVar``
(:class:`~agentctx.sessions.open_turns.OpenTurns`), so it follows the code into
threads started with ``contextvars.copy_context()`` and into asyncio tasks, and two
sessions can each have a turn open at once.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from agentctx.sessions.open_turns import OpenTurn, OpenTurns

if TYPE_CHECKING:
    from agentctx.sessions.session import Session

SessionKey = tuple[str, str]  # (user id, session id)
_OPEN: OpenTurns[SessionKey, Turn] = OpenTurns("agentctx_current_turns")


def current_turn(user_id: str, session_id: str) -> Turn | None:
    """The turn open on this session in the current context, if any."""
    return _OPEN.get((user_id, session_id))


class Turn(OpenTurn):
    """An open turn of an embedded session. Use it as a context manager
    (``session.turn()``); ending it queues its turn-end hooks."""

    _open: ClassVar[OpenTurns[SessionKey, Turn]] = _OPEN
    session: Session

    def __init__(self, session: Session, turn_id: str, request_id: str, author: str | None) -> None:
        super().__init__(session, turn_id, request_id, author)

    def _key(self) -> SessionKey:
        return (self.session.user_id, self.session.id)
