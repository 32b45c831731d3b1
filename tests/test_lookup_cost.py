"""Looking up a session's events by a secondary column reads those events, not the session.

An append of a tool call or result looks up the call id's earlier events; an append
with an idempotency key looks the key up; a turn's end reads the turn's events. Each
must cost the same in a long session as in a short one. On SQLite, whose planner has
no statistics, the plain form of these queries walks the session's primary key, every
event with its JSON: an agent's step then grew with the whole history (about 1 ms a
tool call at 200 turns). The work is counted in SQLite virtual-machine steps.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from sqlalchemy import Connection

from agentctx import ContextEngine, Session
from agentctx.storage import event_reads
from agentctx.storage import repository as repo

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
