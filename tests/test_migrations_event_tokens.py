"""Migration 0018: the covering index of the events' token estimates (SQLite only).

A window's search reads the token estimate of every event it ranks. On SQLite the
estimate sits after an event's parts and payload in the row, so without the index each
read walks the row's overflow pages; with it, the planner answers from the index alone.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from sqlalchemy import inspect

from agentctx import ContextEngine
from agentctx.retrieval.event_rows import event_column
from agentctx.storage import migrate
from migration_moves import move


def _token_indexes(engine: ContextEngine) -> set[str]:
    return {
        str(index["name"])
        for index in inspect(engine.db.engine).get_indexes("events")
        if index["column_names"] == ["user_id", "session_id", "seq", "token_estimate"]
    }


def test_event_tokens_index_down_and_up(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        session = engine.create_session("u1")
        first = session.add_message("user", "a question about flights")
        sqlite = engine.db.dialect == "sqlite"
        assert _token_indexes(engine) == ({"ix_events_tokens"} if sqlite else set())
        move(engine.db, "0017")
        assert _token_indexes(engine) == set()
        move(engine.db, "head")
        assert migrate.current_revision(engine.db) == migrate.HEAD_REVISION
        assert _token_indexes(engine) == ({"ix_events_tokens"} if sqlite else set())
        # Written before and after the move, the estimates read back alike.
        second = session.add_message("assistant", "two flights leave on Tuesday")
        with engine.db.read() as conn:
            tokens = event_column(conn, "u1", session.id, [first.seq, second.seq], "token_estimate")
        assert tokens == {first.seq: first.token_estimate, second.seq: second.token_estimate}


def test_a_search_reads_token_estimates_from_the_index_alone(tmp_path: Path) -> None:
    with ContextEngine(url=f"sqlite:///{tmp_path / 'a.db'}", home=tmp_path) as engine:
        session = engine.create_session("u1")
        with session.turn() as turn:
            turn.add_message("user", "fetch the logs")
            for i in range(5):
                call = turn.add_tool_call("fetch_log", {"page": i})
                turn.add_tool_result(call.call_id, content=f"log line {i}\n" * 2_000)
        session_id = session.id
    connection = sqlite3.connect(tmp_path / "a.db")
    seqs = "[" + ",".join(str(seq) for seq in range(1, 12)) + "]"
    plan = connection.execute(
        "EXPLAIN QUERY PLAN SELECT seq, token_estimate FROM events WHERE user_id = ? "
        "AND session_id = ? AND seq IN (SELECT value FROM json_each(?))",
        ("u1", session_id, seqs),
    ).fetchall()
    connection.close()
    assert any("COVERING INDEX ix_events_tokens" in str(row[-1]) for row in plan), plan
