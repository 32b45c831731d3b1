"""The input boundary: what every public entry point accepts, checked the same way.

Every value a caller hands agentctx (library, REST, CLI, MCP, the integrations) is
checked here or in :mod:`agentctx.jsonvalue` before it reaches the database, so bad
input raises :class:`~agentctx.errors.InvalidInput` with the same message on SQLite
and PostgreSQL, and never a driver's error half-way through a write.

- **Text** must be a ``str`` of valid Unicode: lone surrogates (legal in JSON as
  ``"\\ud800"``, impossible to encode) and NUL characters (PostgreSQL cannot store
  them) are refused, not silently replaced, so what is stored is what was sent.
- **Identifiers** (user, agent, session, call ids, keys) follow
  :func:`agentctx.ids.check_id`; **labels** (author, model, tool name) are short
  one-line text.
- **Numbers** are finite and within documented ranges; counts and limits are
  non-negative integers (``True`` is not a number).

Error messages name the field and the rule, never the value: values may be personal
data, and errors end up in logs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from datetime import datetime, timedelta
from functools import wraps
from typing import ParamSpec, TypeVar

from pydantic import ValidationError

from agentctx.errors import InvalidInput

MAX_LABEL = 128
"""Longest author, model or tool name, in characters (the database column's width)."""

MAX_TTL = timedelta(days=36_500)
"""Longest time to live a session may ask for: a hundred years."""

MAX_BUDGET = 2**31 - 1
"""Largest token budget a window may be asked for ("no limit" in practice)."""

MAX_INT32 = 2**31 - 1
"""Largest state or memory version: versions are 32-bit columns."""

MAX_INT64 = 2**63 - 1
"""Largest sequence number, version or offset: what a 64-bit column holds."""

MAX_LIMIT = 1_000_000
"""Largest page size or result count a read may ask for."""

_P = ParamSpec("_P")
_R = TypeVar("_R")


def text_problem(value: str) -> str | None:
    """Why ``value`` cannot be stored as text, or None if it can."""
    if "\x00" in value:
        return "may not contain NUL characters"
    if not value.isascii():
        try:
            value.encode("utf-8")
        except UnicodeEncodeError:
            return "is not valid Unicode (it contains a lone surrogate)"
    return None


def check_text(value: object, field: str, *, max_chars: int | None = None) -> str:
    """``value`` as storable text; ``InvalidInput`` naming ``field`` otherwise."""
    if not isinstance(value, str):
        raise InvalidInput(f"{field} must be a string, not {type(value).__name__}")
    problem = text_problem(value)
    if problem is not None:
        raise InvalidInput(f"{field} {problem}")
    if max_chars is not None and len(value) > max_chars:
        raise InvalidInput(f"{field} is longer than {max_chars} characters")
    return value


def check_optional_text(value: object, field: str, *, max_chars: int | None = None) -> str | None:
    """Like :func:`check_text`, with None allowed."""
    return None if value is None else check_text(value, field, max_chars=max_chars)


def check_label(value: object, field: str) -> str | None:
    """An author, model or tool name: one line of at most :data:`MAX_LABEL` characters."""
    if value is None:
        return None
    label = check_text(value, field, max_chars=MAX_LABEL)
    if any(ch in label for ch in "\r\n"):
        raise InvalidInput(f"{field} must be a single line")
    return label


def check_count(value: object, field: str, *, minimum: int = 0, maximum: int = MAX_LIMIT) -> int:
    """An integer in ``[minimum, maximum]`` (limits, offsets, seqs, versions)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{field} must be an integer, not {type(value).__name__}")
    if not minimum <= value <= maximum:
        raise InvalidInput(f"{field} must be between {minimum} and {maximum}")
    return value


def check_optional_count(
    value: object, field: str, *, minimum: int = 0, maximum: int = MAX_LIMIT
) -> int | None:
    """Like :func:`check_count`, with None allowed."""
    return None if value is None else check_count(value, field, minimum=minimum, maximum=maximum)


def check_number(
    value: object, field: str, *, minimum: float = 0.0, maximum: float = math.inf
) -> float:
    """A finite real number in ``[minimum, maximum]`` (durations, weights, shares)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidInput(f"{field} must be a number, not {type(value).__name__}")
    number = float(value)
    if not math.isfinite(number):
        raise InvalidInput(f"{field} must be a finite number")
    if not minimum <= number <= maximum:
        raise InvalidInput(f"{field} must be between {minimum:g} and {maximum:g}")
    return number


def check_ttl(value: object, field: str = "ttl") -> timedelta | None:
    """A time to live: positive and at most :data:`MAX_TTL`; None means the default."""
    if value is None:
        return None
    if not isinstance(value, timedelta):
        raise InvalidInput(f"{field} must be a timedelta, not {type(value).__name__}")
    if not timedelta(0) < value <= MAX_TTL:
        raise InvalidInput(f"{field} must be positive and at most {MAX_TTL.days} days")
    return value


def check_timestamp(value: object, field: str = "ts") -> datetime | None:
    """A timezone-aware datetime, or None."""
    if value is None:
        return None
    if not isinstance(value, datetime):
        raise InvalidInput(f"{field} must be a datetime, not {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidInput(f"{field} must be timezone-aware")
    return value


def validation_message(exc: ValidationError) -> str:
    """A pydantic error as one line per problem, without the offending values."""
    lines = []
    for error in exc.errors(include_url=False, include_input=False, include_context=False):
        where = ".".join(str(part) for part in error.get("loc", ())) or "value"
        lines.append(f"{where}: {error.get('msg', 'invalid')}")
    return "; ".join(lines[:10]) or "invalid input"


def boundary(
    error: type[InvalidInput] = InvalidInput,
) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """Decorate a public entry point: a pydantic ``ValidationError`` raised while it
    builds its models becomes ``error`` (an ``InvalidInput``) with the values left out."""

    def decorate(function: Callable[_P, _R]) -> Callable[_P, _R]:
        @wraps(function)
        def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            try:
                return function(*args, **kwargs)
            except ValidationError as exc:
                raise error(validation_message(exc)) from None

        return checked

    return decorate
