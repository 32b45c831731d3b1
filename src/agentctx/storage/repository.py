"""SQL for sessions, events and turns: small functions over an open connection.

Policy (validation, redaction, size guard, audit, jobs) lives in
``agentctx.sessions``; this module only reads and writes rows. Every function
takes ``user_id`` and filters by it, so no query can reach another user's rows.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Connection,
    Integer,
    RowMapping,
    String,
    and_,
    any_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    union_all,
    update,
)
from sqlalchemy.dialects.postgresql import ARRAY

from agentctx.events import Event, trusted_event
from agentctx.storage import fastsql
from agentctx.storage.schema import USER_DATA_TABLES, events, sessions, turns

# The order ``trusted_event`` takes its arguments in (the Event model's field order); the
# hot read selects columns in it.
EVENT_FIELDS = tuple(Event.model_fields)


@dataclass(frozen=True, slots=True)
class SessionHead:
    """The part of a session row an append needs: where the log ends, and the state version."""

    last_seq: int
    last_hash: str
    state_version: int
    state: dict[str, Any]
    expires_at: datetime | None
    ttl_ms: int | None = None  # the session's own TTL in milliseconds; None: the engine's


def _session_key(user_id: str, session_id: str) -> Any:
    return and_(sessions.c.user_id == user_id, sessions.c.session_id == session_id)


def _event_key(user_id: str, session_id: str) -> Any:
    return and_(events.c.user_id == user_id, events.c.session_id == session_id)


def _seqs_where(user_id: Any, session_id: Any, condition: Any) -> Any:
    """The session's seqs where ``condition`` (on an indexed column) holds, as a subquery.

    Looking up a session's events by a secondary column (call id, turn, idempotency key)
    through ``seq IN (this)`` makes the index a covering one for the subquery. Asked
    for whole rows by that column directly, SQLite's planner (which has no statistics)
    walks the session's primary key instead: every event of the session, JSON and all,
    on each append of a tool call or result, quadratic over a long session.
    """
    return select(events.c.seq).where(
        events.c.user_id == user_id, events.c.session_id == session_id, condition
    )


def _live(now: datetime) -> Any:
    return or_(sessions.c.expires_at.is_(None), sessions.c.expires_at > now)


def bound_live_session() -> Any:
    """WHERE for compiled statements (:mod:`agentctx.storage.fastsql`): the session of
    the bound ``user_id`` and ``session_id``, live at the bound ``now``."""
    return and_(
        sessions.c.user_id == bindparam("user_id"),
        sessions.c.session_id == bindparam("session_id"),
        or_(sessions.c.expires_at.is_(None), sessions.c.expires_at > bindparam("now")),
    )


def _lock_head_statement() -> Any:
    return (
        select(
            sessions.c.last_seq,
            sessions.c.last_hash,
            sessions.c.state_version,
            sessions.c.state,
            sessions.c.expires_at,
            sessions.c.ttl_ms,
        )
        .where(bound_live_session())
        .with_for_update()
    )


def lock_head(conn: Connection, user_id: str, session_id: str, now: datetime) -> SessionHead | None:
    """Read (and on PostgreSQL row-lock) a live session's head; None if missing or expired."""
    found = fastsql.statement(conn, "lock_head", _lock_head_statement).fetch_values(
        conn, {"user_id": user_id, "session_id": session_id, "now": now}
    )
    if not found:
        return None
    last_seq, last_hash, state_version, state, expires_at, ttl_ms = found[0]
    return SessionHead(last_seq, last_hash, state_version, state, expires_at, ttl_ms)


def _session_row_statement() -> Any:
    return select(sessions).where(bound_live_session())


def get_session_row(
    conn: Connection, user_id: str, session_id: str, now: datetime
) -> dict[str, Any] | None:
    """The full row of a live session (column name -> value), or None.

    Read by every window build and session handle refresh: compiled once.
    """
    found = fastsql.statement(conn, "session_row", _session_row_statement)
    rows = found.fetch_values(conn, {"user_id": user_id, "session_id": session_id, "now": now})
    return dict(zip(found.columns, rows[0], strict=True)) if rows else None


