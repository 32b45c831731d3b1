"""Web research (seed 000 Phase 4): a sub-agent searches and reads in a session of its
own; the parent session gets one tool result with the report and page pointers.

Pages read during a research are offloaded output of its search session:
``GET /v1/sessions/{sub_session_id}/offloaded/{page_id}`` restores them.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response
from pydantic import Field

from agentctx.engine import ContextEngine
from agentctx.search.agent import AGENT_ID
from agentctx.search.report import SearchReport
from agentctx.search.service import SearchService
from agentctx.server.deps import (
    Caller,
    Engine,
    IdPath,
    ReadUser,
    WriteUser,
    load_session,
    respond,
)
from agentctx.server.errors import SearchNotConfigured, error_responses
from agentctx.server.schemas import ENGINE_ID_PATTERN, TEXT_PATTERN, Body
from agentctx.sessions import SessionInfo

router = APIRouter(prefix="/v1", tags=["research"], responses=error_responses(400))


class ResearchRequest(Body):
    """``POST /v1/sessions/{id}/research``."""

    question: str = Field(min_length=1, max_length=4000, pattern=TEXT_PATTERN)
    call_id: str | None = Field(
        default=None,
        max_length=128,
        pattern=ENGINE_ID_PATTERN,
        description="The parent's tool call this answers; recorded first when absent.",
    )


def _service(engine: ContextEngine) -> SearchService:
    if engine.search is None:
        raise SearchNotConfigured("no search provider is configured (search.provider)")
    return engine.search


# 503 also when no search provider is configured (search_not_configured); 502 when it
# failed upstream.
_UNCONFIGURED: dict[int | str, dict[str, Any]] = error_responses(409, 501, 502)


@router.post(
    "/sessions/{session_id}/research", response_model=SearchReport, responses=_UNCONFIGURED
)
def research(
    session_id: IdPath, body: ResearchRequest, user_id: WriteUser, engine: Engine, caller: Caller
) -> Response:
    """Research ``question`` for the session; returns the full report (the session gets
    the short one as the tool call's result)."""
    session = load_session(engine, user_id, session_id)
    service = _service(engine)
    return respond(caller, service.research(session, body.question, call_id=body.call_id))


@router.get("/sessions/{session_id}/research", response_model=list[SessionInfo])
def researches(
    session_id: IdPath,
    user_id: ReadUser,
    engine: Engine,
    caller: Caller,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
) -> Response:
    """The search sessions started for this session, oldest first."""
    load_session(engine, user_id, session_id)
    found: list[SessionInfo] = []
    cursor = None
    while len(found) < limit:
        page = engine.list_sessions(user_id, agent_id=AGENT_ID, limit=1000, cursor=cursor)
        found += [s for s in page.items if s.meta.get("parent_session_id") == session_id]
        cursor = page.next_cursor
        if cursor is None:
            break
    return respond(caller, found[:limit])


@router.get("/research/{sub_session_id}", response_model=SearchReport, responses=_UNCONFIGURED)
def report(sub_session_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """The full report of a finished research: answer, confidence, sources, iterations."""
    load_session(engine, user_id, sub_session_id)
    return respond(caller, _service(engine).report(user_id, sub_session_id))
