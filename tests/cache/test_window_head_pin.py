"""One window build reads the session's head once (``HeadPin``): its reads all see the
log as it stood at the first, a session deleted or created again meanwhile is never
mixed in, and the reads cost one head statement instead of one each (SQLite's own
trace counts them)."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import event

from agentctx import ContextEngine
from agentctx.cache.events import Head, cached_events, pinned_loader, read_head
from agentctx.errors import SessionNotFound
from agentctx.events import Event, EventType, utcnow

_HEAD = re.compile(r"SELECT sessions\.last_seq, sessions\.created_at\s+FROM sessions")
_EXISTS = re.compile(r"SELECT sessions\.session_id\s+FROM sessions")


def _engine(db_url: str, home: Path) -> ContextEngine:
    return ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"})


@contextmanager
def _statements(engine: ContextEngine) -> Iterator[list[str]]:
    """Every statement SQLite runs on the engine's connections while inside."""
    seen: list[str] = []
    tracing = [True]

    def trace(statement: str) -> None:
        if tracing[0]:
            seen.append(statement)

    @event.listens_for(engine.db.engine, "checkout")
    def _checkout(dbapi: sqlite3.Connection, _record: object, _proxy: object) -> None:
        dbapi.set_trace_callback(trace)

    try:
        yield seen
    finally:
        tracing[0] = False
        event.remove(engine.db.engine, "checkout", _checkout)


def test_a_window_reads_the_session_head_once(tmp_path: Path) -> None:
    with _engine(f"sqlite:///{tmp_path / 'a.db'}", tmp_path / "home") as engine:
        session = engine.create_session("u1", "helper")
        session.add_event(EventType.SYSTEM, "Answer in French.")
        for i in range(30):
            session.add_message("user", f"question {i} about invoice INV-{i:04d}")
            session.add_message("assistant", f"answer {i}: the invoice is paid")
        session.build_context(query="invoice INV-0007", budget=1500)  # warm the cache
        session.add_message("user", "and the next one?")  # not cached yet: a miss
        with _statements(engine) as seen:
            window = session.build_context(query="invoice INV-0008", budget=1500)
        assert "Answer in French." in str(window.messages)
        assert "and the next one?" in str(window.messages)
        heads = [s for s in seen if _HEAD.match(s)]
        exists = [s for s in seen if _EXISTS.match(s)]
        # The session's row, read as the window began, gives the head.
        assert heads == []
        assert exists == []
        # Without it, the build reads the head once, at its first read.
        load = pinned_loader(engine._service.events, "u1", session.id)
        with _statements(engine) as seen:
            load("u1", session.id, types=[EventType.SYSTEM])
            load("u1", session.id, last=10)
            load("u1", session.id, seqs=[3, 4])
            load("u1", session.id, start_seq=50)
        assert len([s for s in seen if _HEAD.match(s)]) == 1
        assert [s for s in seen if _EXISTS.match(s)] == []


def test_the_head_a_window_takes_from_the_session_row_is_the_one_the_cache_reads(
    db_url: str, tmp_path: Path
) -> None:
    """The same last seq and the same incarnation (the cache's scope), whichever way read."""
    with _engine(db_url, tmp_path / "home") as engine:
        session = engine.create_session("u1", "helper")
        session.add_message("user", "hello")
        info = session.refresh()
        head = read_head(engine.db, "u1", session.id, utcnow())
        assert head is not None
        assert (info.last_seq, info.created_at) == (head.last_seq, head.created_at)
        assert info.created_at.isoformat() == head.incarnation


def test_the_reads_of_one_build_see_the_log_as_it_stood_at_the_first(
    db_url: str, tmp_path: Path
) -> None:
    with _engine(db_url, tmp_path / "home") as engine:
        session = engine.create_session("u1", "helper")
        for i in range(5):
            session.add_message("user", f"message {i}")
        load = pinned_loader(engine._service.events, "u1", session.id)
        first = [e.seq for e in load("u1", session.id, last=3)]
        assert first == [3, 4, 5]
        session.add_message("user", "appended while the build runs")
        session.add_event(EventType.SYSTEM, "a new instruction")
        assert [e.seq for e in load("u1", session.id, last=3)] == [3, 4, 5]
        assert [e.seq for e in load("u1", session.id, start_seq=4)] == [4, 5]
        assert load("u1", session.id, types=[EventType.SYSTEM]) == []
        assert [e.seq for e in load("u1", session.id, seqs=[1, 5, 6, 7])] == [1, 5]
        # The next build sees them.
        later = pinned_loader(engine._service.events, "u1", session.id)
        assert [e.seq for e in later("u1", session.id, last=3)] == [5, 6, 7]
        assert [e.seq for e in later("u1", session.id, types=[EventType.SYSTEM])] == [7]


def test_a_session_recreated_during_a_build_is_not_mixed_into_it(
    db_url: str, tmp_path: Path
) -> None:
    """Deleted and created again with the same id after the build's first read: the
    build's later reads find none of the new session's events (nor the deleted one's:
    the deletion dropped them from the cache)."""
    with _engine(db_url, tmp_path / "home") as engine:
        old = engine.create_session("u1", "helper", session_id="s1")
        old.add_message("user", "my old code word is tangerine")
        old.add_message("assistant", "noted")
        load = pinned_loader(engine._service.events, "u1", "s1")
        assert [e.seq for e in load("u1", "s1", last=1)] == [2]
        engine.delete_session("s1", "u1")
        new = engine.create_session("u1", "helper", session_id="s1")
        new.add_message("user", "a fresh start")
        new.add_message("assistant", "hello again")
        new.add_event(EventType.SYSTEM, "the new session's instruction")
        for read in (
            {"last": 2},
            {"start_seq": 1, "end_seq": 2},
            {"seqs": [1, 2]},
            {"types": [EventType.SYSTEM]},
        ):
            found = load("u1", "s1", **read)
            assert "fresh start" not in str(found) and "tangerine" not in str(found), read
        # A build that begins after the deletion has a session to read only if one is
        # there: a missing one is denied at its first read.
        engine.delete_session("s1", "u1")
        with pytest.raises(SessionNotFound):
            pinned_loader(engine._service.events, "u1", "s1")("u1", "s1", last=5)


def _newest_cached(engine: ContextEngine, head: Head) -> list[Event] | None:
    """The newest event of u1's session s1 through the cache, at ``head``."""
    return cached_events(
        engine._service.cache,
        engine.db,
        "u1",
        "s1",
        start_seq=None,
        end_seq=None,
        limit=None,
        last=1,
        seqs=None,
        now=utcnow(),
        head=head,
    )


def test_a_cached_read_of_an_older_incarnation_reads_none_of_the_new_one(
    db_url: str, tmp_path: Path
) -> None:
    """The cache's read of what it lacks takes only rows of the incarnation whose head
    it was given, in one statement (no head read after it)."""
    with _engine(db_url, tmp_path / "home") as engine:
        old = engine.create_session("u1", "helper", session_id="s1")
        old.add_message("user", "first life")
        head = read_head(engine.db, "u1", "s1", utcnow())
        assert head is not None and head.last_seq == 1
        engine.delete_session("s1", "u1")
        new = engine.create_session("u1", "helper", session_id="s1")
        new.add_message("user", "second life")
        found = _newest_cached(engine, head)
        assert found is None  # left to the database, which denies or reads anew
        fresh = read_head(engine.db, "u1", "s1", utcnow())
        assert fresh is not None and fresh.created_at != head.created_at
        again = _newest_cached(engine, fresh)
        assert again is not None and [e.text for e in again] == ["second life"]