def session_expired(conn: Connection, user_id: str, session_id: str, now: datetime) -> bool:
    """Whether the session exists and has expired (and so awaits the sweep)."""
    query = select(sessions.c.session_id).where(
        _session_key(user_id, session_id), sessions.c.expires_at <= now
    )
    return conn.execute(query).first() is not None


def session_exists(conn: Connection, user_id: str, session_id: str, now: datetime) -> bool:
    """Whether a live session exists (every read of events asks: compiled once)."""
    found = fastsql.statement(
        conn,
        "session_exists",
        lambda: select(sessions.c.session_id).where(bound_live_session()).limit(1),
    )
    return bool(
        found.fetch_values(conn, {"user_id": user_id, "session_id": session_id, "now": now})
    )


def _advance_statement(with_expiry: bool) -> Any:
    values: dict[str, Any] = {
        "last_seq": bindparam("new_last_seq"),
        "last_hash": bindparam("new_last_hash"),
        "weight_total": sessions.c.weight_total + bindparam("added_weight"),
        "updated_at": bindparam("new_updated_at", type_=sessions.c.updated_at.type),
    }
    if with_expiry:
        values["expires_at"] = bindparam("new_expires_at", type_=sessions.c.expires_at.type)
    return (
        update(sessions)
        .where(
            sessions.c.user_id == bindparam("user_id"),
            sessions.c.session_id == bindparam("session_id"),
        )
        .values(**values)
    )


def advance_head(
    conn: Connection,
    user_id: str,
    session_id: str,
    *,
    last_seq: int,
    last_hash: str,
    now: datetime,
    expires_at: datetime | None,
    set_expiry: bool = True,
    state: dict[str, Any] | None = None,
    state_version: int | None = None,
    added_weight: int = 0,
) -> None:
    """Move a session's head after an append (and optionally set its state).

    ``added_weight``: the history weights of the appended events, added to the session's
    running total. ``set_expiry=False`` leaves ``expires_at`` (and its index) untouched.
    """
    if state is None:
        values = {
            "user_id": user_id,
            "session_id": session_id,
            "new_last_seq": last_seq,
            "new_last_hash": last_hash,
            "added_weight": added_weight,
            "new_updated_at": now,
            "new_expires_at": expires_at,
        }
        fastsql.statement(
            conn, ("advance_head", set_expiry), lambda: _advance_statement(set_expiry)
        ).execute(conn, values).close()
        return
    changes: dict[str, Any] = {
        "last_seq": last_seq,
        "last_hash": last_hash,
        "weight_total": sessions.c.weight_total + added_weight,
        "updated_at": now,
        "state": state,
        "state_version": state_version,
    }
    if set_expiry:
        changes["expires_at"] = expires_at
    conn.execute(update(sessions).where(_session_key(user_id, session_id)).values(**changes))


def existing_events(
    conn: Connection,
    user_id: str,
    session_id: str,
    *,
    event_ids: Sequence[str],
    idempotency_keys: Sequence[str],
) -> list[RowMapping]:
    """Stored events of the session that match any of the ids or idempotency keys."""
    # One subquery per index (an OR of the two would walk the primary key).
    found: list[Any] = []
    if event_ids:
        found.append(_seqs_where(user_id, session_id, events.c.event_id.in_(list(event_ids))))
    if idempotency_keys:
        keys = list(idempotency_keys)
        found.append(_seqs_where(user_id, session_id, events.c.idempotency_key.in_(keys)))
    if not found:
        return []
    seqs: Any = found[0] if len(found) == 1 else union_all(*found)
    query = select(events).where(_event_key(user_id, session_id), events.c.seq.in_(seqs))
    return list(conn.execute(query).mappings())


