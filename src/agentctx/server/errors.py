"""Error responses: JSON with a stable code, never a stack trace.

``{"error": {"code": "session_not_found", "message": "…", "field": "…"}}``; the code
is the ``code`` of the agentctx error raised, so clients can branch on it.
"""

from __future__ import annotations

import logging
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from agentctx.errors import (
    AgentCtxError,
    BlobTooLarge,
    ConfigError,
    Conflict,
    EngineClosed,
    InvalidInput,
    MissingExtra,
    NotFound,
    RedactionRequired,
    StaleMemory,
    StaleSession,
    StorageError,
    TurnError,
)
from agentctx.search.errors import SearchError
from agentctx.server.auth import Forbidden, Unauthenticated

logger = logging.getLogger("agentctx.server")

# Most specific first: the first class an error is an instance of decides its status.
_STATUS: tuple[tuple[type[AgentCtxError], int], ...] = (
    (Unauthenticated, 401),
    (Forbidden, 403),
    (NotFound, 404),
    (BlobTooLarge, 413),
    (StaleSession, 412),
    (StaleMemory, 412),
    (Conflict, 409),
    (TurnError, 409),
    (InvalidInput, 422),
    (RedactionRequired, 422),
    (ConfigError, 422),
    (SearchError, 502),  # the search provider failed upstream
    (MissingExtra, 501),
    (StorageError, 503),
    (EngineClosed, 503),  # the server is shutting down
)


class SearchNotConfigured(AgentCtxError):
    """The server has no search provider (``search.provider`` is ``none``)."""

    code = "search_not_configured"


class PreconditionRequired(AgentCtxError):
    """A compare-and-set route was called without ``If-Match``."""

    code = "precondition_required"


def status_of(error: AgentCtxError) -> int:
    """The HTTP status an agentctx error maps to."""
    if isinstance(error, PreconditionRequired):
        return 428
    if isinstance(error, SearchNotConfigured):
        return 503
    return next((status for cls, status in _STATUS if isinstance(error, cls)), 400)


def error_body(code: str, message: str, **extra: Any) -> dict[str, Any]:
    """The JSON body of an error response."""
    return {"error": {"code": code, "message": message, **extra}}


def _field(loc: Any) -> str:
    # ("body", "events", 0, "type") -> "events.0.type"; the first element names the
    # request part, which the message already says.
    parts = [str(p) for p in loc]
    if parts and parts[0] in ("body", "query", "path", "header"):
        parts = parts[1:]
    return ".".join(parts) or "body"


def install_error_handlers(app: FastAPI) -> None:
    """Map agentctx errors, validation errors and anything unexpected to JSON."""

    @app.exception_handler(AgentCtxError)
    async def _agentctx_error(request: Request, exc: AgentCtxError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthenticated) else None
        request.state.error_code = exc.code  # for the access audit record
        return JSONResponse(
            error_body(exc.code, str(exc)), status_code=status_of(exc), headers=headers
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        first = errors[0] if errors else {"loc": ("body",), "msg": "invalid request"}
        field = _field(first.get("loc", ()))
        request.state.error_code = "validation_error"
        details = [{"field": _field(e.get("loc", ())), "message": e.get("msg", "")} for e in errors]
        return JSONResponse(
            error_body(
                "validation_error",
                f"{field}: {first.get('msg', 'invalid')}",
                field=field,
                details=details[:20],
            ),
            status_code=422,
        )

    @app.exception_handler(StarletteHTTPException)
    async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        code = {404: "not_found", 405: "method_not_allowed"}.get(exc.status_code, "http_error")
        return JSONResponse(
            error_body(code, str(exc.detail)),
            status_code=exc.status_code,
            headers=getattr(exc, "headers", None),
        )

    @app.exception_handler(Exception)
    async def _unexpected(request: Request, exc: Exception) -> JSONResponse:
        logger.exception("unhandled error on %s %s", request.method, request.url.path)
        return JSONResponse(error_body("internal_error", "internal server error"), status_code=500)
