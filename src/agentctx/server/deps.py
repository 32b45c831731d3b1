"""FastAPI dependencies: the engine, the caller, and the user a request acts for."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from fastapi import Depends, Header, Query, Request, Response
from fastapi.encoders import jsonable_encoder

from agentctx.engine import ContextEngine
from agentctx.server.auth import DEFAULT_TENANT, Authenticator, Principal
from agentctx.server.config import ServerConfig
from agentctx.sessions import Session


def engine_of(request: Request) -> ContextEngine:
    """The engine the app serves."""
    engine: ContextEngine = request.app.state.engine
    return engine


def config_of(request: Request) -> ServerConfig:
    """The server's settings."""
    config: ServerConfig = request.app.state.server_config
    return config


def principal(
    request: Request,
    authorization: Annotated[str | None, Header(include_in_schema=False)] = None,
    x_api_key: Annotated[str | None, Header(include_in_schema=False)] = None,
) -> Principal:
    """The authenticated caller (401 otherwise); remembered for the access audit."""
    authenticator: Authenticator = request.app.state.authenticator
    caller = authenticator.authenticate(authorization, x_api_key)
    request.state.principal = caller
    return caller


Caller = Annotated[Principal, Depends(principal)]
Engine = Annotated[ContextEngine, Depends(engine_of)]
UserParam = Annotated[
    str | None,
    Query(
        description="The user the request acts for; may be left out when the caller "
        "acts for exactly one user.",
        max_length=128,
    ),
]


def reader(request: Request, caller: Caller, user_id: UserParam = None) -> str:
    """The stored id of the user a read acts for (needs the ``read`` scope)."""
    caller.require("read")
    return _remember(request, caller.user(user_id))


def writer(request: Request, caller: Caller, user_id: UserParam = None) -> str:
    """The stored id of the user a write acts for (needs the ``write`` scope)."""
    caller.require("write")
    return _remember(request, caller.user(user_id))


def admin(caller: Caller) -> Principal:
    """An admin caller (403 otherwise)."""
    caller.require("admin")
    return caller


def _remember(request: Request, user_id: str) -> str:
    request.state.user_id = user_id
    return user_id


ReadUser = Annotated[str, Depends(reader)]
WriteUser = Annotated[str, Depends(writer)]
Admin = Annotated[Principal, Depends(admin)]


def load_session(engine: ContextEngine, user_id: str, session_id: str) -> Session:
    """The user's session (``SessionNotFound`` for another user's, like a missing one).

    A read only: the request's access audit record already notes who reached it.
    """
    return engine.get_session(session_id, user_id, record_access=False)


def outward(caller: Principal, value: Any) -> Any:
    """``value`` (a JSON-ready structure) with stored user ids turned into the ids the
    caller knows (only tenants other than the default prefix them)."""
    if caller.tenant == DEFAULT_TENANT:
        return value
    if isinstance(value, dict):
        return {
            k: caller.external(v) if k == "user_id" and isinstance(v, str) else outward(caller, v)
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [outward(caller, v) for v in value]
    return value


def respond(caller: Principal, value: Any, status_code: int = 200, **headers: str) -> Response:
    """A JSON response of an engine record, page or list, in the caller's user ids."""
    body = outward(caller, jsonable_encoder(value))
    return Response(
        orjson.dumps(body),
        status_code=status_code,
        media_type="application/json",
        headers=headers or None,
    )
