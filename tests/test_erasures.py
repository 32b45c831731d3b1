"""Deletions reach the memory of every process on the database (the erasure feed).

The guarantee: once ``delete_user_data`` (``delete_session``) has returned, every other
live engine on the database drops what it holds of the user (the session) in memory
within its ``erasure_poll``; with the poll off, at its next ``forget_erased()``.
"""

from __future__ import annotations

import gc
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import create_engine, insert, select, update

from agentctx import ConfigError, ContextEngine
from agentctx.events import utcnow
from agentctx.retrieval.sync import read_state
from agentctx.sessions.erasures import Erasure, ErasureFeed
from agentctx.storage.schema import erasures, sessions
from conftest import new_pg_database
from procs.erasure_child import held

PROCS = Path(__file__).parent / "procs"
WORD = "zorblatfunkel"  # a word only the deleted user ever wrote


def open_engine(db_url: str, home: Path, **settings: object) -> ContextEngine:
    engine = ContextEngine(
        url=db_url,
        home=home,
        embeddings={"provider": "hashing"},
        retrieval={"exact_vector_limit": 0},  # every session's vector codes kept in memory
        **settings,
    )
    assert engine.memory.index is not None
    engine.memory.index.exact_vector_limit = 0  # and every user's memory codes
    return engine


