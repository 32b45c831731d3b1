"""Helpers shared by the human-in-the-loop tests."""

from __future__ import annotations

from agentctx import ContextEngine
from agentctx.events import Event, EventType
from agentctx.hitl import HitlFlag, HitlService
from agentctx.sessions.recording import EventRecorder
from agentctx.sessions.session import Session


def call_tool(recorder: EventRecorder, tool: str, *, ok: bool, image: bytes | None = None) -> Event:
    """Record a call of ``tool`` and its result; returns the result."""
    call = recorder.add_tool_call(tool, {"target": "#submit"})
    return recorder.add_tool_result(
        call.call_id,
        content="done" if ok else f"{tool}: element not found",
        is_error=not ok,
        images=[image] if image is not None else None,
    )


def hitl_events(session: Session) -> list[Event]:
    """The session's hitl events, in seq order."""
    return session.events(types=[EventType.HITL])


def needed_events(session: Session) -> list[Event]:
    """The hitl events that marked the session."""
    return [e for e in hitl_events(session) if e.payload.get("status") == "needed"]


def count_rows(engine: ContextEngine, table: str, user_id: str) -> int:
    """Rows of ``table`` that belong to ``user_id``."""
    from sqlalchemy import text

    with engine.db.read() as conn:
        query = text(f"SELECT COUNT(*) FROM {table} WHERE user_id = :u")
        return int(conn.execute(query, {"u": user_id}).scalar_one())


def flag_of(hitl: HitlService, user_id: str, session_id: str) -> HitlFlag:
    """The session's flag, which must exist (the session was evaluated)."""
    flag = hitl.flag(user_id, session_id)
    assert flag is not None
    return flag
