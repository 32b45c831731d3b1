"""Context windows and what compaction made of a session: summaries, topics, images."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Query, Response

from agentctx.errors import InvalidInput
from agentctx.server.deps import (
    Caller,
    Config,
    Engine,
    IdPath,
    ReadUser,
    load_session,
    respond,
)
from agentctx.server.errors import error_responses
from agentctx.server.schemas import MAX_SEQ, ContextBody, ContextRequest


class TokenizerNotAllowed(InvalidInput):
    """The request names a tokenizer the server does not offer."""

    code = "tokenizer_not_allowed"


def check_tokenizer(config: dict[str, Any] | None, allowed: list[str], own: str) -> None:
    """Refuse a ``config.tokenizer`` the server does not list: a client picks among the
    operator's tokenizers by name and never names a file (``hf:<path>`` would let it
    probe the server's file system). The message lists the built-in names only."""
    if not config or "tokenizer" not in config:
        return
    name = config["tokenizer"]
    if isinstance(name, str) and (name == own or name in allowed):
        return
    offered = ", ".join(n for n in allowed if not n.startswith("hf:"))
    raise TokenizerNotAllowed(f"config.tokenizer must be one of the server's tokenizers: {offered}")


router = APIRouter(
    prefix="/v1/sessions/{session_id}", tags=["context"], responses=error_responses(400)
)


@router.post("/context", response_model=ContextBody, responses=error_responses(409, 501))
def build_context(
    session_id: IdPath,
    body: ContextRequest,
    user_id: ReadUser,
    engine: Engine,
    caller: Caller,
    server: Config,
) -> Response:
    """The context window for the next model call, within ``budget`` tokens.

    ``config.tokenizer`` names one of the server's tokenizers (``tokenizers`` in the
    server settings; by default the built-in ones), never a file."""
    check_tokenizer(body.config, server.tokenizers, engine.settings.context.tokenizer)
    session = load_session(engine, user_id, session_id)
    window = session.build_context(
        body.query,
        body.budget,
        strategy=body.strategy,
        budget_split=body.budget_split.shares() if body.budget_split is not None else None,
        system_prompt=body.system_prompt,
        config=body.config,
        restore_images=body.restore_images,
        turn_id=body.turn_id,
    )
    return respond(caller, window.body(body.format))


@router.get("/summaries", response_model=list[dict[str, Any]])
def summaries(session_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """The session's thread summaries (every version), newest first."""
    return respond(caller, load_session(engine, user_id, session_id).summaries())


@router.get("/topics", response_model=list[dict[str, Any]])
def topics(session_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """The session's archived topics, oldest first, with the seq range each covers."""
    return respond(caller, load_session(engine, user_id, session_id).topics())


@router.get("/folds", response_model=list[dict[str, Any]])
def folds(session_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """The session's fold summaries at every level."""
    return respond(caller, load_session(engine, user_id, session_id).folds())


@router.get("/images", response_model=list[dict[str, Any]])
def images(session_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """Every image of the session with its frame and whether windows show a placeholder."""
    return respond(caller, load_session(engine, user_id, session_id).images())


@router.get(
    "/offloaded/{offloaded_id}",
    response_class=Response,
    responses={200: {"content": {"text/plain": {}}}},
)
def read_offloaded(
    session_id: IdPath,
    offloaded_id: IdPath,
    user_id: ReadUser,
    engine: Engine,
    offset: Annotated[int, Query(ge=0, le=MAX_SEQ)] = 0,
    max_tokens: Annotated[int | None, Query(ge=1, le=1_000_000)] = None,
) -> Response:
    """The original of offloaded tool output (``[tool_output: out_…]``), from ``offset``."""
    session = load_session(engine, user_id, session_id)
    text = session.read_offloaded(offloaded_id, offset=offset, max_tokens=max_tokens)
    return Response(text, media_type="text/plain; charset=utf-8")
