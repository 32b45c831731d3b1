"""Sessions: create, get, list, delete, and their state (compare-and-set by ETag)."""

from __future__ import annotations

from datetime import timedelta
from typing import Annotated

from fastapi import APIRouter, Header, Query, Response

from agentctx.errors import InvalidInput
from agentctx.server.deps import (
    QUERY_TEXT_PATTERN,
    AgentIdQuery,
    Caller,
    Engine,
    IdPath,
    ReadUser,
    WriteUser,
    load_session,
    respond,
)
from agentctx.server.errors import PreconditionRequired, error_responses, links
from agentctx.server.schemas import ID_PATTERN, Me, SessionCreate, StateBody, StateUpdate
from agentctx.sessions import DeleteReport, Page, SessionInfo, TurnInfo, VerifyReport

router = APIRouter(prefix="/v1/sessions", tags=["sessions"], responses=error_responses(400))
me_router = APIRouter(prefix="/v1", tags=["sessions"], responses=error_responses())


@me_router.get("/me", response_model=Me)
def me(caller: Caller) -> Me:
    """Who the caller is: tenant, users and scopes (what the inspector shows)."""
    return Me(
        subject=caller.subject,
        tenant=caller.tenant,
        users=sorted(caller.users),
        scopes=sorted(caller.scopes),
        is_admin=caller.is_admin,
    )


SessionId = Annotated[str, "session id"]


# An ETag as this API issues it ("3"), weak or bare forms included.
# Versions are stored as 32-bit integers: at most 9 digits.
IF_MATCH_PATTERN = r'^(W/)?"?[0-9]{1,9}"?$'


def etag(version: int) -> str:
    """The ETag of a state version."""
    return f'"{version}"'


def parse_if_match(value: str | None) -> int:
    """The state version an ``If-Match`` header names (428 when absent)."""
    if value is None:
        raise PreconditionRequired('this write is a compare-and-set: send If-Match: "<version>"')
    tag = value.strip().removeprefix("W/").strip('"')
    if not (tag.isascii() and tag.isdigit() and len(tag) <= 9):
        raise InvalidInput(f'If-Match must name a state version like "3", got {value!r}')
    return int(tag)


_SESSION = "/v1/sessions/{session_id}"
_OPENS = links(
    201,
    "session_id",
    "session_id",
    {
        "GetSession": ("get", _SESSION),
        "GetState": ("get", f"{_SESSION}/state"),
        "UpdateState": ("patch", f"{_SESSION}/state"),
        "AppendEvent": ("post", f"{_SESSION}/events"),
        "AppendEvents": ("post", f"{_SESSION}/events/batch"),
        "ListEvents": ("get", f"{_SESSION}/events"),
        "BeginTurn": ("post", f"{_SESSION}/turns"),
        "BuildContext": ("post", f"{_SESSION}/context"),
        "VerifySession": ("get", f"{_SESSION}/verify"),
        "DeleteSession": ("delete", _SESSION),
    },
)


@router.post(
    "",
    status_code=201,
    response_model=SessionInfo,
    responses={**error_responses(409), **_OPENS},
)
def create_session(
    body: SessionCreate, user_id: WriteUser, engine: Engine, caller: Caller
) -> Response:
    """Create a session for the user."""
    session = engine.create_session(
        user_id,
        body.agent_id,
        session_id=body.session_id,
        state=body.state,
        ttl=timedelta(seconds=body.ttl_seconds) if body.ttl_seconds is not None else None,
        config=body.config,
        metadata=body.metadata,
    )
    info = session.info
    return respond(caller, info, 201, ETag=etag(info.state_version))


@router.get("", response_model=Page[SessionInfo])
def list_sessions(
    user_id: ReadUser,
    engine: Engine,
    caller: Caller,
    agent_id: AgentIdQuery = None,
    search: Annotated[
        str | None,
        Query(max_length=128, pattern=QUERY_TEXT_PATTERN, description="Part of an id."),
    ] = None,
    limit: Annotated[int, Query(ge=1, le=1000)] = 50,
    cursor: Annotated[
        str | None,
        Query(
            min_length=1, max_length=512, pattern=r"^[A-Za-z0-9_-]+$", description="next_cursor."
        ),
    ] = None,
) -> Response:
    """A page of the user's live sessions, oldest first."""
    page = engine.list_sessions(
        user_id, agent_id=agent_id, limit=limit, cursor=cursor, search=search
    )
    return respond(caller, page)


@router.get("/{session_id}", response_model=SessionInfo)
def get_session(session_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """One session (404 for another user's, exactly as for a missing one)."""
    info = load_session(engine, user_id, session_id).info
    return respond(caller, info, ETag=etag(info.state_version))


@router.delete("/{session_id}", response_model=DeleteReport, responses=error_responses(409))
def delete_session(
    session_id: IdPath, user_id: WriteUser, engine: Engine, caller: Caller
) -> Response:
    """Delete the session and everything derived from it."""
    load_session(engine, user_id, session_id)
    return respond(caller, engine.delete_session(session_id, user_id))


@router.get("/{session_id}/state", response_model=StateBody)
def get_state(session_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """The session state; its ETag is the version a change must name in If-Match."""
    info = load_session(engine, user_id, session_id).info
    body = StateBody(state=info.state, state_version=info.state_version)
    return respond(caller, body, ETag=etag(info.state_version))


@router.patch(
    "/{session_id}/state",
    response_model=StateBody,
    responses=error_responses(409, 412, 428),
)
def update_state(
    session_id: IdPath,
    body: StateUpdate,
    user_id: WriteUser,
    engine: Engine,
    caller: Caller,
    if_match: Annotated[
        str,
        Header(
            description='"<state_version>" (428 precondition_required without it)',
            max_length=32,
            pattern=IF_MATCH_PATTERN,
        ),
    ],
) -> Response:
    """Compare-and-set the state: 412 ``stale_session`` when another write got there first."""
    expected = parse_if_match(if_match)
    session = load_session(engine, user_id, session_id)
    state = session.update_state(
        body.changes, expected_version=expected, replace=body.replace, turn_id=body.turn_id
    )
    version = session.state_version
    return respond(caller, StateBody(state=state, state_version=version), ETag=etag(version))


@router.get("/{session_id}/verify", response_model=VerifyReport)
def verify_session(
    session_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller
) -> Response:
    """Check the session's hash chain."""
    return respond(caller, engine.verify(session_id, user_id))


@router.get("/{session_id}/turns", response_model=list[TurnInfo])
def list_turns(session_id: IdPath, user_id: ReadUser, engine: Engine, caller: Caller) -> Response:
    """The session's turns, oldest first."""
    return respond(caller, load_session(engine, user_id, session_id).turns())


__all__ = ["ID_PATTERN", "IF_MATCH_PATTERN", "etag", "parse_if_match", "router"]
