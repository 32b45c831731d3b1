"""JSON values: validation at the boundary and the canonical encoding used for hashing.

Everything agentctx stores as JSON passes :func:`check_json` first, so the same
value reads back identically from SQLite and PostgreSQL (JSONB) and hashes the
same: finite numbers only, 64-bit integers, string keys, and strings of valid
Unicode without NUL characters (PostgreSQL cannot store them; a lone surrogate
cannot be encoded at all). Errors name where the problem is, never the value.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from agentctx.errors import InvalidInput
from agentctx.inputs import text_problem

JsonValue = Any
"""A JSON value as Python data: dict, list, str, int, float, bool or None."""

_MAX_DEPTH = 64
_INT_MIN, _INT_MAX = -(2**63), 2**63 - 1
_FLOAT_AS_INT = 1e16  # from here on JSON writes integral floats with an exponent


def check_json(value: JsonValue, *, where: str = "value") -> None:
    """Raise :class:`InvalidInput` unless ``value`` is storable, hashable JSON."""
    _checked(value, where, 0)


def checked(value: JsonValue, *, where: str = "value") -> JsonValue:
    """``value`` as :func:`storable` gives it, checked as :func:`check_json` checks it:
    one walk where the write path would otherwise take two."""
    return _checked(value, where, 0)


def check_object(value: JsonValue, *, where: str = "value") -> dict[str, JsonValue]:
    """``value`` if it is a storable JSON object (a dict); ``InvalidInput`` otherwise."""
    if not isinstance(value, dict):
        raise InvalidInput(f"{where} must be a JSON object, not {type(value).__name__}")
    _checked(value, where, 0)
    return value


def _checked(value: JsonValue, where: str, depth: int) -> JsonValue:
    """``value`` checked, in its storable form (containers copied only when something
    inside them changes)."""
    if depth > _MAX_DEPTH:
        raise InvalidInput(f"{where}: JSON nested deeper than {_MAX_DEPTH} levels")
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        problem = text_problem(value)
        if problem is not None:
            raise InvalidInput(f"{where}: a string {problem}")
        return value
    if isinstance(value, int):
        if not _INT_MIN <= value <= _INT_MAX:
            raise InvalidInput(f"{where}: an integer does not fit in 64 bits")
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(f"{where}: NaN and infinities are not JSON numbers")
        return _storable_float(value)
    if isinstance(value, dict):
        changed: dict[str, JsonValue] | None = None
        for key, item in value.items():
            if not isinstance(key, str):
                raise InvalidInput(
                    f"{where}: object keys must be strings, not {type(key).__name__}"
                )
            problem = text_problem(key)
            if problem is not None:
                raise InvalidInput(f"{where}: a key {problem}")
            clean = _checked(item, f"{where}.{_shown(key)}", depth + 1)
            if clean is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = clean
        return value if changed is None else changed
    if isinstance(value, list | tuple):
        items: list[JsonValue] | None = None
        for index, item in enumerate(value):
            clean = _checked(item, f"{where}[{index}]", depth + 1)
            if clean is not item:
                if items is None:
                    items = list(value)
                items[index] = clean
        return value if items is None else items
    raise InvalidInput(f"{where}: {type(value).__name__} is not a JSON value")


def _shown(key: str) -> str:
    # Keys can be personal data too (an email as a key): only plain names are echoed.
    return key if key.isidentifier() and len(key) <= 40 else "[…]"


def storable(value: JsonValue) -> JsonValue:
    """``value`` (already checked) as every database reads it back, so its hash verifies.

    PostgreSQL's JSONB keeps numbers as decimals: ``-0.0`` reads back as ``0.0``, and
    an integral float from 1e16 up (which JSON writes as ``1e16``) as an integer. Such
    floats are stored in that form on both backends; anything else is returned as is
    (containers are copied only when something inside them changes).
    """
    if isinstance(value, float):
        return _storable_float(value)
    if isinstance(value, dict):
        changed = {key: storable(item) for key, item in value.items()}
        return value if all(changed[k] is value[k] for k in value) else changed
    if isinstance(value, list | tuple):
        items = [storable(item) for item in value]
        return value if all(a is b for a, b in zip(items, value, strict=True)) else items
    return value


def _storable_float(value: float) -> JsonValue:
    if value == 0.0:
        return 0.0
    if abs(value) >= _FLOAT_AS_INT and value.is_integer() and _INT_MIN <= value <= _INT_MAX:
        return int(value)
    return value


def canonical_json(value: JsonValue) -> bytes:
    """Deterministic JSON bytes: sorted keys, no whitespace, UTF-8."""
    return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)


def dumps(value: JsonValue) -> str:
    """Compact JSON text (used as the database JSON serializer)."""
    return orjson.dumps(value).decode()


def loads(text: str | bytes) -> JsonValue:
    """Parse JSON text."""
    return orjson.loads(text)
