"""SQL for sessions, their heads, appends and turns: small functions over an open
connection (reading events: :mod:`agentctx.storage.event_reads`).

Policy (validation, redaction, size guard, audit, jobs) lives in
``agentctx.sessions``; this module only reads and writes rows. Every function
takes ``user_id`` and filters by it, so no query can reach another user's rows.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from operator import itemgetter
from typing import Any

from sqlalchemy import (
    Connection,
    RowMapping,
    String,
    and_,
    bindparam,
    delete,
    func,
    insert,
    select,
    union_all,
    update,
)

from agentctx.storage import fastsql
from agentctx.storage.schema import USER_DATA_TABLES, events, sessions, turns
from agentctx.storage.where import (
    bound_live_session,
    by_index,
    event_key,
    in_bound_list,
    session_key,
    text_list_value,
)


@dataclass(frozen=True, slots=True)
class SessionHead:
    """The part of a session row an append needs: where the log ends, and the state version."""

    last_seq: int
    last_hash: str
    state_version: int
    state: dict[str, Any]
    expires_at: datetime | None
    ttl_ms: int | None = None  # the session's own TTL in milliseconds; None: the engine's


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
    return send_lock_head(conn, user_id, session_id, now).result()


def send_lock_head(
    conn: Connection, user_id: str, session_id: str, now: datetime
) -> fastsql.Sent[SessionHead | None]:
    """:func:`lock_head`, its answer read later: reads sent one after the other wait for
    the server together (:class:`~agentctx.storage.fastsql.SentRead`)."""
    sent = fastsql.statement(conn, "lock_head", _lock_head_statement).send(
        conn, {"user_id": user_id, "session_id": session_id, "now": now}
    )
    return sent.answer(_head_of)


def _head_of(rows: list[list[Any]]) -> SessionHead | None:
    if not rows:
        return None
    last_seq, last_hash, state_version, state, expires_at, ttl_ms = rows[0]
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
    rows = found.fetch_mappings(conn, {"user_id": user_id, "session_id": session_id, "now": now})
    return rows[0] if rows else None


def session_expired(conn: Connection, user_id: str, session_id: str, now: datetime) -> bool:
    """Whether the session exists and has expired (and so awaits the sweep)."""
    query = select(sessions.c.session_id).where(
        session_key(user_id, session_id), sessions.c.expires_at <= now
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
    conn.execute(update(sessions).where(session_key(user_id, session_id)).values(**changes))


def existing_events(
    conn: Connection,
    user_id: str,
    session_id: str,
    *,
    event_ids: Sequence[str],
    idempotency_keys: Sequence[str],
) -> list[RowMapping]:
    """Stored events of the session that match any of the ids or idempotency keys."""
    # One select per index: an OR of the two would walk the primary key on SQLite, and
    # on PostgreSQL a lookup through seqs (see by_index) may walk it too.
    selects: list[Any] = []
    if event_ids:
        selects.append(_by_event_ids(conn.dialect.name, user_id, session_id, event_ids))
    if idempotency_keys:
        keyed = events.c.idempotency_key.in_(list(idempotency_keys))
        selects.append(select(events).where(event_key(user_id, session_id), keyed))
    if not selects:
        return []
    query: Any = selects[0] if len(selects) == 1 else union_all(*selects)
    # An event named by its id and by its key comes back once.
    return list({row["seq"]: row for row in conn.execute(query).mappings()}.values())


def _by_event_ids(dialect: str, user_id: str, session_id: str, event_ids: Sequence[str]) -> Any:
    """The session's events with these ids, through the event id's unique index.

    On PostgreSQL that index leads with the event id (migration 0019), and a planner
    that estimates the session at one row finds the primary key as cheap: the events
    are picked by id first, in a subquery it cannot merge (its OFFSET), then kept if
    they are the session's."""
    wanted = events.c.event_id.in_(list(event_ids))
    if dialect != "postgresql":
        return select(events).where(event_key(user_id, session_id), wanted)
    by_id = select(events).where(wanted).offset(0).subquery("by_id")
    return select(by_id).where(by_id.c.user_id == user_id, by_id.c.session_id == session_id)


