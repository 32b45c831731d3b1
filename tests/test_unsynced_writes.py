"""``Database.write(durable=False)``: derived data committed without a disk sync of its own,
on a connection that goes back to the pool with the configured level."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import text

from agentctx.storage.database import Database

LEVELS = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}


def _level(db: Database) -> str:
    with db.read() as conn:
        return LEVELS[int(conn.execute(text("PRAGMA synchronous")).scalar_one())]


def test_an_unsynced_write_commits_and_leaves_the_level_as_configured(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'a.db'}", synchronous="FULL", pool_size=1)
    try:
        with db.write() as conn:
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
        with db.write(durable=False) as conn:
            assert LEVELS[int(conn.execute(text("PRAGMA synchronous")).scalar_one())] == "NORMAL"
            conn.execute(text("INSERT INTO t VALUES (1)"))
        assert _level(db) == "FULL"
        with pytest.raises(RuntimeError), db.write(durable=False) as conn:
            conn.execute(text("INSERT INTO t VALUES (2)"))
            raise RuntimeError("rolled back")
        assert _level(db) == "FULL"
        with db.read() as conn:
            assert [r[0] for r in conn.execute(text("SELECT x FROM t"))] == [1]
    finally:
        db.close()


def test_a_database_configured_below_full_is_left_as_it_is(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'a.db'}", synchronous="NORMAL", pool_size=1)
    try:
        with db.write(durable=False) as conn:
            conn.execute(text("CREATE TABLE t (x INTEGER)"))
        assert _level(db) == "NORMAL"
    finally:
        db.close()
