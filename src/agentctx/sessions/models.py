"""Records about sessions that the API returns: info, turns, pages and reports."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Generic, TypeVar

from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")


class _Record(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SessionInfo(_Record):
    """A session's row: identity, owner, agent, state and times."""

    session_id: str
    user_id: str
    agent_id: str
    state: dict[str, Any]
    state_version: int
    last_seq: int
    last_hash: str
    weight_total: int = 0  # the events' history weights through last_seq (tokens.weight)
    config: dict[str, Any]
    meta: dict[str, Any]
    created_at: datetime
    updated_at: datetime
    last_accessed_at: datetime
    expires_at: datetime | None
    ttl_ms: int | None = None  # its own TTL (create_session(ttl=…)); None: the engine's


class TurnInfo(_Record):
    """A turn: one user request and everything done for it."""

    turn_id: str
    user_id: str
    session_id: str
    request_id: str | None
    author: str | None
    status: str
    started_at: datetime
    ended_at: datetime | None
    first_seq: int | None
    last_seq: int | None
    event_count: int


class Page(_Record, Generic[T]):
    """One page of a listing; pass ``next_cursor`` back to get the next page."""

    items: list[T]
    next_cursor: str | None = None


class VerifyReport(_Record):
    """The outcome of checking a session's hash chain."""

    session_id: str
    ok: bool
    events_checked: int
    last_seq: int
    first_bad_seq: int | None = None
    reason: str | None = None


class DeleteReport(_Record):
    """Counts of what a deletion removed."""

    sessions: int = 0
    events: int = 0
    turns: int = 0
    jobs: int = 0
    blob_refs: int = 0
    blobs: int = 0
    audit: int = 0
    extra: dict[str, int] = Field(default_factory=dict)

    def __add__(self, other: DeleteReport) -> DeleteReport:
        merged = {
            k: getattr(self, k) + getattr(other, k)
            for k in DeleteReport.model_fields
            if k != "extra"
        }
        extra = dict(self.extra)
        for key, value in other.extra.items():
            extra[key] = extra.get(key, 0) + value
        return DeleteReport(**merged, extra=extra)


class SweepReport(_Record):
    """What a sweep removed or closed."""

    expired_sessions: int
    deleted: DeleteReport
    abandoned_turns: int
    audit_records: int
    finished_jobs: int = 0  # finished jobs past ``job_retention``, deleted
