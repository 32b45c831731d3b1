"""Reading a session's events: by seq range, the newest N, by a list of seqs, its system
events, or all of them in chunks. Every function takes ``user_id`` and filters by it, so
no query can reach another user's rows.

The shapes an agent's calls read on every step (a window's newest events, retrieved
seqs, the system events) run as compiled statements (:mod:`agentctx.storage.fastsql`);
the rest through SQLAlchemy.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from datetime import datetime
from operator import attrgetter
from typing import Any

from sqlalchemy import Connection, Integer, RowMapping, bindparam, select, text

from agentctx.events import Event, trusted_event
from agentctx.storage import fastsql
from agentctx.storage.schema import events, sessions
from agentctx.storage.where import (
    bound_live_session,
    by_index,
    event_key,
    rows_by_seqs,
    seq_list_value,
    session_key,
    session_live,
)

# The order ``trusted_event`` takes its arguments in (the Event model's field order); the
# hot read selects columns in it.
EVENT_FIELDS = tuple(Event.model_fields)


def _alive_now(same: bool = False) -> Any:
    """The session of the bound user and session ids is live at the bound ``now``; with
    ``same``, it is also the incarnation created at the bound ``created_at``."""
    query = select(sessions.c.session_id).where(bound_live_session())
    if same:
        query = query.where(sessions.c.created_at == bindparam("created_at"))
    return query.exists()


def _select_events_statement(  # noqa: PLR0917 - a compiled statement's shape, unpacked
    start: bool, end: bool, limit: bool, newest_first: bool, live: bool, same: bool = False
) -> Any:
    query = select(*(events.c[name] for name in EVENT_FIELDS)).where(
        events.c.user_id == bindparam("user_id"), events.c.session_id == bindparam("session_id")
    )
    if live:
        query = query.where(_alive_now(same))
    if start:
        query = query.where(events.c.seq >= bindparam("start_seq"))
    if end:
        query = query.where(events.c.seq <= bindparam("end_seq"))
    query = query.order_by(events.c.seq.desc() if newest_first else events.c.seq)
    if limit:
        query = query.limit(bindparam("limit", type_=Integer))
    return query


def _select_seqs_statement(dialect: str, live: bool, same: bool = False) -> Any:
    """Events by a list of seqs, as one statement for any number of them."""
    query = rows_by_seqs(
        dialect,
        events,
        EVENT_FIELDS,
        events.c.user_id == bindparam("user_id"),
        events.c.session_id == bindparam("session_id"),
    )
    if live:
        query = query.where(_alive_now(same))
    return query.order_by(query.selected_columns["seq"])


def _select_system_events(  # noqa: PLR0917 - select_events' own filters
    conn: Connection,
    user_id: str,
    session_id: str,
    start_seq: int | None,
    end_seq: int | None,
    live_at: datetime | None,
    incarnation: datetime | None,
) -> list[Event]:
    """A session's system events (its instructions), read by every window build through
    the partial index ``ix_events_system``: a few rows, however long the log. The index
    is named on SQLite, whose planner (without statistics) would walk the primary key."""
    dialect = conn.dialect.name
    shape = (
        start_seq is not None,
        end_seq is not None,
        live_at is not None,
        incarnation is not None,
    )
    found = fastsql.statement(
        conn,
        ("select_system_events", dialect, *shape),
        lambda: _system_events_statement(dialect, *shape),
    )
    rows = found.fetch_values(
        conn,
        {
            "user_id": user_id,
            "session_id": session_id,
            "start_seq": start_seq,
            "end_seq": end_seq,
            "now": live_at,
            "created_at": incarnation,
        },
    )
    return [trusted_event(*row) for row in rows]


def _system_events_statement(dialect: str, start: bool, end: bool, live: bool, same: bool) -> Any:
    source = "events INDEXED BY ix_events_system" if dialect == "sqlite" else "events"
    conditions = ["user_id = :user_id", "session_id = :session_id", "type = 'system'"]
    if start:
        conditions.append("seq >= :start_seq")
    if end:
        conditions.append("seq <= :end_seq")
    if live:
        incarnation = " AND s.created_at = :created_at" if same else ""
        conditions.append(
            "EXISTS (SELECT 1 FROM sessions AS s WHERE s.user_id = :user_id "
            "AND s.session_id = :session_id AND (s.expires_at IS NULL OR s.expires_at > :now)"
            f"{incarnation})"
        )
    statement = text(
        f"SELECT {', '.join(EVENT_FIELDS)} FROM {source} "
        f"WHERE {' AND '.join(conditions)} ORDER BY seq"
    )
    if live:
        statement = statement.bindparams(bindparam("now", type_=sessions.c.expires_at.type))
    if live and same:
        statement = statement.bindparams(bindparam("created_at", type_=sessions.c.created_at.type))
    return statement.columns(*(events.c[name] for name in EVENT_FIELDS))


def _select_by_seqs(  # noqa: PLR0917 - select_events' own filters
    conn: Connection,
    user_id: str,
    session_id: str,
    seqs: Sequence[int],
    live_at: datetime | None,
    incarnation: datetime | None,
) -> list[Event]:
    wanted = sorted({int(seq) for seq in seqs})
    if not wanted:
        return []
    dialect = conn.dialect.name
    live, same = live_at is not None, incarnation is not None
    found = fastsql.statement(
        conn,
        ("select_events_by_seqs", dialect, live, same),
        lambda: _select_seqs_statement(dialect, live, same),
    )
    rows = found.fetch_values(
        conn,
        {
            "user_id": user_id,
            "session_id": session_id,
            "seqs": seq_list_value(dialect, wanted),
            "now": live_at,
            "created_at": incarnation,
        },
    )
    return [trusted_event(*row) for row in rows]


def newest_events_query(
    conn: Connection, user_id: str, session_id: str, *, limit: int, live_at: datetime
) -> tuple[str, Any]:
    """The SQL and driver parameters ``select_events`` runs for the newest ``limit`` events.

    For ``EXPLAIN``: the hot read bypasses SQLAlchemy's execution events.
    """
    shape = (False, False, True, True, True, False)
    found = fastsql.statement(
        conn, ("select_events", *shape), lambda: _select_events_statement(*shape)
    )
    values = {
        "user_id": user_id,
        "session_id": session_id,
        "now": live_at,
        "start_seq": None,
        "end_seq": None,
        "limit": limit,
    }
    return found.sql, found.params(values)


_SEQ_OF = attrgetter("seq")


def select_events(
    conn: Connection,
    user_id: str,
    session_id: str,
    *,
    start_seq: int | None = None,
    end_seq: int | None = None,
    turn_id: str | None = None,
    types: Sequence[str] | None = None,
    limit: int | None = None,
    newest_first: bool = False,
    live_at: datetime | None = None,
    seqs: Sequence[int] | None = None,
    incarnation: datetime | None = None,
) -> list[Event]:
    """Events of one session in seq order (or newest first), filtered.

    ``seqs``: only these seqs (e.g. retrieved events). ``live_at``: return nothing unless
    the session is live (not expired) at that time, checked in the same statement; with
    ``incarnation`` too, unless it is the session created then (not one deleted and
    created again with the same id), in the same statement.
    """
    if incarnation is not None and live_at is None:
        raise ValueError("incarnation needs live_at")
    if seqs is not None and turn_id is None and not types and limit is None and not newest_first:
        # Retrieved events and their neighbours: one compiled statement for any list.
        by_seq = _select_by_seqs(conn, user_id, session_id, seqs, live_at, incarnation)
        return [
            e
            for e in by_seq
            if (start_seq is None or e.seq >= start_seq) and (end_seq is None or e.seq <= end_seq)
        ]
    if list(types or ()) == ["system"] and turn_id is None and seqs is None and limit is None:
        return _select_system_events(
            conn, user_id, session_id, start_seq, end_seq, live_at, incarnation
        )
    if turn_id is None and not types and seqs is None:
        # The common shapes (a seq range, the newest N) run as compiled statements.
        shape = (
            start_seq is not None,
            end_seq is not None,
            limit is not None,
            newest_first,
            live_at is not None,
            incarnation is not None,
        )
        found = fastsql.statement(
            conn, ("select_events", *shape), lambda: _select_events_statement(*shape)
        )
        rows = found.fetch_values(
            conn,
            {
                "user_id": user_id,
                "session_id": session_id,
                "now": live_at,
                "start_seq": start_seq,
                "end_seq": end_seq,
                "limit": limit,
                "created_at": incarnation,
            },
        )
        return [trusted_event(*row) for row in rows]
    query = select(events).where(event_key(user_id, session_id))
    if live_at is not None:
        alive = select(sessions.c.session_id).where(
            session_key(user_id, session_id), session_live(live_at)
        )
        if incarnation is not None:
            alive = alive.where(sessions.c.created_at == incarnation)
        query = query.where(alive.exists())
    if start_seq is not None:
        query = query.where(events.c.seq >= start_seq)
    if end_seq is not None:
        query = query.where(events.c.seq <= end_seq)
    if types:
        query = query.where(events.c.type.in_(list(types)))
    if seqs is not None:
        query = query.where(events.c.seq.in_(sorted(set(seqs))))
    if turn_id is not None:
        # A turn's events, through the turn's index (see by_index): ordered here, since an
        # ORDER BY on seq would lead PostgreSQL's planner to the primary key.
        by_turn = query.where(
            by_index(conn.dialect.name, user_id, session_id, events.c.turn_id == turn_id)
        )
        in_turn = sorted(
            (Event.from_row(row) for row in conn.execute(by_turn).mappings()),
            key=_SEQ_OF,
            reverse=newest_first,
        )
        return in_turn if limit is None else in_turn[:limit]
    query = query.order_by(events.c.seq.desc() if newest_first else events.c.seq)
    if limit is not None:
        query = query.limit(limit)
    return [Event.from_row(row) for row in conn.execute(query).mappings()]


def iter_event_rows(
    conn: Connection, user_id: str, session_id: str, *, chunk: int = 2000
) -> Iterator[RowMapping]:
    """Every event of a session in seq order, read in bounded chunks (for verify/export)."""
    after = 0
    while True:
        query = (
            select(events)
            .where(event_key(user_id, session_id), events.c.seq > after)
            .order_by(events.c.seq)
            .limit(chunk)
        )
        rows = list(conn.execute(query).mappings())
        yield from rows
        if len(rows) < chunk:
            return
        after = rows[-1]["seq"]
