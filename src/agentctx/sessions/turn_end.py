"""Turn-end conditions: whether a turn-end job is wanted for a turn that just ended.

A condition is asked inside the transaction that ends the turn. Any callable
``(conn, user_id, session_id, turn_id) -> bool`` will do (it reads the turn from the
database). Every append outside a turn ends a turn of its own, so a condition is also
asked after each of those; one that can answer from the events themselves implements
:class:`WrittenTurnCondition`, and is given the turn's events when the transaction
that ends the turn wrote all of them, with no read.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import Connection

TurnCondition = Callable[[Connection, str, str, str], bool]
"""Whether a turn-end job is wanted for (user id, session id, turn id), asked inside the
transaction that ends the turn."""


@dataclass(frozen=True, slots=True)
class WrittenEvent:
    """An event of a turn, as the transaction that wrote it has it."""

    type: str
    payload: Mapping[str, Any]
    meta: Mapping[str, Any]
    image_ids: tuple[str, ...]  # the images its parts reference, as stored blob references


class WrittenTurnCondition(Protocol):
    """A turn condition that can also answer from the turn's events."""

    def __call__(self, conn: Connection, user_id: str, session_id: str, turn_id: str) -> bool:
        """The answer read from the database."""

    def written(self, events: Sequence[WrittenEvent]) -> bool:
        """The same answer from all of the turn's events (no read)."""


def holds(
    condition: TurnCondition,
    conn: Connection,
    key: tuple[str, str, str],
    written: Sequence[WrittenEvent] | None,
) -> bool:
    """Whether ``condition`` holds for the turn ``key`` (user, session, turn id);
    ``written``: the turn's events when this transaction wrote all of them."""
    # getattr rather than isinstance: a runtime protocol check costs more than the
    # answer, and this runs after every append outside a turn.
    answer = getattr(condition, "written", None) if written is not None else None
    if answer is not None and written is not None:
        return bool(answer(written))
    return condition(conn, *key)
