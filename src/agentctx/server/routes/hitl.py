"""Error recovery and human in the loop (seed 003 8.1.5): which sessions wait for a
human, resolving them, and the minimal reproducible package of a failing turn.

``error`` and ``hitl`` events are recorded like any event (``POST …/events``); the
triggers run after each turn that could fire one.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Response
from pydantic import Field

from agentctx.errors import Conflict
from agentctx.hitl import HitlFlag, ReproPackage
from agentctx.server.deps import (
    Caller,
    Engine,
    IdPath,
    IdQuery,
    ReadUser,
    WriteUser,
    load_session,
    respond,
)
from agentctx.server.errors import error_responses
from agentctx.server.schemas import Body

router = APIRouter(prefix="/v1", tags=["hitl"], responses=error_responses(400, 409))


class HitlNotNeeded(Conflict):
    """Resolving a session no trigger flagged."""

    code = "hitl_not_needed"


class Resolution(Body):
    """``POST /v1/sessions/{id}/hitl/resolve``."""

    note: str | None = Field(default=None, max_length=10_000)


@router.get("/hitl", response_model=list[HitlFlag])
def needs_human(
    user_id: ReadUser,
    engine: Engine,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    """The user's live sessions waiting for a human, oldest flag first."""
    return respond(caller, engine.hitl.needs_human(user_id, limit=limit))


@router.get("/sessions/{session_id}/hitl", response_model=HitlFlag)
def hitl_status(session_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """Evaluate the triggers over what is new and return the session's flag."""
    load_session(engine, user_id, session_id)
    return respond(caller, engine.hitl.evaluate(user_id, session_id))


@router.post("/sessions/{session_id}/hitl/resolve", response_model=HitlFlag)
def resolve(
    session_id: IdPath, body: Resolution, user_id: WriteUser, engine: Engine, caller: Caller
) -> Response:
    """A human dealt with the session: record it and clear the flag (409
    ``hitl_not_needed`` when it was never flagged)."""
    load_session(engine, user_id, session_id)
    flag = engine.hitl.flag(user_id, session_id)
    if flag is None or flag.status not in ("needed", "resolved"):
        raise HitlNotNeeded(f"session {session_id!r} does not need a human")
    return respond(caller, engine.hitl.resolve(user_id, session_id, body.note))


@router.get("/sessions/{session_id}/repro", response_model=ReproPackage)
def repro(
    session_id: IdPath,
    user_id: ReadUser,
    engine: Engine,
    caller: Caller,
    turn_id: IdQuery = None,
) -> Response:
    """The failing turn's redacted events, the window sent for it, and the
    configuration without secrets (default turn: the latest error or hitl event's)."""
    load_session(engine, user_id, session_id)
    return respond(caller, engine.hitl.repro(user_id, session_id, turn_id))
