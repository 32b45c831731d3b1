"""Migration 0019: on PostgreSQL the events' unique event ids are indexed event id first.

Led by the session's key, the index matched every read of a session as well as the
primary key does, and a planner that estimated the session at one row took it for reads
by seq (the whole session read per seq asked). SQLite keeps its table constraint.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import inspect

from agentctx import ContextEngine
from agentctx.errors import IdempotencyConflict
from agentctx.storage import migrate
from migration_moves import move


def _unique_event_id_keys(engine: ContextEngine) -> set[tuple[str, ...]]:
    """The column lists of the events' unique constraints and indexes naming event_id."""
    inspector = inspect(engine.db.engine)
    found = {
        tuple(str(c) for c in constraint["column_names"])
        for constraint in inspector.get_unique_constraints("events")
    }
    found |= {
        tuple(str(c) for c in index["column_names"])
        for index in inspector.get_indexes("events")
        if index.get("unique")
    }
    return {key for key in found if "event_id" in key}


def test_event_id_index_down_and_up(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        postgres = engine.db.dialect == "postgresql"
        session = engine.create_session("u1")
        first = session.add_message("user", "before the move", event_id="e-1")
        new_order = ("event_id", "user_id", "session_id")
        old_order = ("user_id", "session_id", "event_id")
        assert _unique_event_id_keys(engine) == {new_order if postgres else old_order}
        move(engine.db, "0018")
        assert _unique_event_id_keys(engine) == {old_order}
        move(engine.db, "head")
        assert migrate.current_revision(engine.db) == migrate.HEAD_REVISION
        assert _unique_event_id_keys(engine) == {new_order if postgres else old_order}
        # The id is still unique in its session, and found again by it.
        again = session.add_message("user", "before the move", event_id="e-1")
        assert again.seq == first.seq
        with pytest.raises(IdempotencyConflict):
            session.add_message("user", "other text", event_id="e-1")
        # The same id in another session is another event.
        other = engine.create_session("u1").add_message("user", "elsewhere", event_id="e-1")
        assert other.seq == 1
        assert [e.event_id for e in session.events()] == ["e-1"]
