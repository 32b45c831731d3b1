"""Error responses: JSON with a stable code, never a stack trace.

``{"error": {"code": "session_not_found", "message": "…", "field": "…"}}``; the code
is the ``code`` of the agentctx error raised, so clients can branch on it.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel, Field
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

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


class ErrorDetail(BaseModel):
    """One failed field of a validation error."""

    field: str
    message: str


class ErrorInfo(BaseModel):
    """What went wrong: ``code`` is stable, ``message`` is for people."""

    code: str = Field(description="Stable: clients branch on it (e.g. session_not_found).")
    message: str
    field: str | None = Field(default=None, description="The request field at fault.")
    details: list[ErrorDetail] | None = Field(
        default=None, description="validation_error: every failed field (at most 20)."
    )


class ErrorBody(BaseModel):
    """Every error response's body."""

    error: ErrorInfo


_DESCRIPTIONS: dict[int, str] = {
    400: "The request is not acceptable.",
    401: "No valid API key or bearer token (unauthenticated).",
    403: "The caller lacks the scope the route needs (forbidden).",
    404: "Not found, or not the caller's: both look alike.",
    409: "Conflicts with the stored state (e.g. an ended turn, a duplicate id).",
    412: "The If-Match version is stale (stale_session, stale_memory).",
    413: "The request body is too large (body_too_large, blob_too_large).",
    422: "The request is malformed (validation_error, invalid_input, config_error…).",
    428: "A compare-and-set write without If-Match (precondition_required).",
    500: "An unexpected server error (internal_error).",
    501: "An optional extra is not installed (missing_extra).",
    502: "The search provider failed upstream.",
    503: "The database is unavailable, or the feature is not configured.",
}

# What any authenticated route may answer, whatever it does.
COMMON_STATUSES = (401, 403, 404, 413, 422, 500, 503)


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """``responses=`` for a route: the common statuses plus ``statuses``, each with the
    error body's schema, so the OpenAPI document names every status a route answers."""
    return {
        status: {"model": ErrorBody, "description": _DESCRIPTIONS[status]}
        for status in sorted({*COMMON_STATUSES, *statuses})
    }


def links(
    status: int, parameter: str, field: str, targets: dict[str, tuple[str, str]]
) -> dict[int | str, dict[str, Any]]:
    """``responses=`` entry for OpenAPI links: the ``field`` of a ``status`` response
    names ``parameter`` of each target (name -> (method, path template)), so clients and
    stateful tests know what an id created here opens."""

    def ref(method: str, path: str) -> str:
        pointer = path.replace("~", "~0").replace("/", "~1")
        return f"#/paths/{pointer}/{method}"

    return {
        status: {
            "links": {
                name: {
                    "operationRef": ref(method, path),
                    "parameters": {parameter: f"$response.body#/{field}"},
                }
                for name, (method, path) in targets.items()
            }
        }
    }


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


def allowed_methods(request: Request) -> list[str]:
    """Every method some route serves at this path (Starlette's 405 names only the first
    matching route's, when several routes share a path with different methods)."""
    methods: set[str] = set()
    for route in request.app.router.routes:
        match, _ = route.matches(request.scope)
        if match != Match.NONE:
            methods |= set(getattr(route, "methods", None) or ())
    return sorted(methods)


def _missing_if_match(error: Any) -> bool:
    loc = tuple(str(p).lower() for p in error.get("loc", ()))
    return error.get("type") == "missing" and loc == ("header", "if-match")


def install_error_handlers(app: FastAPI) -> None:
    """Map agentctx errors, validation errors and anything unexpected to JSON."""

    @app.exception_handler(AgentCtxError)
    async def _agentctx_error(request: Request, exc: AgentCtxError) -> JSONResponse:
        headers = {"WWW-Authenticate": "Bearer"} if isinstance(exc, Unauthenticated) else None
        request.state.error_code = exc.code  # for the access audit record
        # An error about one request field (user_required: user_id) names it.
        field = getattr(exc, "field", None)
        extra = {"field": field} if isinstance(field, str) else {}
        return JSONResponse(
            error_body(exc.code, str(exc), **extra), status_code=status_of(exc), headers=headers
        )

    @app.exception_handler(RequestValidationError)
    async def _validation_error(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = exc.errors()
        if errors and all(_missing_if_match(e) for e in errors):
            # A compare-and-set write without If-Match: 428, not a malformed request.
            request.state.error_code = PreconditionRequired.code
            return JSONResponse(
                error_body(
                    PreconditionRequired.code,
                    'this write is a compare-and-set: send If-Match: "<version>"',
                ),
                status_code=428,
            )
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
        headers = dict(getattr(exc, "headers", None) or {})
        if exc.status_code == 405:
            headers["Allow"] = ", ".join(allowed_methods(request))
        return JSONResponse(
            error_body(code, str(exc.detail)), status_code=exc.status_code, headers=headers or None
        )


INTERNAL_ERROR = error_body("internal_error", "internal server error")


def log_unexpected(exc: BaseException, method: str, route: str) -> None:
    """Log an unexpected error once, safely: its type, the route's template and the
    traceback's frames (file, line, function). Never the exception's message, its
    chained causes' messages or local values: any of them may hold request data
    (a user's text, an id, a query parameter)."""
    frames = traceback.extract_tb(exc.__traceback__)
    where = " < ".join(f"{f.filename}:{f.lineno} in {f.name}" for f in reversed(frames))
    causes: list[str] = []
    cause = exc.__cause__ or exc.__context__
    while cause is not None and len(causes) < 5:
        causes.append(type(cause).__name__)
        cause = cause.__cause__ or cause.__context__
    logger.error(
        "unhandled %s on %s %s%s; at %s",
        type(exc).__name__,
        method,
        route,
        f" (caused by {' < '.join(causes)})" if causes else "",
        where or "?",
    )
