"""A deletion and its erasure row commit together, and a deletion outlives its process.

``delete_user_data`` deletes a user's sessions, memories and memory index documents and
writes the erasure feed's row in one transaction; the row is stamped (published to the
other engines) once that committed. So a process killed inside the transaction leaves
all of the user's data; one killed after the commit leaves none of it and an unstamped
row, which the next engine to start or the next sweep publishes. Real processes, killed
with SIGKILL, on SQLite and PostgreSQL.
"""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import func, select, text

from agentctx import ContextEngine
from agentctx.memory.index_tables import DOCS_TABLE
from agentctx.sessions.erasures import Erasure
from agentctx.storage.schema import erasures, events, memories, memory_history, sessions
from procs.erasure_child import held
from test_erasures import WORD, fill_caches, open_engine, search_sid, session_held, user_data

PROCS = Path(__file__).parent / "procs"


@pytest.fixture
def writer(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """The engine that writes the users' data and looks at what is stored."""
    with open_engine(db_url, home, erasure_poll=None) as engine:
        yield engine


def kill_while_deleting(db_url: str, home: Path, what: str, ident: str, point: str) -> None:
    """Run the deleting child to its death at ``point``."""
    child = subprocess.run(
        [sys.executable, str(PROCS / "deleting_child.py"), db_url, str(home), what, ident, point],
        capture_output=True,
        check=False,
        text=True,
        timeout=120,
    )
    assert child.returncode == -signal.SIGKILL, child.stderr


def stored(engine: ContextEngine, user_id: str) -> dict[str, int]:
    """How many rows of each kind the database holds for ``user_id``."""
    counts = {}
    with engine.db.read() as conn:
        for table in (sessions, events, memories, memory_history):
            counts[table.name] = conn.execute(
                select(func.count()).select_from(table).where(table.c.user_id == user_id)
            ).scalar_one()
        counts[DOCS_TABLE] = conn.execute(
            text(f"SELECT count(*) FROM {DOCS_TABLE} WHERE user_id = :u"), {"u": user_id}
        ).scalar_one()
    return counts


def feed_rows(engine: ContextEngine) -> list[tuple[str, str | None, bool]]:
    """The erasure feed: (user, session, stamped) per row."""
    with engine.db.read() as conn:
        rows = conn.execute(
            select(erasures.c.user_id, erasures.c.session_id, erasures.c.erased_at)
        ).all()
    return [(user_id, session_id, stamp is not None) for user_id, session_id, stamp in rows]


def test_a_process_killed_inside_the_deletion_leaves_all_of_the_users_data(
    writer: ContextEngine, db_url: str, tmp_path: Path
) -> None:
    user_data(writer, "u1", WORD)
    user_data(writer, "u2", "plainword")
    before = stored(writer, "u1")
    assert all(before.values()), before

    kill_while_deleting(db_url, tmp_path / "child", "user", "u1", "inside")

    # Its memories were deleted in the transaction when it died: nothing of it stayed.
    assert stored(writer, "u1") == before
    assert feed_rows(writer) == []
    report = writer.delete_user_data("u1")  # the retry
    assert report.sessions == 1 and report.extra["memories"] == 1
    assert not any(stored(writer, "u1").values())
    assert all(stored(writer, "u2").values())
    assert feed_rows(writer) == [("u1", None, True)]


def test_a_deletion_whose_process_died_before_publishing_it_is_published_by_the_sweep(
    writer: ContextEngine, db_url: str, tmp_path: Path
) -> None:
    session_id = user_data(writer, "u1", WORD)
    with open_engine(db_url, tmp_path / "other", erasure_poll=None) as other:
        fill_caches(other, "u1", session_id, WORD)
        holding = held(other, "u1", WORD)
        assert "memory codes" in holding and "events" in holding

        kill_while_deleting(db_url, tmp_path / "child", "user", "u1", "committed")

        assert not any(stored(writer, "u1").values())  # the deletion committed
        assert feed_rows(writer) == [("u1", None, False)]
        assert other.forget_erased() == []  # not published: nobody knows yet
        assert held(other, "u1", WORD) == holding

        writer.sweep()

        assert feed_rows(writer) == [("u1", None, True)]
        assert other.forget_erased() == [Erasure("u1")]
        assert held(other, "u1", WORD) == []


def test_a_session_deletion_whose_process_died_is_published_by_the_next_engine_to_start(
    writer: ContextEngine, db_url: str, tmp_path: Path
) -> None:
    gone = user_data(writer, "u1", WORD)
    kept = user_data(writer, "u1", "plainword")
    with open_engine(db_url, tmp_path / "other", erasure_poll=None) as other:
        fill_caches(other, "u1", gone, WORD)
        fill_caches(other, "u1", kept, "plainword")
        sid = search_sid(other, "u1", gone)

        kill_while_deleting(db_url, tmp_path / "child", "session", f"u1/{gone}", "committed")

        assert feed_rows(writer) == [("u1", gone, False)]
        assert other.forget_erased() == []
        with open_engine(db_url, tmp_path / "restarted", erasure_poll=None):
            assert feed_rows(writer) == [("u1", gone, True)]
        assert other.forget_erased() == [Erasure("u1", gone, sid)]
        assert session_held(other, "u1", gone) == []
        assert session_held(other, "u1", kept) == ["authors", "vectors", "events"]
