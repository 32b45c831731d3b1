"""ASGI middleware: body size limit, Prometheus metrics, the access audit and log, and
the last resort for unexpected errors.

Pure ASGI (not ``BaseHTTPMiddleware``) so streamed bodies are counted as they arrive
and responses are not buffered.

What the access log and audit record say about a request is its method, its route's
template (``/v1/sessions/{session_id}/events``), its status and duration: never the
raw path (ids), nor the query string (searches carry the user's text).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

import anyio
import orjson
from prometheus_client import CollectorRegistry, Counter, Histogram

from agentctx.errors import StorageError
from agentctx.server.errors import INTERNAL_ERROR, error_body, log_unexpected
from agentctx.sessions.audit import AuditLog, AuditRecord

access_logger = logging.getLogger("agentctx.server.access")


class _DropRawAccessLog(logging.Filter):
    """Drops every record of uvicorn's access log: it holds the raw path and query."""

    def filter(self, record: logging.LogRecord) -> bool:
        return False


def silence_raw_access_log() -> None:
    """Keep uvicorn's access log (``uvicorn.access``) silent, whatever handlers a
    logging configuration gives it: agentctx's access log replaces it. (uvicorn's
    ``access_log=False`` only removes its handlers, and logs again once any is added.)"""
    logger = logging.getLogger("uvicorn.access")
    if not any(isinstance(f, _DropRawAccessLog) for f in logger.filters):
        logger.addFilter(_DropRawAccessLog())


Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Routes that are not worth an audit record each: probes and metrics scrapes.
_UNAUDITED = ("/healthz", "/readyz", "/metrics")


def route_template(scope: Scope) -> str:
    """The matched route's path template (``/v1/sessions/{session_id}``), else ``unmatched``."""
    route = scope.get("route")
    path = getattr(route, "path", None)
    return path if isinstance(path, str) else "unmatched"


