"""The cursors of session listings: the last listed session's (created_at, user, id)."""

from __future__ import annotations

import base64
from datetime import datetime

from agentctx import jsonvalue
from agentctx.errors import InvalidInput


def encode_cursor(created_at: datetime, user_id: str, session_id: str) -> str:
    """The opaque cursor of a session listing's next page."""
    raw = jsonvalue.dumps([created_at.isoformat(), user_id, session_id])
    return base64.urlsafe_b64encode(raw.encode()).decode().rstrip("=")


def decode_cursor(cursor: str) -> tuple[datetime, str, str]:
    """The position a cursor names; ``InvalidInput`` for one this code did not make."""
    try:
        padded = cursor + "=" * (-len(cursor) % 4)
        created, user_id, session_id = jsonvalue.loads(base64.urlsafe_b64decode(padded))
        when = datetime.fromisoformat(created)
        if when.tzinfo is None:
            raise ValueError(created)
        return when, str(user_id), str(session_id)
    except (ValueError, TypeError) as exc:
        raise InvalidInput("invalid cursor") from exc
