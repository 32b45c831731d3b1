"""Helpers the providers share: reading results out of provider JSON safely."""

from __future__ import annotations

import email.utils
from datetime import datetime
from typing import Any

from agentctx.search.errors import SearchBadResponse
from agentctx.search.models import SearchResult


def iso_date(value: object) -> str | None:
    """A provider's date as ISO 8601 when it parses (ISO or RFC 2822), else as given."""
    if value is None or value == "":
        return None
    text = str(value).strip()
    try:
        return datetime.fromisoformat(text.replace("Z", "+00:00")).isoformat()
    except ValueError:
        pass
    try:
        return email.utils.parsedate_to_datetime(text).isoformat()
    except (TypeError, ValueError, IndexError):
        return text


def _str(value: object) -> str:
    return value.strip() if isinstance(value, str) else ""


def _score(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def result_list(body: dict[str, Any], provider: str, key: str = "results") -> list[Any]:
    """``body[key]`` when it is a list; SearchBadResponse otherwise."""
    value = body.get(key)
    if not isinstance(value, list):
        raise SearchBadResponse(
            f"{provider} answered without a {key!r} list (got {type(value).__name__})"
        )
    return value


def to_result(item: object, *, date_key: str) -> SearchResult | None:
    """One result dict as a SearchResult; None when it has no http(s) URL (skipped, so one
    odd entry does not cost the whole answer)."""
    if not isinstance(item, dict):
        return None
    url = _str(item.get("url"))
    if not url.startswith(("http://", "https://")):
        return None
    return SearchResult(
        url=url,
        title=_str(item.get("title")),
        content=_str(item.get("content")),
        score=_score(item.get("score")),
        published_date=iso_date(item.get(date_key)),
    )
