"""JSON values: validation at the boundary and the canonical encoding used for hashing.

Everything agentctx stores as JSON passes :func:`check_json` first, so the same
value reads back identically from SQLite and PostgreSQL (JSONB) and hashes the
same: finite numbers only, 64-bit integers, string keys, and no NUL characters
(PostgreSQL cannot store them).
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from agentctx.errors import InvalidInput

JsonValue = Any
"""A JSON value as Python data: dict, list, str, int, float, bool or None."""

_MAX_DEPTH = 64
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1


def check_json(value: JsonValue, *, where: str = "value") -> None:
    """Raise :class:`InvalidInput` unless ``value`` is storable, hashable JSON."""
    _check(value, where, 0)


def _check(value: JsonValue, where: str, depth: int) -> None:
    if depth > _MAX_DEPTH:
        raise InvalidInput(f"{where}: JSON nested deeper than {_MAX_DEPTH} levels")
    if value is None or isinstance(value, bool):
        return
    if isinstance(value, str):
        if "\x00" in value:
            raise InvalidInput(f"{where}: strings may not contain NUL characters")
        return
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise InvalidInput(f"{where}: integer {value} does not fit in 64 bits")
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{where}: {value} is not a JSON number")
        return
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(f"{where}: object keys must be strings, got {key!r}")
            if "\x00" in key:
                raise InvalidInput(f"{where}: keys may not contain NUL characters")
            _check(item, f"{where}.{key}", depth + 1)
        return
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _check(item, f"{where}[{index}]", depth + 1)
        return
    raise InvalidInput(f"{where}: {type(value).__name__} is not a JSON value")


def canonical_json(value: JsonValue) -> bytes:
    """Deterministic JSON bytes: sorted keys, no whitespace, UTF-8."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def dumps(value: JsonValue) -> str:
    """Compact JSON text (used as the database JSON serializer)."""
    return orjson.dumps(value).decode()


def loads(text: str | bytes) -> JsonValue:
    """Parse JSON text."""
    return orjson.loads(text)
