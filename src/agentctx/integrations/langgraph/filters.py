"""The matching rules of LangGraph's stores: value filters and namespace conditions.

They follow the reference store (``langgraph.store.memory.InMemoryStore``), so an item
an ``AgentCtxStore`` search returns is the one LangGraph's own stores would:

* a filter ``{field: value}`` matches an item whose value has ``field`` equal to
  ``value`` (a dict compares field by field, a list element by element), or, for
  ``{field: {"$op": operand}}``, whose field passes every operator: ``$eq``, ``$ne``,
  and the numeric ``$gt``, ``$gte``, ``$lt``, ``$lte``;
* a namespace condition matches from the start (``prefix``) or the end (``suffix``)
  of a namespace at least as long as its path, ``*`` matching any one label.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from langgraph.store.base import MatchCondition

from agentctx.errors import InvalidInput

_NUMERIC = {
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def matches_filter(value: Mapping[str, Any], filters: Mapping[str, Any] | None) -> bool:
    """Whether an item's ``value`` passes every field of ``filters``."""
    return all(_matches(value.get(field), wanted) for field, wanted in (filters or {}).items())


def _matches(actual: Any, wanted: Any) -> bool:
    if isinstance(wanted, Mapping):
        if any(str(key).startswith("$") for key in wanted):
            return all(_operator(actual, op, operand) for op, operand in wanted.items())
        return isinstance(actual, Mapping) and all(
            _matches(actual.get(key), inner) for key, inner in wanted.items()
        )
    if isinstance(wanted, list | tuple):
        return (
            isinstance(actual, list | tuple)
            and len(actual) == len(wanted)
            and all(_matches(a, w) for a, w in zip(actual, wanted, strict=True))
        )
    return bool(actual == wanted)


def _operator(actual: Any, operator: str, operand: Any) -> bool:
    if operator == "$eq":
        return bool(actual == operand)
    if operator == "$ne":
        return bool(actual != operand)
    compare = _NUMERIC.get(operator)
    if compare is None:
        raise InvalidInput(f"unknown filter operator {operator!r}")
    try:
        return bool(compare(float(actual), float(operand)))
    except (TypeError, ValueError):
        return False  # a missing or non-numeric field is not greater or less than anything


def matches_namespace(condition: MatchCondition, namespace: Sequence[str]) -> bool:
    """Whether ``namespace`` meets one ``ListNamespacesOp`` condition."""
    path = tuple(condition.path)
    if len(namespace) < len(path):
        return False
    labels = tuple(namespace)
    if condition.match_type == "suffix":
        labels, path = labels[::-1], path[::-1]
    return all(p in ("*", label) for label, p in zip(labels, path, strict=False))


__all__ = ["matches_filter", "matches_namespace"]
