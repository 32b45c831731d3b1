"""What the memory service accepts: checked before any query or write.

The memory API is a public entry point (library, REST, MCP, the memory tools), so
every argument is checked here the same way on SQLite and PostgreSQL, and a bad one
is an ``InvalidInput`` naming the field (never the value). See :mod:`agentctx.inputs`.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from agentctx.errors import InvalidInput
from agentctx.ids import check_id, check_optional_id
from agentctx.inputs import (
    MAX_INT32,
    MAX_INT64,
    check_count,
    check_number,
    check_text,
    validation_message,
)
from agentctx.jsonvalue import check_object
from agentctx.memory.models import MemoryCandidate, MemoryKind, procedural_data

MAX_CONTENT_CHARS = 20_000
"""Longest memory text: a memory is a statement, not a document."""

MAX_KEYWORDS = 64

MAX_SUBJECT = 256
"""Longest subject, keyword or change reason of a memory."""


def check_user(user_id: object) -> str:
    """The user id every memory call names."""
    return check_id("user_id", user_id)


def check_memory_ref(user_id: object, memory_id: object) -> None:
    """A user and one of their memories."""
    check_id("user_id", user_id)
    check_id("memory_id", memory_id)


def check_content(content: object) -> str:
    """A memory's text: non-empty (after spaces), storable, at most 20,000 characters."""
    text = check_text(content, "content", max_chars=MAX_CONTENT_CHARS)
    if not text.strip():
        raise InvalidInput("memory content must not be empty")
    return text


def check_kinds(kinds: object) -> list[MemoryKind] | None:
    """Memory kinds by name; None (or empty) means every kind."""
    if kinds is None:
        return None
    if isinstance(kinds, str) or not isinstance(kinds, Sequence):
        raise InvalidInput("kinds must be a list of memory kinds")
    return [check_kind(kind) for kind in kinds] or None


def check_kind(kind: object) -> MemoryKind:
    """One memory kind by name."""
    if isinstance(kind, str) and kind in MemoryKind._value2member_map_:
        return MemoryKind(kind)
    raise InvalidInput(f"kind must be one of {', '.join(k.value for k in MemoryKind)}")


def check_procedural(kind: MemoryKind, data: object) -> None:
    """A procedural memory's data holds its statistics (scenario, tools, runs, …)."""
    if kind is not MemoryKind.PROCEDURAL:
        return
    if not isinstance(data, dict):
        raise InvalidInput("a procedural memory needs data: its scenario, tools and runs")
    try:
        procedural_data(data)
    except ValidationError as exc:
        raise InvalidInput(f"procedural memory data: {validation_message(exc)}") from None


def check_candidate(**values: Any) -> MemoryCandidate:
    """A memory added through the API, its fields already checked (:func:`check_fields`)."""
    try:
        return MemoryCandidate.model_validate(values)
    except ValidationError as exc:
        raise InvalidInput(f"invalid memory: {validation_message(exc)}") from None


def check_fields(
    *,
    content: object = None,
    subject: object = None,
    data: object = None,
    keywords: object = None,
    confidence: object = None,
    agent_id: object = None,
    session_id: object = None,
) -> None:
    """The optional fields of a memory write."""
    if content is not None:
        check_content(content)
    if subject is not None:
        check_text(subject, "subject", max_chars=MAX_SUBJECT)
    if data is not None:
        check_object(data, where="data")
    if keywords is not None:
        if isinstance(keywords, str) or not isinstance(keywords, Sequence):
            raise InvalidInput("keywords must be a list of strings")
        if len(keywords) > MAX_KEYWORDS:
            raise InvalidInput(f"at most {MAX_KEYWORDS} keywords")
        for keyword in keywords:
            check_text(keyword, "keyword", max_chars=MAX_SUBJECT)
    if confidence is not None:
        check_number(confidence, "confidence", maximum=1.0)
    check_optional_id("agent_id", agent_id)
    check_optional_id("session_id", session_id)


def check_page(limit: object, offset: object = 0) -> None:
    """A page of results: 1-1000 items from a non-negative offset."""
    check_count(limit, "limit", minimum=1, maximum=1000)
    check_count(offset, "offset", maximum=MAX_INT64)


def check_query(query: object, filters: object) -> None:
    """A search's optional text and filters."""
    if query is not None:
        check_text(query, "query", max_chars=MAX_CONTENT_CHARS)
    if filters is not None:
        check_object(filters, where="filters")


def check_as_of(value: object) -> None:
    """A point in time to search memories as of: an aware datetime, when given."""
    if value is None:
        return
    if not isinstance(value, datetime) or value.tzinfo is None:
        raise InvalidInput("as_of must be a datetime with a time zone")


def check_flag(value: object, field: str) -> bool:
    """A boolean argument (not a truthy value)."""
    if not isinstance(value, bool):
        raise InvalidInput(f"{field} must be true or false")
    return value


def check_version(value: object) -> None:
    """A compare-and-set version, when given."""
    if value is not None:
        check_count(value, "expected_version", maximum=MAX_INT32)


__all__ = [
    "MAX_SUBJECT",
    "check_as_of",
    "check_candidate",
    "check_content",
    "check_fields",
    "check_flag",
    "check_kind",
    "check_kinds",
    "check_memory_ref",
    "check_page",
    "check_procedural",
    "check_query",
    "check_user",
    "check_version",
]