def call_event_types(
    conn: Connection, user_id: str, session_id: str, call_ids: Sequence[str]
) -> list[tuple[str, str, dict[str, Any]]]:
    """(call_id, type, meta) of the stored tool calls and results with these call ids,
    in seq order."""
    if len(call_ids) == 1:  # an agent's append: one call or one result, on every step
        found = fastsql.statement(conn, "call_event_types", _call_event_types_statement)
        rows = found.fetch_values(
            conn, {"user_id": user_id, "session_id": session_id, "call_id": call_ids[0]}
        )
        return [(row[0], row[1], row[2]) for row in rows]
    calls = _seqs_where(user_id, session_id, events.c.call_id.in_(list(call_ids)))
    query = (
        select(events.c.call_id, events.c.type, events.c.meta)
        .where(_event_key(user_id, session_id), events.c.seq.in_(calls))
        .order_by(events.c.seq)
    )
    return [(row.call_id, row.type, row.meta) for row in conn.execute(query)]


def _call_event_types_statement() -> Any:
    return (
        select(events.c.call_id, events.c.type, events.c.meta)
        .where(
            events.c.user_id == bindparam("user_id"),
            events.c.session_id == bindparam("session_id"),
            events.c.seq.in_(
                _seqs_where(
                    bindparam("user_id"),
                    bindparam("session_id"),
                    events.c.call_id == bindparam("call_id"),
                )
            ),
        )
        .order_by(events.c.seq)
    )


