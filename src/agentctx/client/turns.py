"""``RemoteTurn``: a turn of a session on a server, used like the embedded ``Turn``.

``with session.turn() as turn:`` begins the turn (``POST …/turns``); every event
written inside the block, through the turn or through the session from the same
thread or asyncio task, carries its ``turn_id``; leaving the block ends it
(``POST …/turns/{id}/end``) with ``ok``, or, when the block raises, records an
``error`` event first and ends it with ``error`` (the exception propagates), exactly
as the embedded turn does (both are an :class:`~agentctx.sessions.open_turns.OpenTurn`).
The current remote turn is found by server, user and session.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, ClassVar

from agentctx.sessions.open_turns import OpenTurn, OpenTurns

if TYPE_CHECKING:
    from agentctx.client.session import RemoteSession

TurnKey = tuple[str, str, str]  # (server url, user id, session id)
_OPEN: OpenTurns[TurnKey, RemoteTurn] = OpenTurns("agentctx_remote_turns")


def current_remote_turn(key: TurnKey) -> RemoteTurn | None:
    """The remote turn open on this session in the current context, if any."""
    return _OPEN.get(key)


class RemoteTurn(OpenTurn):
    """An open turn of a remote session. Use it as a context manager
    (``session.turn()``); ending it has the server queue its turn-end work."""

    _open: ClassVar[OpenTurns[TurnKey, RemoteTurn]] = _OPEN
    session: RemoteSession

    def __init__(
        self, session: RemoteSession, turn_id: str, request_id: str, author: str | None
    ) -> None:
        super().__init__(session, turn_id, request_id, author)

    def _key(self) -> TurnKey:
        return self.session._turn_key