@pytest.fixture
def writer(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """The engine that writes the users' data and deletes it."""
    with open_engine(db_url, home, erasure_poll=None) as engine:
        yield engine


def user_data(engine: ContextEngine, user_id: str, word: str) -> str:
    """A session and a memory of ``user_id`` mentioning ``word``; the session's id."""
    session = engine.create_session(user_id=user_id)
    session.add_message("user", f"Kate: my codename is {word} and I like trains")
    session.add_message("assistant", f"Noted, {word}. Trains it is.")
    engine.memory.add(user_id, f"The user's codename is {word}")
    return session.id


def fill_caches(engine: ContextEngine, user_id: str, session_id: str, word: str) -> None:
    list(engine.get_session(session_id, user_id=user_id).events())
    assert engine.search_index.search(user_id, session_id, f"What did Kate say of {word}?")
    assert engine.memory.search(user_id, word)


def test_another_engine_forgets_a_deleted_user_within_its_poll(
    writer: ContextEngine, db_url: str, tmp_path: Path
) -> None:
    gone = user_data(writer, "u1", WORD)
    kept = user_data(writer, "u2", "plainword")
    with open_engine(db_url, tmp_path / "other", erasure_poll=timedelta(seconds=0.1)) as other:
        fill_caches(other, "u1", gone, WORD)
        fill_caches(other, "u2", kept, "plainword")
        assert held(other, "u1", WORD) == [
            "authors",
            "queries",
            "vectors",
            "events",
            "memory codes",
        ]

        writer.delete_user_data("u1")
        deadline = time.monotonic() + 10
        while held(other, "u1", WORD) and time.monotonic() < deadline:
            time.sleep(0.05)

        assert held(other, "u1", WORD) == []
        # The other user's data stays where it was, and their searches still work.
        assert set(held(other, "u2", "plainword")) >= {"authors", "events", "memory codes"}
        fill_caches(other, "u2", kept, "plainword")


def search_sid(engine: ContextEngine, user_id: str, session_id: str) -> int | None:
    """The session's number in the search index, which keys its cached vectors."""
    with engine.db.read() as conn:
        state = read_state(conn, user_id, session_id, None)
    return None if state is None else state.sid


def session_held(engine: ContextEngine, user_id: str, session_id: str) -> list[str]:
    """Where this engine's memory holds something of one session."""
    index = engine.search_index
    places = []
    if (user_id, session_id) in index._reader._participants._known:
        places.append("authors")
    sid = search_sid(engine, user_id, session_id)
    vectors = index._vector_search
    if sid is not None and any(
        key[0] == sid for cache in (vectors.vectors, vectors.codes) for key in cache.held()
    ):
        places.append("vectors")
    if any(
        scope.user_id == user_id and scope.session_id == session_id
        for scope in engine.cache._sessions  # type: ignore[attr-defined]
    ):
        places.append("events")
    return places


def test_another_engine_forgets_a_deleted_session_and_keeps_the_others(
    writer: ContextEngine, db_url: str, tmp_path: Path
) -> None:
    gone = user_data(writer, "u1", WORD)
    kept = user_data(writer, "u1", "plainword")
    with open_engine(db_url, tmp_path / "other", erasure_poll=None) as other:
        for engine in (writer, other):
            fill_caches(engine, "u1", gone, WORD)
            fill_caches(engine, "u1", kept, "plainword")
            assert session_held(engine, "u1", gone) == ["authors", "vectors", "events"]
        sid = search_sid(other, "u1", gone)

        writer.delete_session(gone, user_id="u1")
        assert session_held(writer, "u1", gone) == []  # the deleting engine at once

        assert other.forget_erased() == [Erasure("u1", gone, sid)]
        assert session_held(other, "u1", gone) == []
        assert session_held(other, "u1", kept) == ["authors", "vectors", "events"]
        fill_caches(other, "u1", kept, "plainword")


def test_sessions_the_sweep_deletes_are_forgotten_everywhere(
    writer: ContextEngine, db_url: str, tmp_path: Path
) -> None:
    expired = user_data(writer, "u1", WORD)
    kept = user_data(writer, "u1", "plainword")
    with open_engine(db_url, tmp_path / "other", erasure_poll=None) as other:
        for engine in (writer, other):
            fill_caches(engine, "u1", expired, WORD)
            fill_caches(engine, "u1", kept, "plainword")
        sid = search_sid(other, "u1", expired)
        with writer.db.write() as conn:
            conn.execute(
                update(sessions)
                .where(sessions.c.session_id == expired)
                .values(expires_at=sessions.c.created_at)
            )

        assert writer.sweep().expired_sessions == 1

        assert session_held(writer, "u1", expired) == []
        assert other.forget_erased() == [Erasure("u1", expired, sid)]
        assert session_held(other, "u1", expired) == []
        assert session_held(other, "u1", kept) == ["authors", "vectors", "events"]


def test_the_deleting_engine_forgets_the_users_memory_codes_too(writer: ContextEngine) -> None:
    session_id = user_data(writer, "u1", WORD)
    fill_caches(writer, "u1", session_id, WORD)
    assert "memory codes" in held(writer, "u1", WORD)

    writer.delete_user_data("u1")

    assert held(writer, "u1", WORD) == []


def test_each_erasure_is_reported_once_and_not_to_its_own_engine(
    writer: ContextEngine, db_url: str, tmp_path: Path
) -> None:
    with open_engine(db_url, tmp_path / "other", erasure_poll=None) as other:
        for user_id in ("u1", "u2", "u3"):
            user_data(writer, user_id, WORD)
        writer.delete_user_data("u1")
        writer.delete_user_data("u3")
        writer.delete_user_data("u1")  # again: a retry after a lost answer

        assert other.forget_erased() == [Erasure("u1"), Erasure("u3")]
        assert other.forget_erased() == []
        assert writer.forget_erased() == []  # it forgot them as it deleted them
        other.delete_user_data("u2")
        assert writer.forget_erased() == [Erasure("u2")]
        assert other.forget_erased() == []


def test_an_erasure_committed_after_a_newer_one_is_still_read(
    pg_server: object, tmp_path: Path
) -> None:
    """On PostgreSQL a row can commit after a row with a larger id: reading "ids above
    the last seen" would skip it for good."""
    url = new_pg_database(pg_server)  # type: ignore[arg-type]
    with (
        open_engine(url, tmp_path / "reader", erasure_poll=None) as reader,
        open_engine(url, tmp_path / "writer", erasure_poll=None) as writer,
    ):
        raw = create_engine(url.replace("postgresql://", "postgresql+psycopg://", 1))
        try:
            with raw.connect() as slow:
                transaction = slow.begin()
                slow.execute(insert(erasures).values(user_id="late", erased_at=utcnow()))
                writer.delete_user_data("early")  # takes a larger id, commits first
                with writer.db.read() as conn:
                    ids = {row.user_id: row.erasure_id for row in conn.execute(select(erasures))}
                assert list(ids) == ["early"]
                assert reader.forget_erased() == [Erasure("early")]
                transaction.commit()
            with writer.db.read() as conn:
                ids = {row.user_id: row.erasure_id for row in conn.execute(select(erasures))}
            assert ids["late"] < ids["early"]
            assert reader.forget_erased() == [Erasure("late")]
        finally:
            raw.dispose()


def test_an_engine_that_missed_the_trimmed_feed_forgets_everything(
    writer: ContextEngine,
) -> None:
    now = [datetime(2026, 1, 1, tzinfo=UTC)]
    feed = ErasureFeed(writer.db, retention=timedelta(hours=1), clock=lambda: now[0])
    assert feed.poll().everything is False
    now[0] += timedelta(minutes=58)  # within the retention, less the lag read back
    assert feed.poll().everything is False
    now[0] += timedelta(minutes=59, seconds=1)
    assert feed.poll().everything is True
    assert feed.poll().everything is False


def test_the_sweep_trims_the_feed_past_its_retention(writer: ContextEngine) -> None:
    with writer.db.write() as conn:
        conn.execute(insert(erasures).values(user_id="old", erased_at=utcnow() - timedelta(days=8)))
    writer.delete_user_data("recent")

    writer.sweep()

    with writer.db.read() as conn:
        assert list(conn.execute(select(erasures.c.user_id)).scalars()) == ["recent"]


def test_the_watcher_ends_with_its_engine(db_url: str, home: Path) -> None:
    def watchers() -> int:
        return sum(t.name == "agentctx-erasures" and t.is_alive() for t in threading.enumerate())

    before = watchers()
    closed = open_engine(db_url, home, erasure_poll=timedelta(seconds=0.05))
    assert watchers() == before + 1
    closed.close()
    assert watchers() == before

    dropped = open_engine(db_url, home, erasure_poll=timedelta(seconds=0.05))
    assert watchers() == before + 1
    dropped.db.dispose()
    del dropped  # never closed: the thread must not keep it alive, nor live on
    gc.collect()
    deadline = time.monotonic() + 5
    while watchers() > before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert watchers() == before


@pytest.mark.parametrize(
    ("setting", "value", "message"),
    [
        ("erasure_poll", timedelta(0), "erasure_poll"),
        ("erasure_retention", timedelta(minutes=5), "erasure_retention"),
    ],
)
def test_bad_erasure_settings_are_refused(
    tmp_path: Path, setting: str, value: timedelta, message: str
) -> None:
    with pytest.raises(ConfigError, match=message):
        ContextEngine(url=f"sqlite:///{tmp_path / 'a.db'}", home=tmp_path, **{setting: value})


def test_a_deletion_reaches_another_process(
    writer: ContextEngine, db_url: str, tmp_path: Path
) -> None:
    session_id = user_data(writer, "u1", WORD)
    child = subprocess.Popen(
        [
            sys.executable,
            str(PROCS / "erasure_child.py"),
            db_url,
            str(tmp_path / "child"),
            "u1",
            session_id,
            WORD,
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert child.stdin is not None and child.stdout is not None
    try:
        assert child.stdout.readline().strip() == "holding"
        first = child.stdout.readline().strip()
        assert first == "held authors,queries,vectors,events,memory codes"

        writer.delete_user_data("u1")
        deleted = time.monotonic()
        line = first
        while line != "held nothing" and time.monotonic() - deleted < 10:
            line = child.stdout.readline().strip()

        assert line == "held nothing"
        # Within the child's poll (0.2 s) and a report (0.1 s), with room for a slow machine.
        assert time.monotonic() - deleted < 3
    finally:
        child.stdin.close()
        child.wait(30)
    assert child.returncode == 0
