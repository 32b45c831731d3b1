"""FastAPI dependencies: the engine, the caller, and the user a request acts for."""

from __future__ import annotations

from types import UnionType
from typing import Annotated, Any, Union, get_args, get_origin

import orjson
from fastapi import Depends, Path, Query, Request, Response
from fastapi.dependencies.models import Dependant
from fastapi.encoders import jsonable_encoder
from fastapi.routing import APIRoute
from fastapi.security import APIKeyHeader, HTTPAuthorizationCredentials, HTTPBearer

from agentctx.engine import ContextEngine
from agentctx.errors import InvalidInput
from agentctx.ids import ID_PATTERN, USER_ID_MAX_LENGTH, USER_ID_PATTERN
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


# Ids in paths and queries: what the engine's ids look like (UUIDv7, img_…, out_…, hex
# hashes) and what clients may choose for a session id. Checked here, so a path id too
# long or with a control character is a 422 before it reaches storage, and stated in
# the OpenAPI schema.
PATH_ID_PATTERN = r"^[A-Za-z0-9][A-Za-z0-9._:@+=-]{0,127}$"
# Free text in a query parameter (an agent id, a cursor): printable, no control characters.
QUERY_TEXT_PATTERN = r"^[^\x00-\x1f\x7f]*$"

IdPath = Annotated[
    str, Path(min_length=1, max_length=128, pattern=PATH_ID_PATTERN, description="An id.")
]
UserIdPath = Annotated[
    str,
    Path(
        min_length=1,
        max_length=USER_ID_MAX_LENGTH,
        pattern=USER_ID_PATTERN,
        description="A user id of the caller's tenant (no '/').",
    ),
]
IdQuery = Annotated[str | None, Query(min_length=1, max_length=128, pattern=PATH_ID_PATTERN)]
AgentIdQuery = Annotated[str | None, Query(min_length=1, max_length=128, pattern=ID_PATTERN)]

# For the OpenAPI schema (and the clients generated from it): how callers sign in.
_bearer = HTTPBearer(auto_error=False, description="An API key (actx_…) or a JWT.")
_api_key = APIKeyHeader(name="X-API-Key", auto_error=False, description="An API key.")


def principal(
    request: Request,
    _bearer_token: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
    _api_key_header: Annotated[str | None, Depends(_api_key)],
) -> Principal:
    """The authenticated caller (401 otherwise); remembered for the access audit."""
    authenticator: Authenticator = request.app.state.authenticator
    authorization = request.headers.get("authorization")
    x_api_key = request.headers.get("x-api-key")
    caller = authenticator.authenticate(authorization, x_api_key)
    request.state.principal = caller
    return caller


Caller = Annotated[Principal, Depends(principal)]
Config = Annotated[ServerConfig, Depends(config_of)]
Engine = Annotated[ContextEngine, Depends(engine_of)]
UserParam = Annotated[
    str | None,
    Query(
        description="The user the request acts for; may be left out when the caller "
        "acts for exactly one user.",
        min_length=1,
        max_length=USER_ID_MAX_LENGTH,
        pattern=USER_ID_PATTERN,
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


def single_valued_query(request: Request) -> None:
    """Refuse a query parameter given twice unless the route takes a list of it.

    Otherwise the framework silently keeps the last value (``?user_id=a&user_id=b``
    acts for ``b``), which is how parameter pollution slips past a check of the first.
    """
    names = [name for name, _ in request.query_params.multi_items()]
    if len(names) == len(set(names)):
        return
    route = request.scope.get("route")
    lists = _list_parameters(route) if isinstance(route, APIRoute) else frozenset()
    for name in names:
        if names.count(name) > 1 and name not in lists:
            raise InvalidInput(f"query parameter {name!r} may be given once")


_LISTS: dict[int, frozenset[str]] = {}


def _list_parameters(route: APIRoute) -> frozenset[str]:
    found = _LISTS.get(id(route))
    if found is None:
        found = frozenset(_list_query_names(route.dependant))
        _LISTS[id(route)] = found
    return found


def _list_query_names(dependant: Dependant) -> set[str]:
    names = {p.alias for p in dependant.query_params if _is_list(p.field_info.annotation)}
    for sub in dependant.dependencies:
        names |= _list_query_names(sub)
    return names


def _is_list(annotation: Any) -> bool:
    origin = get_origin(annotation)
    if origin in (list, tuple, set, frozenset):
        return True
    return origin in (Union, UnionType) and any(_is_list(arg) for arg in get_args(annotation))
