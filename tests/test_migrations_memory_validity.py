"""Migration 0017: each memory's validity and successor, down and up, on both backends.

Memories stored before it became true when they were created: the upgrade sets
``valid_from`` to ``created_at`` and leaves their end and successor empty.
"""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import inspect

from agentctx import ContextEngine
from agentctx.storage import migrate
from migration_moves import move


def test_memory_validity_down_and_up(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        kept = engine.memory.add("u1", "User lives in Lyon", kind="profile", subject="residence")
        move(engine.db, "0016")
        columns = {c["name"] for c in inspect(engine.db.engine).get_columns("memories")}
        assert not columns & {"valid_from", "valid_to", "superseded_by"}
        move(engine.db, "head")
        assert migrate.current_revision(engine.db) == migrate.HEAD_REVISION
        again = engine.memory.get("u1", kept.memory_id)
        assert again.valid_from == again.created_at
        assert (again.valid_to, again.superseded_by) == (None, None)
        # The rule works on a migrated store: a later statement supersedes it.
        later = engine.memory.add("u1", "User lives in Oslo", kind="profile", subject="residence")
        moved = engine.memory.get("u1", kept.memory_id)
        assert moved.status == "stale" and moved.superseded_by == later.memory_id
