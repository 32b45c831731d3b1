"""Migration 0015 (each session's running total of history weights) goes down and up on
SQLite and PostgreSQL, and the writer keeps the total exact from then on."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect, select

from agentctx import ContextEngine
from agentctx.storage import migrate
from agentctx.storage.schema import sessions
from agentctx.tokens.weight import (
    IMAGE_WEIGHT,
    MESSAGE_WEIGHT,
    TOOL_RESULT_WEIGHT,
    event_weight,
)
from conftest import make_png
from migration_moves import move


def stored_total(engine: ContextEngine, session_id: str) -> int:
    with engine.db.read() as conn:
        return int(
            conn.execute(
                select(sessions.c.weight_total).where(sessions.c.session_id == session_id)
            ).scalar_one()
        )


def test_the_writer_adds_each_events_history_weight(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        session = engine.create_session(user_id="u1")
        assert stored_total(engine, session.id) == 0
        with session.turn() as turn:
            turn.add_message("user", "take a screenshot of the page")
            turn.add_tool_call("screenshot", {}, call_id="c1")
            shot = turn.add_tool_result("c1", content="ok", images=[make_png(1280, 800)])
            turn.add_tool_call("dump", {}, call_id="c2")
            big = turn.add_tool_result("c2", content="row of data " * 2000)
        session.update_state({"step": 2})
        events = session.events()
        # An image weighs what a low-detail image costs, a long tool result its cap.
        assert event_weight(shot) < shot.token_estimate
        assert event_weight(shot) - IMAGE_WEIGHT - MESSAGE_WEIGHT < 10
        assert big.token_estimate > TOOL_RESULT_WEIGHT == event_weight(big) - MESSAGE_WEIGHT
        assert stored_total(engine, session.id) == sum(event_weight(e) for e in events)
        assert session.refresh().weight_total == stored_total(engine, session.id)


def test_weight_total_down_and_up(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        session = engine.create_session(user_id="u1")
        session.add_message("user", "hello there")
        session.add_message("assistant", "hi, how can I help?")
        move(engine.db, "0014")
        columns = {c["name"] for c in inspect(engine.db.engine).get_columns("sessions")}
        assert "weight_total" not in columns
        move(engine.db, "head")
        assert migrate.current_revision(engine.db) == migrate.HEAD_REVISION
        # Existing sessions start from their token estimates (at least their weights).
        events = session.events()
        assert stored_total(engine, session.id) == sum(e.token_estimate + 4 for e in events)
        before = stored_total(engine, session.id)
        added = session.add_message("user", "one more")
        assert stored_total(engine, session.id) == before + event_weight(added)
