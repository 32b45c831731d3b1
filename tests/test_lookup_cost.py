"""Looking up a session's events by a secondary column reads those events, not the session.

An append of a tool call or result looks up the call id's earlier events; an append
with an idempotency key looks the key up; a turn's end reads the turn's events. Each
must cost the same in a long session as in a short one. On SQLite, whose planner has
no statistics, the plain form of these queries walks the session's primary key, every
event with its JSON: an agent's step then grew with the whole history (about 1 ms a
tool call at 200 turns). The work is counted in SQLite virtual-machine steps.

PostgreSQL's planner estimates a session it has no statistics for at one row: in a table
not analyzed yet, and for any session newer than the statistics (in a small deployment,
every new one). A lookup through ``seq IN (subquery)``, the form SQLite needs, was then
planned as a walk of the session's primary key with the subquery probed for each event:
200,000 rows read for one tool call's append in a session of 450 events. There the
statements are recorded as the engine runs them and explained on the same server, with
the same parameters, counting the rows read. Each is explained twice: with the plan made
for its parameters, and with the generic plan the server makes once a statement is
prepared. psycopg prepares a statement from its sixth run on a connection, and PostgreSQL
then keeps the generic plan when its estimate is no worse: in a development replay of
an agent's steps, nearly every statement of a window and an append ran on generic plans
after their fifth run.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, ClassVar

import pgserver
import psycopg
import psycopg.sql
import pytest
from sqlalchemy import Connection, event, text

from agentctx import ContextEngine, Session
from agentctx.storage import event_reads
from agentctx.storage import repository as repo
from conftest import new_pg_database

_FILLER = "a line of tool output that the lookups must not read " * 40


def _session(engine: ContextEngine, turns: int) -> Session:
    session = engine.create_session(user_id="u1")
    for index in range(turns):
        with session.turn() as turn:
            turn.add_message("user", f"step {index}", idempotency_key=f"k{index}")
            call = turn.add_tool_call("read", {"n": index}, call_id=f"c{index}")
            turn.add_tool_result(call.call_id, content=_FILLER)
    return session


def _steps(engine: ContextEngine, lookup: Callable[[Connection], Any]) -> int:
    """SQLite VM steps (in units of 100) that ``lookup`` takes; also checks its answer."""
    count = 0

    def tick() -> int:
        nonlocal count
        count += 1
        return 0

    with engine.db.read() as conn:
        raw = conn.connection.dbapi_connection
        raw.set_progress_handler(tick, 100)  # type: ignore[union-attr]
        try:
            assert lookup(conn)
        finally:
            raw.set_progress_handler(None, 0)  # type: ignore[union-attr]
    return count


@pytest.fixture(scope="module")
def sqlite_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContextEngine]:
    home = tmp_path_factory.mktemp("lookups")
    engine = ContextEngine(url=f"sqlite:///{home / 'a.db'}", home=home, jobs="manual")
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def sessions(sqlite_engine: ContextEngine) -> tuple[Session, Session]:
    """A short session and a long one."""
    return _session(sqlite_engine, 5), _session(sqlite_engine, 300)


LOOKUPS: dict[str, Callable[[str], Callable[[Connection], Any]]] = {
    "call id": lambda sid: lambda conn: repo.call_event_types(conn, "u1", sid, ["c3"]),
    "call ids": lambda sid: lambda conn: repo.call_event_types(conn, "u1", sid, ["c3", "c4"]),
    "idempotency key": lambda sid: (
        lambda conn: repo.existing_events(conn, "u1", sid, event_ids=[], idempotency_keys=["k3"])
    ),
    "event id or key": lambda sid: (
        lambda conn: repo.existing_events(
            conn, "u1", sid, event_ids=["e-none"], idempotency_keys=["k3"]
        )
    ),
}


@pytest.mark.parametrize("name", sorted(LOOKUPS))
def test_a_lookup_costs_the_same_in_a_long_session(
    sqlite_engine: ContextEngine, sessions: tuple[Session, Session], name: str
) -> None:
    short, long = sessions
    small = _steps(sqlite_engine, LOOKUPS[name](short.id))
    large = _steps(sqlite_engine, LOOKUPS[name](long.id))
    assert large <= small + 2, (name, small, large)


def test_a_turns_events_cost_the_same_in_a_long_session(
    sqlite_engine: ContextEngine, sessions: tuple[Session, Session]
) -> None:
    costs = []
    for session in sessions:
        turn_id = session.events(last=1)[0].turn_id
        assert turn_id is not None

        def read(conn: Connection, sid: str = session.id, tid: str = turn_id) -> Any:
            found = event_reads.select_events(conn, "u1", sid, turn_id=tid)
            assert [e.type.value for e in found] == ["user_input", "tool_call", "tool_result"]
            return found

        costs.append(_steps(sqlite_engine, read))
    assert costs[1] <= costs[0] + 2, costs


def test_the_lookups_find_what_was_stored(
    sqlite_engine: ContextEngine, sessions: tuple[Session, Session]
) -> None:
    session = sessions[0]
    with sqlite_engine.db.read() as conn:
        calls = repo.call_event_types(conn, "u1", session.id, ["c4", "c2"])
        assert [(c, t) for c, t, _ in calls] == [
            ("c2", "tool_call"),
            ("c2", "tool_result"),
            ("c4", "tool_call"),
            ("c4", "tool_result"),
        ]
        first, *_ = session.events(last=15)  # the first of its 5 turns' 15 events
        found = repo.existing_events(
            conn, "u1", session.id, event_ids=[first.event_id], idempotency_keys=["k4", "k0"]
        )
        # seq 1 is named twice (by its id and by its key) and comes back once.
        assert sorted(row["seq"] for row in found) == [1, 13]


# --- PostgreSQL: the plans the server chooses -----------------------------------------

_TURNS = 150  # three events each: a session of 450 events before the _lookups
_MOST_ROWS_READ = 12  # a lookup's own rows: a call and its result, a turn's few events


def _fill(session: Session, turns: int, prefix: str) -> None:
    """``turns`` tool turns: a user message, a tool call, its result."""
    for i in range(turns):
        with session.turn() as turn:
            turn.add_message("user", f"step {i}")
            turn.add_tool_call("lookup", {"n": i}, call_id=f"{prefix}{i}")
            turn.add_tool_result(f"{prefix}{i}", content="result " * 50)


def _lookups(session: Session) -> None:
    """Appends and reads that look events up by call id, idempotency key, event id, turn."""
    with session.turn() as turn:
        asked = turn.add_message("user", "one more", idempotency_key="k-user")
        turn.add_tool_call("lookup", {"n": -1}, call_id="new-call")
        turn.add_tool_result("new-call", content="done")
        turn.add_message("assistant", "done", event_id="e-chosen")
        turn_id = turn.turn_id
    with session.turn() as turn:
        # A retry of an append already stored: found by its key, nothing written.
        again = turn.add_message("user", "one more", idempotency_key="k-user")
    assert again.event_id == asked.event_id
    assert [e.type.value for e in session.events(turn_id=turn_id)] == [
        "user_input",
        "tool_call",
        "tool_result",
        "agent_response",
    ]
    assert [e.seq for e in session.events(turn_id=turn_id, last=2)] == [
        e.seq for e in session.events(turn_id=turn_id)[-2:]
    ]


_COLUMNS = ("call_id", "idempotency_key", "event_id", "turn_id")


def _looks_up(sql: str) -> set[str]:
    """The secondary columns of ``events`` that ``sql`` looks rows up by."""
    return {c for c in _COLUMNS if f"events.{c} =" in sql or f"events.{c} IN" in sql}


def _lookup_statements(recorded: list[tuple[str, Any]]) -> list[tuple[str, Any]]:
    """The recorded SELECTs of the events table by one of its secondary columns, after
    checking that every kind of lookup was among them."""
    statements = [
        (sql, params)
        for sql, params in recorded
        if sql.lstrip().upper().startswith("SELECT")
        and "FOR UPDATE" not in sql.upper()
        and _looks_up(sql)
    ]
    assert set().union(*(_looks_up(sql) for sql, _ in statements)) == set(_COLUMNS)
    return statements


class _RecordingCursor(psycopg.Cursor[Any]):
    """A psycopg cursor that records each statement it runs, with its parameters."""

    recorded: ClassVar[list[tuple[str, Any]]] = []

    def execute(self, query: Any, params: Any = None, **kwargs: Any) -> Any:  # type: ignore[override]
        _RecordingCursor.recorded.append((str(query), params))
        return super().execute(query, params, **kwargs)


@pytest.fixture
def pg_engine(pg_server: pgserver.PostgresServer, tmp_path: Path) -> Iterator[ContextEngine]:
    with ContextEngine(
        url=new_pg_database(pg_server),
        home=tmp_path / "home",
        embeddings={"provider": "hashing"},  # vectors, so that their reads are explained too
        erasure_poll=None,
    ) as engine:
        yield engine


def _rows_read(plan: dict[str, Any], tables: frozenset[str]) -> int:
    """The rows of ``tables`` a plan's scans read: kept and filtered out, on every loop."""
    read = 0
    if plan.get("Relation Name") in tables:
        read += (
            plan.get("Actual Rows", 0)
            + plan.get("Rows Removed by Filter", 0)
            + plan.get("Rows Removed by Index Recheck", 0)
        ) * plan.get("Actual Loops", 1)
    return read + sum(_rows_read(inner, tables) for inner in plan.get("Plans", ()))


