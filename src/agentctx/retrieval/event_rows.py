"""What a search reads of the events it ranks: a few columns, for a list of seqs.

The rankings give seqs; a search reports each hit's id, turn, time, type, author and
token estimate (:func:`hit_rows`), and the context builder's retrieval only the token
estimates (:func:`event_column`), which spares it decoding the rest. One compiled
statement per set of columns, for any number of seqs. A query that may name someone
needs the session's authors (:func:`session_authors`), and looking for another name
an author goes by, the text of a few events (:func:`authored_texts`). The neighbours of
hits are read by their turns (:func:`turn_neighbours`).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, func, select

from agentctx.retrieval.participants import ParticipantCache
from agentctx.retrieval.text import stored_event_text
from agentctx.storage import fastsql
from agentctx.storage.schema import events
from agentctx.storage.where import rows_by_seqs, seq_list_value

HIT_COLUMNS = ("seq", "event_id", "turn_id", "ts", "type", "author", "token_estimate")
"""What a search reports of each hit, in :class:`~agentctx.retrieval.SearchHit` order."""


def hit_rows(
    conn: Connection, user_id: str, session_id: str, seqs: Iterable[int]
) -> dict[int, tuple[Any, ...]]:
    """seq -> (seq, event_id, turn_id, ts, type, author, token_estimate) of the given
    events of the session (events it does not hold are absent)."""
    return {int(row[0]): tuple(row) for row in _rows(conn, user_id, session_id, seqs, HIT_COLUMNS)}


def event_column(
    conn: Connection, user_id: str, session_id: str, seqs: Iterable[int], column: str
) -> dict[int, Any]:
    """seq -> one column of the given events of the session."""
    return {
        int(seq): value for seq, value in _rows(conn, user_id, session_id, seqs, ("seq", column))
    }


def session_authors(
    conn: Connection, cache: ParticipantCache, session: tuple[str, str]
) -> frozenset[str]:
    """The authors of the session's events (``session`` is (user id, session id)), read
    incrementally: ``cache`` knows those up to some seq, and only newer events are read,
    one row per author."""
    known = cache.get(session)
    after = known[0] if known else 0
    user_id, session_id = session
    rows = fastsql.statement(conn, "session_authors", _authors_statement).fetch_values(
        conn, {"user_id": user_id, "session_id": session_id, "after": after}
    )
    if not rows:
        return known[1] if known else frozenset()
    return cache.put(
        session,
        max(int(seq) for _, seq in rows),
        [a for a, _ in rows if isinstance(a, str) and a],
    )


def _authors_statement() -> Any:
    return (
        select(events.c.author, func.max(events.c.seq))
        .where(
            events.c.user_id == bindparam("user_id"),
            events.c.session_id == bindparam("session_id"),
            events.c.seq > bindparam("after"),
        )
        .group_by(events.c.author)
    )


def authored_texts(
    conn: Connection, session: tuple[str, str], seqs: Sequence[int]
) -> list[tuple[str | None, str]]:
    """(author, searchable text) of the given events of the session (``session`` is
    (user id, session id))."""
    if not seqs:
        return []
    user_id, session_id = session
    rows = conn.execute(
        select(events.c.author, events.c.parts, events.c.payload, events.c.meta).where(
            events.c.user_id == user_id,
            events.c.session_id == session_id,
            events.c.seq.in_(bindparam("seqs", expanding=True)),
        ),
        {"seqs": list(seqs)},
    ).all()
    return [(author, stored_event_text(parts, pay, meta)) for author, parts, pay, meta in rows]


def turn_neighbours(
    conn: Connection,
    session: tuple[str, str],
    seqs: Sequence[int],
    radius: int,
    same_turn: bool,
) -> list[int]:
    """Seqs of the session within ``radius`` of the given ones (not themselves), oldest
    first; with ``same_turn`` only those in the same turn as the event they neighbour."""
    if not seqs or radius < 1:
        return []
    given = set(seqs)
    wanted = {n for s in given for n in range(max(1, s - radius), s + radius + 1)}
    turn_of = event_column(conn, session[0], session[1], wanted, "turn_id")
    found: set[int] = set()
    for seq in given:
        if seq not in turn_of:
            continue
        for near in range(seq - radius, seq + radius + 1):
            if near in given or near not in turn_of:
                continue
            if same_turn and turn_of[near] != turn_of[seq]:
                continue
            found.add(near)
    return sorted(found)


def _rows(
    conn: Connection,
    user_id: str,
    session_id: str,
    seqs: Iterable[int],
    columns: tuple[str, ...],
) -> Sequence[Sequence[Any]]:
    wanted = sorted(seqs)
    if not wanted:
        return []
    dialect = conn.dialect.name
    found = fastsql.statement(
        conn, ("search_event_rows", columns, dialect), lambda: _statement(dialect, columns)
    )
    return found.fetch_values(
        conn,
        {
            "user_id": user_id,
            "session_id": session_id,
            "seqs": seq_list_value(dialect, wanted),
        },
    )


def _statement(dialect: str, columns: tuple[str, ...]) -> Any:
    return rows_by_seqs(
        dialect,
        events,
        columns,
        events.c.user_id == bindparam("user_id"),
        events.c.session_id == bindparam("session_id"),
    )
