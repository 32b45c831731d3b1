"""Migration 0013 (erasure rows stamped after their deletion commits) goes down and up
again on SQLite and PostgreSQL without losing a row of the feed."""

from __future__ import annotations

import pytest
from sqlalchemy import insert, select
from sqlalchemy.exc import IntegrityError

from agentctx.events import utcnow
from agentctx.storage import migrate
from agentctx.storage.database import Database
from agentctx.storage.schema import erasures
from migration_moves import move


def _insert(db: Database, user_id: str, stamped: bool) -> None:
    with db.engine.begin() as conn:
        conn.execute(
            insert(erasures).values(user_id=user_id, erased_at=utcnow() if stamped else None)
        )


def _rows(db: Database) -> dict[str, bool]:
    with db.engine.connect() as conn:
        rows = conn.execute(select(erasures.c.user_id, erasures.c.erased_at)).all()
    return {user_id: stamp is not None for user_id, stamp in rows}


def test_erasure_stamps_down_and_up(db_url: str) -> None:
    db = Database(db_url)
    try:
        migrate.upgrade(db)
        _insert(db, "published", stamped=True)
        _insert(db, "orphaned", stamped=False)  # its process died before stamping it

        move(db, "0012")
        # The older schema cannot hold an unstamped row: it is stamped, not dropped.
        assert _rows(db) == {"published": True, "orphaned": True}
        with pytest.raises(IntegrityError):
            _insert(db, "unstamped", stamped=False)

        move(db, "head")
        _insert(db, "pending", stamped=False)
        assert _rows(db) == {"published": True, "orphaned": True, "pending": False}
        assert migrate.current_revision(db) == migrate.head_revision() == migrate.scripted_head()
    finally:
        db.dispose()
