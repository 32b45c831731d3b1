"""Reading a session's events through the hot cache.

Guarantee: the events returned are exactly those the database holds for the request,
on every replica, at the moment the session head is read. Only the head (one indexed
row: ``last_seq`` and the incarnation ``created_at``) is read from the database every
time (once per window build: :class:`HeadPin`); events up to ``last_seq`` are
immutable, so any cached copy of (incarnation, seq) is the event itself. Events the
cache lacks are read from the database, only from that incarnation and only while it
is live (checked in the same statement), and filled, so a session deleted (and maybe
recreated with the same id) meanwhile is never mixed into the answer or the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Connection, select

from agentctx.cache.base import HotCache, SessionScope
from agentctx.events import Event
from agentctx.storage import event_reads, fastsql, where
from agentctx.storage.database import Database
from agentctx.storage.schema import sessions


def _head_statement() -> Any:
    return select(sessions.c.last_seq, sessions.c.created_at).where(where.bound_live_session())


class Head(NamedTuple):
    """Where a live session's log stands: its last seq, and when this incarnation of it
    was created (a session deleted and created again with the same id is another)."""

    last_seq: int
    created_at: datetime

    @property
    def incarnation(self) -> str:
        """The incarnation, as the cache's scopes name it."""
        return self.created_at.isoformat()


def _head(conn: Connection, user_id: str, session_id: str, now: datetime) -> Head | None:
    """The head of a live session, or None (read before every cached read: compiled
    once)."""
    rows = fastsql.statement(conn, "cache_session_head", _head_statement).fetch_values(
        conn, {"user_id": user_id, "session_id": session_id, "now": now}
    )
    if not rows:
        return None
    last_seq, created_at = rows[0]
    return Head(int(last_seq), created_at)


def read_head(db: Database, user_id: str, session_id: str, now: datetime) -> Head | None:
    """The head of a live session, or None: one read."""
    with db.read_one() as conn:
        return _head(conn, user_id, session_id, now)


@dataclass(slots=True)
class HeadPin:
    """One read of a session's head, shared by the reads of one window build.

    A build reads the log five or six times (its newest events, older ones by seq, the
    events before the history, its system events); each read through the cache began
    with a read of the head, and an empty read of the database with a check that the
    session exists. Pinned, they all serve the log as it stood when the build began: one
    view of it (an event appended meanwhile waits for the next build), and no statement
    of their own (the head comes with the session's row, read as the window began, or
    is read once at the build's first read). Every read of the database takes only the
    pinned incarnation's rows, so a session deleted or recreated meanwhile is never
    mixed into the answer.
    """

    head: Head | None = None
    read: bool = False

    def get(self, read: Callable[[], Head | None]) -> Head | None:
        """The pinned head, read with ``read`` the first time (None: no live session)."""
        if not self.read:
            self.head, self.read = read(), True
        return self.head


def pinned_loader(
    events: Callable[..., list[Event]], user_id: str, session_id: str, head: Head | None = None
) -> Callable[..., list[Event]]:
    """How one window build reads the session's events: ``events`` (the session
    service's) with ``shared=True``, every read sharing one :class:`HeadPin`. ``head``:
    the session's head as read just before the build (with its row), which the reads
    then share; without it, the first read reads it."""
    pin = HeadPin(head, read=True) if head is not None else HeadPin()

    def load(user: str, session: str, **filters: Any) -> list[Event]:
        same = (user, session) == (user_id, session_id)
        return events(user, session, shared=True, pin=pin if same else None, **filters)

    return load


def wanted_seqs(
    last_seq: int,
    *,
    start_seq: int | None,
    end_seq: int | None,
    limit: int | None,
    last: int | None,
    seqs: Sequence[int] | None,
) -> list[int] | None:
    """The seqs a filtered read returns, ascending (seqs have no gaps: 1..last_seq);
    None for a shape left to the database (a negative limit)."""
    for count in (limit, last):
        if count is not None and count < 0:
            return None
    low = max(1, start_seq if start_seq is not None else 1)
    high = min(last_seq, end_seq if end_seq is not None else last_seq)
    if high < low:
        return []
    if seqs is not None:
        chosen = sorted({s for s in seqs if low <= s <= high})
        if last is not None:
            return chosen[len(chosen) - last :] if last else []
        return chosen[:limit] if limit is not None else chosen
    if last is not None:
        return list(range(max(low, high - last + 1), high + 1))
    if limit is not None:
        return list(range(low, min(high, low + limit - 1) + 1))
    return list(range(low, high + 1))


def cached_events(
    cache: HotCache,
    db: Database,
    user_id: str,
    session_id: str,
    *,
    start_seq: int | None,
    end_seq: int | None,
    limit: int | None,
    last: int | None,
    seqs: Sequence[int] | None,
    now: datetime,
    shared: bool = False,
    head: Head | None = None,
) -> list[Event] | None:
    """The events of a seq-range read (ascending), through the cache.

    None when the read is left to the database: the session is missing or expired
    (the caller's own read reports it), the read is larger than ``cache.max_events``, or the
    session changed incarnation while the missing events were read. ``shared``: the
    caller never changes the events (see ``HotCache.get_events``). ``head``: the
    session's head as read before (a :class:`HeadPin`'s), instead of reading it now.
    """
    if head is None:
        head = read_head(db, user_id, session_id, now)
    if head is None:
        return None
    last_seq, incarnation = head.last_seq, head.incarnation
    wanted = wanted_seqs(
        last_seq, start_seq=start_seq, end_seq=end_seq, limit=limit, last=last, seqs=seqs
    )
    if wanted is None or len(wanted) > cache.max_events:
        return None
    if not wanted:
        return []
    scope = SessionScope(user_id, session_id, incarnation)
    found = cache.get_events(scope, wanted, shared=shared)
    missing = [seq for seq in wanted if seq not in found]
    if missing:
        low, high = missing[0], missing[-1]
        contiguous = high - low + 1 == len(missing)
        with db.read() as conn:
            # Only from the incarnation whose head was read, live (one statement): a
            # session deleted or created again meanwhile gives no rows.
            rows = event_reads.select_events(
                conn,
                user_id,
                session_id,
                start_seq=low if contiguous else None,
                end_seq=high if contiguous else None,
                seqs=None if contiguous else missing,
                live_at=now,
                incarnation=head.created_at,
            )
        if len(rows) != len(missing):
            return None
        cache.put_events(scope, rows)
        found.update((event.seq, event) for event in rows)
    return [found[seq] for seq in wanted]