def call_event_types(
    conn: Connection, user_id: str, session_id: str, call_ids: Sequence[str]
) -> list[tuple[str, str, dict[str, Any]]]:
    """(call_id, type, meta) of the stored tool calls and results with these call ids,
    in seq order."""
    return send_call_event_types(conn, user_id, session_id, call_ids).result()


def send_call_event_types(
    conn: Connection, user_id: str, session_id: str, call_ids: Sequence[str]
) -> fastsql.Sent[list[tuple[str, str, dict[str, Any]]]]:
    """:func:`call_event_types`, its answer read later."""
    values: dict[str, Any] = {"user_id": user_id, "session_id": session_id}
    dialect = conn.dialect.name
    several = len(call_ids) > 1  # an agent's append has one: a call or a result
    if several:
        values["call_ids"] = text_list_value(dialect, call_ids)
    else:
        values["call_id"] = call_ids[0]
    found = fastsql.statement(
        conn, ("call_event_types", several), lambda: _call_events_statement(dialect, several)
    )
    return found.send(conn, values).answer(_call_rows)


_SEQ_FIRST = itemgetter(0)


def _call_rows(rows: list[list[Any]]) -> list[tuple[str, str, dict[str, Any]]]:
    return [(row[1], row[2], row[3]) for row in sorted(rows, key=_SEQ_FIRST)]


def _call_events_statement(dialect: str, several: bool) -> Any:
    """(seq, call_id, type, meta) of the session's events with the bound ``call_id``
    (or, ``several``, any of ``call_ids``), in no set order (see :func:`by_index`)."""
    calls = (
        in_bound_list(dialect, events.c.call_id, "call_ids", String)
        if several
        else events.c.call_id == bindparam("call_id")
    )
    user_id: Any = bindparam("user_id")
    session_id: Any = bindparam("session_id")
    return select(events.c.seq, events.c.call_id, events.c.type, events.c.meta).where(
        events.c.user_id == user_id,
        events.c.session_id == session_id,
        by_index(dialect, user_id, session_id, calls),
    )


def insert_events(conn: Connection, rows: Sequence[dict[str, Any]]) -> None:
    """Insert event rows (one driver call for any number)."""
    if rows:
        fastsql.statement(conn, "insert_events", lambda: insert(events)).execute_many(conn, rows)


def _turn_status_statement() -> Any:
    return select(turns.c.status).where(
        turns.c.user_id == bindparam("user_id"),
        turns.c.session_id == bindparam("session_id"),
        turns.c.turn_id == bindparam("turn_id"),
    )


def send_turn_is_open(
    conn: Connection, user_id: str, session_id: str, turn_id: str
) -> fastsql.Sent[bool]:
    """Whether the turn exists and has not ended, its answer read later (a write reads
    it with the others it sends together)."""
    sent = fastsql.statement(conn, "turn_status", _turn_status_statement).send(
        conn, {"user_id": user_id, "session_id": session_id, "turn_id": turn_id}
    )
    return sent.answer(lambda rows: bool(rows) and rows[0][0] == "open")


def insert_turn(conn: Connection, row: dict[str, Any]) -> None:
    """Record a turn."""
    fastsql.statement(conn, "insert_turn", lambda: insert(turns)).execute(conn, row).close()


def end_turn(
    conn: Connection, user_id: str, session_id: str, turn_id: str, *, status: str, now: datetime
) -> RowMapping | None:
    """Close an open turn, filling its seq range from its events. Returns the updated row."""
    stats = conn.execute(
        select(func.min(events.c.seq), func.max(events.c.seq), func.count()).where(
            event_key(user_id, session_id), events.c.turn_id == turn_id
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
