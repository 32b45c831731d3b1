"""The ``hitl`` job's turn-end condition: which ended turns could fire a trigger."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, text

from agentctx import jsonvalue
from agentctx.events import EventType
from agentctx.sessions.turn_end import WrittenEvent

_MENTION = '"confidence"'
_MAY_NEED_HUMAN_TYPES = frozenset({EventType.ERROR.value, EventType.TOOL_RESULT.value})


class TurnMayNeedHuman:
    """The turn-end condition of the ``hitl`` job: the turn has an error or a tool
    result, or an event that mentions a confidence. Other turns cannot fire a trigger
    (they are still read by the next evaluation, so skipping them loses nothing)."""

    def __call__(self, conn: Connection, user_id: str, session_id: str, turn_id: str) -> bool:
        """The answer read from the turn's stored events."""
        # Spelled out for SQLite's sake: with the OR of LIKEs its planner walks the
        # session's primary key, every event of the session on each turn end (quadratic
        # over a long session), unless told to use the turn index.
        hint = (
            " INDEXED BY ix_events_user_id_session_id_turn_id"
            if conn.dialect.name == "sqlite"
            else ""
        )
        query = text(
            f"SELECT seq FROM events{hint} WHERE user_id = :user AND session_id = :session "
            "AND turn_id = :turn AND type != :hitl AND (type IN (:error, :result) "
            "OR CAST(payload AS TEXT) LIKE :mention OR CAST(meta AS TEXT) LIKE :mention) LIMIT 1"
        )
        found = conn.execute(
            query,
            {
                "user": user_id,
                "session": session_id,
                "turn": turn_id,
                "hitl": EventType.HITL.value,
                "error": EventType.ERROR.value,
                "result": EventType.TOOL_RESULT.value,
                "mention": f"%{_MENTION}%",
            },
        ).first()
        return found is not None

    def written(self, events: Sequence[WrittenEvent]) -> bool:
        """The same answer from the events a transaction wrote as the whole turn. The
        mention is matched regardless of case, as SQLite's ``LIKE`` does (PostgreSQL's
        is case-sensitive; a turn let through needlessly costs one job that finds
        nothing)."""
        return any(
            event.type != EventType.HITL.value
            and (
                event.type in _MAY_NEED_HUMAN_TYPES
                or _MENTION in jsonvalue.dumps(event.payload).lower()
                or _MENTION in jsonvalue.dumps(event.meta).lower()
            )
            for event in events
        )


turn_may_need_human = TurnMayNeedHuman()
"""The ``hitl`` job's turn-end condition (see :class:`TurnMayNeedHuman`)."""
