"""Errors of the REST client: server responses turned back into agentctx errors.

The server answers a failure with ``{"error": {"code", "message", "field"?}}`` whose
``code`` is the ``code`` of the agentctx error it raised. :func:`error_from_response`
rebuilds an instance of the same class from ``agentctx.errors`` (``session_not_found``
-> ``SessionNotFound``, ``stale_session`` -> ``StaleSession``, …), so code written
against the embedded engine catches the same exceptions from a server. Codes only a
server produces (authentication, scopes, request validation, body size, transport
failures) get the small set of classes below, each under the agentctx class a caller
would already catch (``UserNotFound`` is a ``NotFound``, ``RequestInvalid`` an
``InvalidInput``, ``ServerUnavailable`` a ``StorageError``).

Every rebuilt error carries ``status`` (the HTTP status, 0 when no response came),
``field`` (the offending request field, when the server named one) and ``code``.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import Any

from agentctx import errors as e

__all__ = [
    "BodyTooLarge",
    "Forbidden",
    "KeyNotFound",
    "PreconditionRequired",
    "RemoteError",
    "RequestInvalid",
    "ServerError",
    "ServerUnavailable",
    "Unauthenticated",
    "UserNotFound",
    "error_from_response",
]


class RemoteError(e.AgentCtxError):
    """A failure only a server reports (the base of the client's own error classes)."""

    code = "remote_error"


class Unauthenticated(RemoteError):
    """The API key or bearer token is missing or not valid (401)."""

    code = "unauthenticated"


class Forbidden(RemoteError):
    """The key lacks the scope the call needs, e.g. ``admin`` for ``sweep`` (403)."""

    code = "forbidden"


class UserNotFound(e.NotFound):
    """The key may not act for this user; reported like an unknown user (404)."""

    code = "user_not_found"


class KeyNotFound(e.NotFound):
    """No API key with this id in the caller's tenant (404)."""

    code = "key_not_found"


class RequestInvalid(e.InvalidInput):
    """The server refused the request body or parameters (422 ``validation_error``);
    ``field`` names the first offending one, ``details`` lists them all."""

    code = "validation_error"


class BodyTooLarge(e.InvalidInput):
    """The request body is larger than the server accepts (413)."""

    code = "body_too_large"


class PreconditionRequired(e.InvalidInput):
    """A compare-and-set route was called without ``If-Match`` (428)."""

    code = "precondition_required"


class ServerError(RemoteError):
    """The server failed unexpectedly (500) or answered something that is not the API."""

    code = "internal_error"


class ServerUnavailable(e.StorageError):
    """The server could not be reached, or kept answering 503, after every retry."""

    code = "server_unavailable"


def _classes() -> dict[str, type[e.AgentCtxError]]:
    found: dict[str, type[e.AgentCtxError]] = {}
    for module_classes in (vars(e).values(), globals().values()):
        for value in list(module_classes):
            if isinstance(value, type) and issubclass(value, e.AgentCtxError):
                found[value.code] = value
    return found


_BY_CODE = _classes()

# A code this client does not know (a newer server, an extension's error) still raises
# the family its status names.
_BY_STATUS: dict[int, type[e.AgentCtxError]] = {
    401: Unauthenticated,
    403: Forbidden,
    404: e.NotFound,
    409: e.Conflict,
    412: e.Conflict,
    413: BodyTooLarge,
    422: e.InvalidInput,
    428: PreconditionRequired,
    501: e.MissingExtra,
    503: ServerUnavailable,
}

_QUOTED = re.compile(r"'([^']*)'")
_NUMBER = re.compile(r"-?\d+")


def _fill(error: e.AgentCtxError, message: str) -> None:
    """Set the attributes the class's own constructor would have set, from the message."""
    quoted = _QUOTED.findall(message)
    numbers = [int(n) for n in _NUMBER.findall(message)]
    if isinstance(error, e.SessionNotFound):
        error.session_id = quoted[0] if quoted else ""
    elif isinstance(error, e.BlobNotFound):
        error.blob_id = quoted[0] if quoted else ""
    elif isinstance(error, e.MemoryNotFound):
        error.memory_id = quoted[0] if quoted else ""
    if isinstance(error, e.StaleMemory):
        error.memory_id = quoted[0] if quoted else ""
        # "memory 'm' is at version <actual>, not <expected>"
        error.actual, error.expected = (numbers[-2], numbers[-1]) if len(numbers) >= 2 else (-1, -1)
    elif isinstance(error, e.StaleSession):
        # "expected last seq <expected>, the session is at <actual>" and
        # "state version <expected> is stale, the session is at <actual>"
        error.expected, error.actual = (numbers[0], numbers[-1]) if len(numbers) >= 2 else (-1, -1)
    if isinstance(error, e.ImageExpired):
        when = re.search(r"(\d{4}-\d{2}-\d{2} \d{2}:\d{2}) UTC", message)
        error.expired_at = (
            datetime.strptime(when.group(1), "%Y-%m-%d %H:%M").replace(tzinfo=UTC)
            if when
            else datetime.fromtimestamp(0, UTC)
        )
    if isinstance(error, e.MissingExtra):
        extra = re.search(r"agentctx\[([^\]]+)\]", message)
        error.extra = extra.group(1) if extra else ""
        error.package = message.split(" ", 1)[0]


def error_from_response(status: int, body: Any) -> e.AgentCtxError:
    """The agentctx error an error response stands for (its ``code`` decides the class)."""
    detail = body.get("error") if isinstance(body, dict) else None
    if not isinstance(detail, dict):
        detail = {"message": f"HTTP {status}: the server's answer carries no API error"}
    code = str(detail.get("code") or "")
    message = str(detail.get("message") or code or f"HTTP {status}")
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status) or ServerError
    # The classes' constructors take their own arguments (an id, versions); the message
    # is the server's, so build the instance around it and fill in the attributes.
    error = cls.__new__(cls)
    Exception.__init__(error, message)
    _fill(error, message)
    if code and code != cls.code:
        error.code = code  # keep the server's code when only the family is known
    error.status = status  # type: ignore[attr-defined]
    error.field = detail.get("field")  # type: ignore[attr-defined]
    if isinstance(error, RequestInvalid):
        error.details = detail.get("details", [])  # type: ignore[attr-defined]
    return error