class CatchErrors:
    """The last resort: an exception no handler mapped becomes a JSON 500, logged once
    (type, route template, frames; see ``log_unexpected``), and the connection stays
    usable.

    It sits inside every other middleware and swallows the exception once it answered:
    Starlette's own last resort (an ``exception_handler(Exception)`` included) answers
    and then re-raises, which makes the server log the traceback again, with the
    exception's message, and drop the client's keep-alive connection.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def tracked(message: Message) -> None:
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:  # the last resort: anything no handler mapped
            log_unexpected(exc, scope["method"], route_template(scope))
            scope.setdefault("state", {})["error_code"] = "internal_error"
            if not started:
                await _send_json(send, 500, INTERNAL_ERROR)
            # else: the response is cut short; returning without finishing it makes the
            # server close this connection, which is all that is left to do.


class BodyLimit:
    """Refuse bodies over ``max_bytes`` with 413: by Content-Length before reading, and
    by counting while reading when the length is not declared (chunked)."""

    def __init__(self, app: ASGIApp, max_bytes: int) -> None:
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _header(scope, b"content-length")
        if declared is not None and declared.isdigit():
            if int(declared) > self.max_bytes:
                await _send_json(send, 413, error_body("body_too_large", self._message()))
                return
            await self.app(scope, receive, send)  # the server enforces a declared length
            return
        # No declared length (chunked): read it here, up to the limit, then hand it on.
        # Routes parse whole JSON bodies anyway, so buffering costs nothing extra.
        chunks: list[bytes] = []
        seen = 0
        while True:
            message = await receive()
            if message["type"] != "http.request":
                await self.app(scope, _replay([message]), send)
                return
            chunk = message.get("body", b"")
            seen += len(chunk)
            if seen > self.max_bytes:
                await _send_json(send, 413, error_body("body_too_large", self._message()))
                return
            chunks.append(chunk)
            if not message.get("more_body", False):
                break
        body = {"type": "http.request", "body": b"".join(chunks), "more_body": False}
        await self.app(scope, _replay([body], receive), send)

    def _message(self) -> str:
        return f"the request body is larger than {self.max_bytes} bytes"


class Metrics:
    """Request counts and latencies per route, for ``/metrics``."""

    def __init__(self, registry: CollectorRegistry) -> None:
        self.registry = registry
        self.requests = Counter(
            "agentctx_http_requests",
            "HTTP requests by route, method and status.",
            ("route", "method", "status"),
            registry=registry,
        )
        self.latency = Histogram(
            "agentctx_http_request_seconds",
            "HTTP request latency by route.",
            ("route", "method"),
            registry=registry,
            buckets=(0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 10.0),
        )


class Observe:
    """Times each request, counts it, writes the access audit record and logs it to
    ``agentctx.server.access`` (method, route template, status, milliseconds)."""

    def __init__(self, app: ASGIApp, metrics: Metrics, audit: AuditLog) -> None:
        self.app = app
        self.metrics = metrics
        self.audit = audit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        audited = False

        async def audit(status: int) -> None:
            nonlocal audited
            if audited or scope["path"] in _UNAUDITED or scope["path"].startswith("/ui/static"):
                return
            audited = True
            elapsed = time.perf_counter() - started
            record = _access_record(scope, route_template(scope), status, elapsed)
            await anyio.to_thread.run_sync(self.audit.record, record)

        refused = False  # the audit record could not be written: the answer is a 503

        async def observed(message: Message) -> None:
            nonlocal status, refused
            if refused:
                return  # the original answer is not sent without its audit record
            if message["type"] == "http.response.start":
                status = int(message["status"])
                # Committed before the client sees the answer: no response without its
                # audit record, even if the process dies right after.
                try:
                    await audit(status)
                except Exception as exc:  # the database failed: the answer cannot go out
                    log_unexpected(exc, scope["method"], route_template(scope))
                    refused = True
                    status = 503
                    body = error_body(StorageError.code, "the access audit could not be written")
                    await _send_json(send, 503, body)
                    return
            await send(message)

        try:
            await self.app(scope, receive, observed)
        finally:
            elapsed = time.perf_counter() - started
            route = route_template(scope)
            method = scope["method"]
            self.metrics.requests.labels(route, method, str(status)).inc()
            self.metrics.latency.labels(route, method).observe(elapsed)
            if scope["path"] not in _UNAUDITED:
                access_logger.info("%s %s %d %.1fms", method, route, status, elapsed * 1000)
            try:
                await audit(status)  # no response was started (the app failed before)
            except Exception as exc:  # logged; the request already ended
                log_unexpected(exc, method, route)


# Audit columns that hold ids are 128 characters wide.
_ID_WIDTH = 128


def _fit_id(value: object) -> str | None:
    """An id as the audit stores it: a well-formed one, else ``None`` (a request with an
    id too long or malformed is recorded, without the id, rather than refused)."""
    if not isinstance(value, str) or not value or len(value) > _ID_WIDTH:
        return None
    return value if value.isprintable() else None


def _fit_code(value: object) -> str | None:
    return value[:64] if isinstance(value, str) else None


def _access_record(scope: Scope, route: str, status: int, elapsed: float) -> AuditRecord:
    """Who asked for what and how it went; ids and outcomes only, never content."""
    state = scope.get("state") or {}
    principal = state.get("principal")
    params = scope.get("path_params") or {}
    return AuditRecord(
        action="http_access",
        status="ok" if status < 400 else "denied" if status in (401, 403, 404) else "error",
        user_id=_fit_id(state.get("user_id")),
        session_id=_fit_id(params.get("session_id")),
        duration_ms=round(elapsed * 1000, 3),
        error_code=_fit_code(state.get("error_code")) if status >= 400 else None,
        meta={
            "method": scope["method"],
            "route": route,
            "http_status": status,
            "principal": getattr(principal, "subject", None),
            "tenant": getattr(principal, "tenant", None),
        },
    )


def _replay(messages: list[Message], then: Receive | None = None) -> Receive:
    """A ``receive`` that gives ``messages`` first, then defers to ``then``."""
    pending = list(messages)

    async def receive() -> Message:
        if pending:
            return pending.pop(0)
        if then is not None:
            return await then()
        return {"type": "http.disconnect"}

    return receive


def _header(scope: Scope, name: bytes) -> str | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return str(value.decode("latin-1"))
    return None


async def _send_json(send: Send, status: int, body: dict[str, Any]) -> None:
    payload = orjson.dumps(body)
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [
                (b"content-type", b"application/json"),
                (b"content-length", str(len(payload)).encode()),
            ],
        }
    )
    await send({"type": "http.response.body", "body": payload})
