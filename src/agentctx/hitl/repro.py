"""The minimal reproducible package (seed 003: 可复现包) and the window recorder behind it.

When a session needs a human, the package holds what it takes to replay the failure
without the session's owner: the failing turn's events (as stored, so redacted), the
context window that was built for that turn (recorded by :func:`store_window` on every
``build_context``, one upsert), and the configuration in effect with every secret
taken out (:func:`scrub_secrets`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict
from sqlalchemy import Connection, select
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from agentctx.events import Event
from agentctx.hitl.tables import context_windows
from agentctx.privacy.redactor import Redactor

NO_TURN = ""
"""The ``turn_id`` a window built outside any turn is recorded under."""

PINNED_QUERY_CHARS = 500  # the pinned instruction quotes at most this much of the query

_SECRET_KEY = re.compile(
    r"(^|_)(api_?key|key|secret|secrets|password|passwd|pwd|token|auth|authorization|"
    r"credential|credentials|cookie|dsn)$",
    re.IGNORECASE,
)
_SECRET_VALUE = re.compile(r"\b(sk|pk|rk|ghp|gho|xox[abp])[-_][A-Za-z0-9_-]{12,}\b")
_URL = re.compile(r"^[a-z][a-z0-9+.-]*://", re.IGNORECASE)
_DATA_URL = re.compile(r"^data:[^,;]*;base64,", re.IGNORECASE)


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class RecordedWindow(_Frozen):
    """The last context window built for one turn of a session (``turn_id`` None: built
    outside any turn). ``query`` is redacted; image bytes in ``messages`` are left out."""

    turn_id: str | None
    query: str | None
    budget: int
    strategy: str
    messages: list[dict[str, Any]]
    tokens: int
    report: dict[str, Any]
    created_at: datetime


class ReproPackage(_Frozen):
    """Everything needed to reproduce a failing turn, with personal data and secrets out.

    ``events`` are the turn's events as stored (redacted before they were written);
    ``window`` the last context window built for that turn, if one was recorded;
    ``config`` the configuration in effect (engine, agent, session, context, hitl) with
    keys, tokens, passwords and URL credentials removed.
    """

    user_id: str
    session_id: str
    agent_id: str
    turn_id: str
    reason: str | None
    trigger: str | None
    cause_event_ids: tuple[str, ...]
    events: tuple[Event, ...]
    window: RecordedWindow | None
    config: dict[str, Any]
    created_at: datetime


# Secrets ---------------------------------------------------------------------------------


def scrub_url(url: str) -> str:
    """``url`` without user info and without query parameters that look like secrets."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return "[URL]"
    netloc = parts.netloc
    if "@" in netloc:
        netloc = netloc.rsplit("@", 1)[1]
    query = parts.query
    if query:
        kept = [(k, v) for k, v in parse_qsl(query, keep_blank_values=True) if not is_secret_key(k)]
        query = urlencode(kept)
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def is_secret_key(name: str) -> bool:
    """Whether a configuration key names a secret (api_key, password, token, …)."""
    return bool(_SECRET_KEY.search(name.replace("-", "_")))


def scrub_secrets(value: Any) -> Any:
    """A copy of a JSON value with secrets removed: entries whose key names a secret are
    dropped, credentials and secret parameters leave URLs, API-key-shaped strings become
    ``[SECRET]``."""
    if isinstance(value, Mapping):
        return {
            str(k): scrub_secrets(v)
            for k, v in value.items()
            if not (isinstance(k, str) and is_secret_key(k))
        }
    if isinstance(value, list | tuple):
        return [scrub_secrets(v) for v in value]
    if isinstance(value, str):
        if _URL.match(value):
            value = scrub_url(value)
        return _SECRET_VALUE.sub("[SECRET]", value)
    return value


# Windows ---------------------------------------------------------------------------------


def without_image_bytes(value: Any) -> Any:
    """``value`` with base64 data URLs (inline images) replaced by a short marker: a copy
    of its dicts and lists, which a caller may go on changing."""
    if isinstance(value, str):
        if _DATA_URL.match(value):
            return f"[image data omitted: {len(value)} chars]"
        return value
    if isinstance(value, dict):
        return {k: without_image_bytes(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_image_bytes(v) for v in value]
    return value


def _replace_text(value: Any, swaps: Mapping[str, str]) -> Any:
    if isinstance(value, str):
        for raw, clean in swaps.items():
            value = value.replace(raw, clean)
        return value
    if isinstance(value, dict):
        return {k: _replace_text(v, swaps) for k, v in value.items()}
    if isinstance(value, list):
        return [_replace_text(v, swaps) for v in value]
    return value


def redacted_query_swaps(query: str | None, redactor: Redactor) -> dict[str, str]:
    """How the raw query (and the part of it a pinned instruction quotes) reads redacted.

    Everything else in a window comes from stored, already redacted records; the query
    is the one raw input a window repeats, so it is the only text redacted here.
    """
    if not query:
        return {}
    pieces = {query, query.strip(), query.strip()[:PINNED_QUERY_CHARS]}
    swaps: dict[str, str] = {}
    # Longest first, so a quoted prefix is not replaced inside the full query.
    for piece in sorted((p for p in pieces if p), key=len, reverse=True):
        clean = str(redactor.redact_text(piece).value)
        if clean != piece:
            swaps[piece] = clean
    return swaps


def window_row(
    *,
    query: str | None,
    budget: int,
    strategy: str,
    messages: list[dict[str, Any]],
    tokens: int,
    report: dict[str, Any],
    redactor: Redactor,
    now: datetime,
) -> dict[str, Any]:
    """The stored values of a window (:func:`store_window`): the query, and its quotes
    inside the messages, pass ``redactor``; inline image bytes are left out (the report
    names the images). Computed before the write transaction, which then only stores."""
    swaps = redacted_query_swaps(query, redactor)
    clean_query = swaps.get(query, query) if query else query
    stored_messages = without_image_bytes(messages)
    stored_report = dict(report, query=clean_query)
    if swaps:
        stored_messages = _replace_text(stored_messages, swaps)
        stored_report = _replace_text(stored_report, swaps)
    return {
        "query": clean_query,
        "budget": budget,
        "strategy": strategy,
        "messages": stored_messages,
        "tokens": tokens,
        "report": stored_report,
        "created_at": now,
    }


def store_window(
    conn: Connection, *, user_id: str, session_id: str, turn_id: str | None, row: dict[str, Any]
) -> None:
    """Upsert the window of (session, turn) (``row`` from :func:`window_row`): the newest
    build of a turn replaces the last."""
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    statement = dialect_insert(context_windows).values(
        user_id=user_id, session_id=session_id, turn_id=turn_id or NO_TURN, **row
    )
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=["user_id", "session_id", "turn_id"], set_=row
        )
    )


def load_window(
    conn: Connection, user_id: str, session_id: str, turn_id: str | None
) -> RecordedWindow | None:
    """The window recorded for (session, turn), if any."""
    row = (
        conn.execute(
            select(context_windows).where(
                context_windows.c.user_id == user_id,
                context_windows.c.session_id == session_id,
                context_windows.c.turn_id == (turn_id or NO_TURN),
            )
        )
        .mappings()
        .first()
    )
    if row is None:
        return None
    return RecordedWindow(
        turn_id=row["turn_id"] or None,
        query=row["query"],
        budget=row["budget"],
        strategy=row["strategy"],
        messages=row["messages"],
        tokens=row["tokens"],
        report=row["report"],
        created_at=row["created_at"],
    )