def insert_events(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert event rows (one driver call for any number)."""
    if rows:
        fastsql.statement(conn, "insert_events", lambda: insert(events)).execute_many(conn, rows)


def _alive_now() -> Any:
    """The session of the bound user and session ids is live at the bound ``now``."""
    return select(sessions.c.session_id).where(bound_live_session()).exists()


def _select_events_statement(
    start: bool, end: bool, limit: bool, newest_first: bool, live: bool
) -> Any:
    query = select(*(events.c[name] for name in EVENT_FIELDS)).where(
        events.c.user_id == bindparam("user_id"), events.c.session_id == bindparam("session_id")
    )
    if live:
        query = query.where(_alive_now())
    if start:
        query = query.where(events.c.seq >= bindparam("start_seq"))
    if end:
        query = query.where(events.c.seq <= bindparam("end_seq"))
    query = query.order_by(events.c.seq.desc() if newest_first else events.c.seq)
    if limit:
        query = query.limit(bindparam("limit", type_=Integer))
    return query


def seq_in_list(dialect: str, column: Any = events.c.seq) -> Any:
    """``column`` (``events.seq`` by default) is one of the bound ``seqs``: one parameter
    for any number of them (see :func:`in_bound_list` and :func:`seq_list_value`), so
    the statement compiles once."""
    return in_bound_list(dialect, column, "seqs", BigInteger)


def seq_list_value(dialect: str, seqs: Sequence[int]) -> Any:
    """The ``seqs`` parameter of :func:`seq_in_list`."""
    if dialect == "postgresql":
        return list(seqs)
    return "[" + ",".join(str(int(seq)) for seq in seqs) + "]"


def in_bound_list(dialect: str, column: Any, name: str, element: Any) -> Any:
    """``column`` is one of the values (of type ``element``) bound as ``name``, one
    parameter for any number of them: an array on PostgreSQL, a JSON array on SQLite
    (:func:`seq_list_value`, :func:`text_list_value`)."""
    if dialect == "postgresql":
        return column == any_(bindparam(name, type_=ARRAY(element)))
    listed = func.json_each(bindparam(name, type_=String)).table_valued("value")
    return column.in_(select(listed.c.value))


def text_list_value(dialect: str, values: Sequence[str]) -> Any:
    """The parameter of :func:`in_bound_list` for strings."""
    if dialect == "postgresql":
        return list(values)
    return json.dumps(list(values), ensure_ascii=False)


def _select_seqs_statement(dialect: str, live: bool) -> Any:
    """Events by a list of seqs, as one statement for any number of them."""
    query = select(*(events.c[name] for name in EVENT_FIELDS)).where(
        events.c.user_id == bindparam("user_id"),
        events.c.session_id == bindparam("session_id"),
        seq_in_list(dialect),
    )
    if live:
        query = query.where(_alive_now())
    return query.order_by(events.c.seq)


def _select_system_events(  # noqa: PLR0917 - select_events' own filters
    conn: Connection,
    user_id: str,
    session_id: str,
    start_seq: int | None,
    end_seq: int | None,
    live_at: datetime | None,
) -> list[Event]:
    """A session's system events (its instructions), read by every window build through
    the partial index ``ix_events_system``: a few rows, however long the log. The index
    is named on SQLite, whose planner (without statistics) would walk the primary key."""
    dialect = conn.dialect.name
    shape = (start_seq is not None, end_seq is not None, live_at is not None)
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
        },
    )
    return [trusted_event(*row) for row in rows]


def _system_events_statement(dialect: str, start: bool, end: bool, live: bool) -> Any:
    source = "events INDEXED BY ix_events_system" if dialect == "sqlite" else "events"
    conditions = ["user_id = :user_id", "session_id = :session_id", "type = 'system'"]
    if start:
        conditions.append("seq >= :start_seq")
    if end:
        conditions.append("seq <= :end_seq")
    if live:
        conditions.append(
            "EXISTS (SELECT 1 FROM sessions AS s WHERE s.user_id = :user_id "
            "AND s.session_id = :session_id AND (s.expires_at IS NULL OR s.expires_at > :now))"
        )
    statement = text(
        f"SELECT {', '.join(EVENT_FIELDS)} FROM {source} "
        f"WHERE {' AND '.join(conditions)} ORDER BY seq"
    )
    if live:
        statement = statement.bindparams(bindparam("now", type_=sessions.c.expires_at.type))
    return statement.columns(*(events.c[name] for name in EVENT_FIELDS))


def _select_by_seqs(
    conn: Connection,
    user_id: str,
    session_id: str,
    seqs: Sequence[int],
    live_at: datetime | None,
) -> list[Event]:
    wanted = sorted({int(seq) for seq in seqs})
    if not wanted:
        return []
    dialect = conn.dialect.name
    found = fastsql.statement(
        conn,
        ("select_events_by_seqs", dialect, live_at is not None),
        lambda: _select_seqs_statement(dialect, live_at is not None),
    )
    rows = found.fetch_values(
        conn,
        {
            "user_id": user_id,
            "session_id": session_id,
            "seqs": seq_list_value(dialect, wanted),
            "now": live_at,
        },
    )
    return [trusted_event(*row) for row in rows]


def newest_events_query(
    conn: Connection, user_id: str, session_id: str, *, limit: int, live_at: datetime
) -> tuple[str, Any]:
    """The SQL and driver parameters ``select_events`` runs for the newest ``limit`` events.

    For ``EXPLAIN``: the hot read bypasses SQLAlchemy's execution events.
    """
    shape = (False, False, True, True, True)
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
) -> list[Event]:
    """Events of one session in seq order (or newest first), filtered.

    ``seqs``: only these seqs (e.g. retrieved events). ``live_at``: return nothing unless
    the session is live (not expired) at that time, checked in the same statement.
    """
    if seqs is not None and turn_id is None and not types and limit is None and not newest_first:
        # Retrieved events and their neighbours: one compiled statement for any list.
        by_seq = _select_by_seqs(conn, user_id, session_id, seqs, live_at)
        return [
            e
            for e in by_seq
            if (start_seq is None or e.seq >= start_seq) and (end_seq is None or e.seq <= end_seq)
        ]
    if list(types or ()) == ["system"] and turn_id is None and seqs is None and limit is None:
        return _select_system_events(conn, user_id, session_id, start_seq, end_seq, live_at)
    if turn_id is None and not types and seqs is None:
        # The common shapes (a seq range, the newest N) run as compiled statements.
        shape = (
            start_seq is not None,
            end_seq is not None,
            limit is not None,
            newest_first,
            live_at is not None,
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
            },
        )
        return [trusted_event(*row) for row in rows]
    query = select(events).where(_event_key(user_id, session_id))
    if live_at is not None:
        alive = select(sessions.c.session_id).where(
            _session_key(user_id, session_id), _live(live_at)
        )
        query = query.where(alive.exists())
    if start_seq is not None:
        query = query.where(events.c.seq >= start_seq)
    if end_seq is not None:
        query = query.where(events.c.seq <= end_seq)
    if turn_id is not None:
        query = query.where(
            events.c.seq.in_(_seqs_where(user_id, session_id, events.c.turn_id == turn_id))
        )
    if types:
        query = query.where(events.c.type.in_(list(types)))
    if seqs is not None:
        query = query.where(events.c.seq.in_(sorted(set(seqs))))
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
            .where(_event_key(user_id, session_id), events.c.seq > after)
            .order_by(events.c.seq)
            .limit(chunk)
        )
        rows = list(conn.execute(query).mappings())
        yield from rows
        if len(rows) < chunk:
            return
        after = rows[-1]["seq"]


def _turn_status_statement() -> Any:
    return select(turns.c.status).where(
        turns.c.user_id == bindparam("user_id"),
        turns.c.session_id == bindparam("session_id"),
        turns.c.turn_id == bindparam("turn_id"),
    )


def turn_is_open(conn: Connection, user_id: str, session_id: str, turn_id: str) -> bool:
    """Whether the turn exists and has not ended."""
    found = fastsql.statement(conn, "turn_status", _turn_status_statement).fetch_values(
        conn, {"user_id": user_id, "session_id": session_id, "turn_id": turn_id}
    )
    return bool(found) and found[0][0] == "open"


def insert_turn(conn: Connection, row: dict[str, Any]) -> None:
    """Record a turn."""
    fastsql.statement(conn, "insert_turn", lambda: insert(turns)).execute(conn, row).close()


def end_turn(
    conn: Connection, user_id: str, session_id: str, turn_id: str, *, status: str, now: datetime
) -> RowMapping | None:
    """Close an open turn, filling its seq range from its events. Returns the updated row."""
    stats = conn.execute(
        select(func.min(events.c.seq), func.max(events.c.seq), func.count()).where(
            _event_key(user_id, session_id), events.c.turn_id == turn_id
        )
    ).one()
    key = and_(
        turns.c.user_id == user_id, turns.c.session_id == session_id, turns.c.turn_id == turn_id
    )
    result = conn.execute(
        update(turns)
        .where(key, turns.c.status == "open")
        .values(
            status=status, ended_at=now, first_seq=stats[0], last_seq=stats[1], event_count=stats[2]
        )
    )
    if result.rowcount == 0:
        return None
    return conn.execute(select(turns).where(key)).mappings().first()


def select_turns(
    conn: Connection, user_id: str, session_id: str, turn_id: str | None = None
) -> list[RowMapping]:
    """The turns of a session (or the one named ``turn_id``), oldest first."""
    query = select(turns).where(turns.c.user_id == user_id, turns.c.session_id == session_id)
    if turn_id is not None:
        query = query.where(turns.c.turn_id == turn_id)
    return list(conn.execute(query.order_by(turns.c.started_at, turns.c.turn_id)).mappings())


def delete_rows(
    conn: Connection, table: Any, user_id: str, session_ids: Iterable[str] | None
) -> int:
    """Delete a user's rows of ``table`` (all of them, or only of some sessions)."""
    statement = delete(table).where(table.c.user_id == user_id)
    if session_ids is not None:
        statement = statement.where(table.c.session_id.in_(list(session_ids)))
    return int(conn.execute(statement).rowcount or 0)


def delete_session_rows(
    conn: Connection, user_id: str, session_ids: Iterable[str] | None
) -> dict[str, int]:
    """Delete a user's sessions (all, or some) with every row that hangs off them.

    Returns the rows deleted per table. Tables are emptied children first.
    """
    ids = list(session_ids) if session_ids is not None else None
    return {table.name: delete_rows(conn, table, user_id, ids) for table in USER_DATA_TABLES}
