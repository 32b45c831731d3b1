"""WHERE clauses the storage modules share: a session's and its events' keys, a session
being live, and a list of values bound as one parameter (so a statement compiles once
for any number of them)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import (
    BigInteger,
    Select,
    String,
    Table,
    and_,
    any_,
    bindparam,
    func,
    or_,
    select,
    true,
)
from sqlalchemy.dialects.postgresql import ARRAY

from agentctx.storage.schema import events, sessions


def session_key(user_id: str, session_id: str) -> Any:
    """The session row of ``user_id`` and ``session_id``."""
    return and_(sessions.c.user_id == user_id, sessions.c.session_id == session_id)


def event_key(user_id: str, session_id: str) -> Any:
    """The event rows of the session of ``user_id`` and ``session_id``."""
    return and_(events.c.user_id == user_id, events.c.session_id == session_id)


def by_index(dialect: str, user_id: Any, session_id: Any, condition: Any) -> Any:
    """WHERE, beside :func:`event_key`, for the session's events where ``condition`` on a
    secondary indexed column holds (call id, turn), in the form each planner takes
    through that column's index. The rows come in no set order: the caller sorts them
    (an ``ORDER BY seq`` leads PostgreSQL's planner to the primary key).

    SQLite's planner, which has no statistics, walks the session's primary key when
    asked for whole rows by such a column directly: every event of the session, JSON
    and all. Through ``seq IN (the column's seqs)`` the index is a covering one for the
    subquery.

    PostgreSQL's planner takes that same subquery the wrong way round whenever it
    estimates the session at one row (a table not analyzed yet, or a session newer than
    its statistics, which in a small deployment is every new session): the session's
    primary key as the outer side of a nested loop, the subquery probed for each of its
    events, 200 ms a lookup in a session of 900 events. Asked directly, it uses the
    column's index with statistics or without.
    """
    if dialect == "postgresql":
        return condition
    return events.c.seq.in_(
        select(events.c.seq).where(
            events.c.user_id == user_id, events.c.session_id == session_id, condition
        )
    )


def session_live(now: datetime) -> Any:
    """The session row has not expired at ``now``."""
    return or_(sessions.c.expires_at.is_(None), sessions.c.expires_at > now)


def bound_live_session() -> Any:
    """WHERE for compiled statements (:mod:`agentctx.storage.fastsql`): the session of
    the bound ``user_id`` and ``session_id``, live at the bound ``now``."""
    return and_(
        sessions.c.user_id == bindparam("user_id"),
        sessions.c.session_id == bindparam("session_id"),
        or_(sessions.c.expires_at.is_(None), sessions.c.expires_at > bindparam("now")),
    )


def seq_in_list(dialect: str, column: Any = events.c.seq) -> Any:
    """``column`` (``events.seq`` by default) is one of the bound ``seqs``: one parameter
    for any number of them (see :func:`in_bound_list` and :func:`seq_list_value`), so
    the statement compiles once."""
    return in_bound_list(dialect, column, "seqs", BigInteger)


def rows_by_seqs(dialect: str, table: Table, columns: Sequence[str], *key: Any) -> Select[Any]:
    """SELECT ``columns`` of the rows of ``table`` that ``key`` picks (conditions on the
    columns before ``seq`` in its primary key) whose ``seq`` is one of the bound
    ``seqs`` (:func:`seq_list_value`), in no set order (see :func:`rows_in_list`)."""
    return rows_in_list(dialect, table, columns, ("seq", "seqs", BigInteger), *key)


def rows_in_list(
    dialect: str,
    table: Table,
    columns: Sequence[str],
    listed: tuple[str, str, Any],
    *key: Any,
) -> Select[Any]:
    """SELECT ``columns`` of the rows of ``table`` that ``key`` picks (conditions on the
    columns before the listed one in an index) whose column ``listed[0]`` is one of the
    values bound as ``listed[1]`` (of type ``listed[2]``; see :func:`in_bound_list`), in
    no set order.

    SQLite probes the key for each value of ``column IN (the list)``. PostgreSQL gets one
    probe per value, spelled out (each value of the list joined to a subquery of one
    row): asked ``column = ANY(values)``, its planner reads every row of the key whenever
    it estimates the key at a row (a session newer than the table's statistics): 610
    events for 16 seqs after 100 turns, 10,900 terms for 14 after 600 events. The LIMIT
    keeps it from turning the probes back into that read.
    """
    column_name, name, element = listed
    column = table.c[column_name]
    if dialect != "postgresql":
        return select(*(table.c[c] for c in columns)).where(
            *key, in_bound_list(dialect, column, name, element)
        )
    values = func.unnest(bindparam(name, type_=ARRAY(element)))
    wanted = values.table_valued(column_name).render_derived(name="wanted")
    one = (
        select(*(table.c[c] for c in columns))
        .where(*key, column == wanted.c[column_name])
        .limit(1)
        .lateral("one")
    )
    return select(*(one.c[c] for c in columns)).select_from(wanted).join(one, true())


def seq_list_value(dialect: str, seqs: Sequence[int]) -> Any:
    """The ``seqs`` parameter of :func:`seq_in_list` and :func:`rows_by_seqs`."""
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
