"""Context windows and what compaction made of a session: summaries, topics, images."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from agentctx.server.deps import Caller, Engine, ReadUser, load_session, respond
from agentctx.server.schemas import ContextBody, ContextRequest

router = APIRouter(prefix="/v1/sessions/{session_id}", tags=["context"])


@router.post("/context", response_model=ContextBody)
def build_context(
    session_id: str, body: ContextRequest, user_id: ReadUser, engine: Engine, caller: Caller
) -> Response:
    """The context window for the next model call, within ``budget`` tokens."""
    session = load_session(engine, user_id, session_id)
    window = session.build_context(
        body.query,
        body.budget,
        strategy=body.strategy,
        budget_split=body.budget_split,
        system_prompt=body.system_prompt,
        config=body.config,
        restore_images=body.restore_images,
        turn_id=body.turn_id,
    )
    return respond(caller, window.body(body.format))


@router.get("/summaries", response_model=list[dict[str, Any]])
def summaries(session_id: str, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """The session's thread summaries (every version), newest first."""
    return respond(caller, load_session(engine, user_id, session_id).summaries())


@router.get("/topics", response_model=list[dict[str, Any]])
def topics(session_id: str, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """The session's archived topics, oldest first, with the seq range each covers."""
    return respond(caller, load_session(engine, user_id, session_id).topics())


@router.get("/folds", response_model=list[dict[str, Any]])
def folds(session_id: str, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """The session's fold summaries at every level."""
    return respond(caller, load_session(engine, user_id, session_id).folds())


@router.get("/images", response_model=list[dict[str, Any]])
def images(session_id: str, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """Every image of the session with its frame and whether windows show a placeholder."""
    return respond(caller, load_session(engine, user_id, session_id).images())


@router.get(
    "/offloaded/{offloaded_id}",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}}},
)
def read_offloaded(
    session_id: str,
    offloaded_id: str,
    user_id: ReadUser,
    engine: Engine,
    offset: Annotated[int, Query(ge=0)] = 0,
    max_tokens: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
) -> Response:
    """The original of offloaded tool output (``[tool_output: out_…]``), from ``offset``."""
    session = load_session(engine, user_id, session_id)
    text = session.read_offloaded(offloaded_id, offset=offset, max_tokens=max_tokens)
    return Response(text, media_type="text/plain; charset=utf-8")
