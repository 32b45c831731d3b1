"""Migration 0016 (each session's own TTL) goes down and up on SQLite and PostgreSQL:
sessions from before it keep the engine's TTL, new ones keep their own."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

from sqlalchemy import inspect

from agentctx import ContextEngine
from agentctx.storage import migrate
from migration_moves import move


def test_session_ttl_down_and_up(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        move(engine.db, "0015")
        columns = {c["name"] for c in inspect(engine.db.engine).get_columns("sessions")}
        assert "ttl_ms" not in columns
        move(engine.db, "head")
        assert migrate.current_revision(engine.db) == migrate.HEAD_REVISION
        short = engine.create_session("u1", ttl=timedelta(minutes=10))
        short.add_message("user", "hello")
        assert short.refresh().ttl_ms == 600_000
        expires = short.refresh().expires_at
        assert expires is not None
        assert expires - datetime.now(UTC) <= timedelta(minutes=10)
        default = engine.create_session("u1")
        default.add_message("user", "hello")
        assert default.refresh().ttl_ms is None