def _record_pg(engine: ContextEngine, act: Callable[[], Any]) -> list[tuple[str, Any]]:
    """The statements ``act`` runs, as the driver was given them."""

    def on_checkout(dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        dbapi_connection.cursor_factory = _RecordingCursor

    _RecordingCursor.recorded = []
    engine.db.engine.pool.dispose()  # every connection from now on is a recording one
    event.listen(engine.db.engine, "checkout", on_checkout)
    try:
        act()
    finally:
        event.remove(engine.db.engine, "checkout", on_checkout)
    return list(_RecordingCursor.recorded)


def _explain_pg(
    engine: ContextEngine,
    statements: list[tuple[str, Any]],
    tables: frozenset[str],
    plan: str = "custom",
) -> list[tuple[int, int]]:
    """(rows of ``tables`` read, rows returned) of each statement, run again and explained.

    ``plan``: "custom", planned for its parameters (as the driver's first runs of a
    statement are), or "generic", planned once for any parameters (as PostgreSQL plans
    a statement the driver has prepared, which psycopg does from its sixth run, once
    the generic plan's estimate is no worse than the custom ones')."""
    found = []
    with engine.db.engine.connect() as conn:
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        if plan == "generic":
            cursor.execute("SET LOCAL plan_cache_mode = force_generic_plan")
        for number, (sql, params) in enumerate(statements):
            if plan == "generic":
                cursor.execute(_explained_generic(cursor, f"generic_{number}", sql, params))
            else:
                cursor.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
            (document,) = cursor.fetchone()
            tree = (document if isinstance(document, list) else json.loads(document))[0]["Plan"]
            found.append((_rows_read(tree, tables), int(tree.get("Actual Rows", 0))))
            if plan == "generic":
                cursor.execute(
                    "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                    " WHERE name = %s",
                    [f"generic_{number}"],
                )
                assert cursor.fetchone() == (1, 0), sql[:200]  # the plan explained was generic
        conn.rollback()
    return found


_PLACEHOLDER = re.compile(r"%%|%\(([^)]+)\)[sbt]|%[sbt]")


def _explained_generic(cursor: Any, name: str, sql: str, params: Any) -> str:
    """``EXPLAIN ANALYZE`` of ``sql`` prepared as ``name``, with its parameters as literals
    of the types the server gave them (an ``EXECUTE`` takes no bound parameters)."""
    values: list[Any] = []
    numbers: dict[str, int] = {}

    def numbered(match: re.Match[str]) -> str:
        if match.group(0) == "%%":
            return "%"
        key = match.group(1)
        if key is None:
            values.append(params[len(values)])
            return f"${len(values)}"
        if key not in numbers:
            values.append(params[key])
            numbers[key] = len(values)
        return f"${numbers[key]}"

    cursor.execute(f"PREPARE {name} AS " + _PLACEHOLDER.sub(numbered, sql))
    cursor.execute(
        "SELECT parameter_types::text[] FROM pg_prepared_statements WHERE name = %s", [name]
    )
    (types,) = cursor.fetchone()
    literals = ", ".join(
        f"{psycopg.sql.Literal(value).as_string(cursor)}::{kind}"
        for value, kind in zip(values, types, strict=True)
    )
    return f"EXPLAIN (ANALYZE, FORMAT JSON) EXECUTE {name}({literals})"


def _older_statistics(engine: ContextEngine, statistics: str) -> None:
    """Statistics the next session is newer than, or none at all."""
    if statistics == "older than the session":
        for k in range(4):
            _fill(engine.create_session("u"), 10, f"other{k}-")
        with engine.db.write() as conn:
            conn.execute(text("ANALYZE"))


_STATISTICS = ["none", "older than the session"]
_PLANS = ["custom", "generic"]


@pytest.mark.parametrize("plan", _PLANS)
@pytest.mark.parametrize("statistics", _STATISTICS)
def test_postgres_lookups_read_the_index_not_the_session(
    pg_engine: ContextEngine, statistics: str, plan: str
) -> None:
    _older_statistics(pg_engine, statistics)
    session = pg_engine.create_session("u")
    _fill(session, _TURNS, "c")
    statements = _lookup_statements(_record_pg(pg_engine, lambda: _lookups(session)))
    read = [rows for rows, _ in _explain_pg(pg_engine, statements, frozenset({"events"}), plan)]
    assert max(read) <= _MOST_ROWS_READ, [
        (n, sql[:600]) for n, (sql, _) in zip(read, statements, strict=True) if n > _MOST_ROWS_READ
    ]


# Tables a window reads by key whose rows are wide (a session's events, its vectors):
# each read should cost what it returns. The full-text search's tables are left out
# here: their rows are narrow, and on tables this small the planner rightly scans them
# (the terms' lookup is checked on a session of a large vocabulary below).
_KEYED = frozenset({"events", "search_codes"})


@pytest.mark.parametrize("plan", _PLANS)
@pytest.mark.parametrize("statistics", _STATISTICS)
def test_postgres_windows_read_what_they_return(
    pg_engine: ContextEngine, statistics: str, plan: str
) -> None:
    """A window's reads (the terms' document counts, the ranked events' token estimates
    and rows, the vectors rescored, the documents embedded) and an agent's appends."""
    _older_statistics(pg_engine, statistics)
    session = pg_engine.create_session("u")
    _fill(session, _TURNS, "c")
    session.build_context(query="step 12 result", budget=4_000)  # the authors read once

    def step() -> None:
        with session.turn() as turn:
            turn.add_message("user", "what did step 40 return?")
            session.build_context(query="what did step 40 return?", budget=4_000)
            turn.add_tool_call("lookup", {"n": 40}, call_id="again")
            turn.add_tool_result("again", content="result " * 50)
            window = session.build_context(query="what did step 40 return?", budget=4_000)
        assert any("step 40" in str(m.get("content")) for m in window.messages)

    statements = [
        (sql, params)
        for sql, params in _record_pg(pg_engine, step)
        if sql.lstrip().upper().startswith(("SELECT", "WITH")) and "FOR UPDATE" not in sql
    ]
    seen = " ".join(sql for sql, _ in statements)
    for read_by in ("FROM search_terms", "search_codes", "token_estimate", "search_docs.doc_id"):
        assert read_by in seen, read_by
    costs = _explain_pg(pg_engine, statements, _KEYED, plan)
    slack = 12  # a few rows past what was asked: a turn's other events, a range's edge
    over = [
        (read, returned, sql[:300])
        for (read, returned), (sql, _) in zip(costs, statements, strict=True)
        if read > returned + slack
    ]
    assert not over, over


@pytest.mark.parametrize("plan", _PLANS)
@pytest.mark.parametrize("statistics", _STATISTICS)
def test_postgres_term_counts_are_probed_not_read_with_the_vocabulary(
    pg_engine: ContextEngine, statistics: str, plan: str
) -> None:
    """A window looks up how many of the session's documents hold each query term: one
    probe per term, however many terms the session has. (The misplan the probes avoid,
    the session's whole vocabulary read for a few terms, was seen on a session of the
    agent benchmark after 20 others had been analyzed; at this scale the planner reads
    the key either way, and this pins the probes' cost: a form of the lookup by row
    comparisons read all 22,000 terms here.)"""
    words = iter(f"w{n:06d}x" for n in range(1_000_000))

    def fill_words(session: Session, messages: int) -> None:
        for _ in range(messages):  # 30 new terms each
            session.add_message("user", " ".join(next(words) for _ in range(30)))

    if statistics == "older than the session":
        for _ in range(20):
            fill_words(pg_engine.create_session("u"), 20)
        with pg_engine.db.write() as conn:
            conn.execute(text("ANALYZE"))
    session = pg_engine.create_session("u")
    fill_words(session, 300)  # 9,000 distinct terms
    first = 20 * 20 * 30 if statistics == "older than the session" else 0
    asked = " ".join(f"w{first + n:06d}x" for n in (10, 4_000, 8_990)) + " neverseen"
    statements = [
        (sql, params)
        for sql, params in _record_pg(
            pg_engine, lambda: session.build_context(query=asked, budget=4_000)
        )
        if "search_terms" in sql and sql.lstrip().upper().startswith("SELECT")
    ]
    assert statements
    for read, returned in _explain_pg(pg_engine, statements, frozenset({"search_terms"}), plan):
        assert returned == 3
        assert read <= 3 * 2, read
