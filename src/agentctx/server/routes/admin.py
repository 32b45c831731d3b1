"""Admin routes (``admin`` scope): verify any session, sweep, delete a user's data, keys.

Admins act within their tenant: user ids here are the tenant's, as everywhere else.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query, Request, Response

from agentctx.ids import USER_ID_MAX_LENGTH, USER_ID_PATTERN
from agentctx.server.auth import ApiKey, ApiKeyStore
from agentctx.server.deps import Admin, Engine, IdPath, UserIdPath, respond
from agentctx.server.errors import error_responses
from agentctx.server.schemas import KeyCreate
from agentctx.sessions import DeleteReport, SweepReport, VerifyReport

router = APIRouter(prefix="/v1/admin", tags=["admin"], responses=error_responses(400))


def _keys(request: Request) -> ApiKeyStore:
    store: ApiKeyStore = request.app.state.authenticator.keys
    return store


@router.get("/sessions/{session_id}/verify", response_model=VerifyReport)
def verify(
    request: Request,
    session_id: IdPath,
    caller: Admin,
    engine: Engine,
    user_id: Annotated[
        str, Query(min_length=1, max_length=USER_ID_MAX_LENGTH, pattern=USER_ID_PATTERN)
    ],
) -> Response:
    """Check a session's hash chain (any user of the tenant)."""
    stored = caller.user(user_id)
    request.state.user_id = stored
    return respond(caller, engine.verify(session_id, stored))


@router.post("/sweep", response_model=SweepReport)
def sweep(caller: Admin, engine: Engine) -> Response:
    """Expire sessions past their TTL, close abandoned turns, trim the audit log."""
    return respond(caller, engine.sweep())


@router.delete("/users/{user_id}", response_model=DeleteReport)
def delete_user_data(
    request: Request, user_id: UserIdPath, caller: Admin, engine: Engine
) -> Response:
    """Delete everything stored about a user: sessions, events, blobs, memories."""
    stored = caller.user(user_id)
    request.state.user_id = stored
    return respond(caller, engine.delete_user_data(stored))


@router.get("/keys", response_model=list[ApiKey])
def list_keys(request: Request, caller: Admin) -> Response:
    """The tenant's active API keys (never their secrets)."""
    keys = [k for k in _keys(request).list() if k.tenant == caller.tenant]
    return respond(caller, keys)


@router.post("/keys", status_code=201)
def create_key(request: Request, body: KeyCreate, caller: Admin) -> Response:
    """Issue a key in the caller's tenant; the token is in this response only."""
    key, token = _keys(request).create(
        body.users, body.scopes, tenant=caller.tenant, label=body.label
    )
    return respond(caller, {"key": key, "token": token}, 201)


@router.delete("/keys/{key_id}", response_model=ApiKey)
def revoke_key(request: Request, key_id: IdPath, caller: Admin) -> Response:
    """Revoke a key of the tenant; it stops working on every replica at once."""
    store = _keys(request)
    owned = {k.key_id for k in store.list(include_revoked=True) if k.tenant == caller.tenant}
    if key_id not in owned:
        from agentctx.server.auth.keys import KeyNotFound  # noqa: PLC0415

        raise KeyNotFound(f"no API key {key_id!r}")
    return respond(caller, store.revoke(key_id))
