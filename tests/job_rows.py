"""Rows of the jobs table as the queue leaves them, for tests that need many at once."""

from __future__ import annotations

from datetime import timedelta

from agentctx.events import utcnow


def job_row(
    turn_id: str,
    *,
    status: str = "done",
    age: timedelta = timedelta(0),
    session_id: str = "s1",
    user_id: str = "u1",
) -> dict[str, object]:
    """A turn-end job of ``status``, due and last updated ``age`` ago."""
    then = utcnow() - age
    return {
        "kind": "turn_end:test",
        "user_id": user_id,
        "session_id": session_id,
        "turn_id": turn_id,
        "payload": {},
        "status": status,
        "attempts": 1,
        "max_attempts": 3,
        "run_after": then - timedelta(seconds=1),
        "created_at": then - timedelta(seconds=1),
        "updated_at": then,
    }
