"""An erased user's data leaves the database's files and the blob directory, not only
its tables: read as an attacker with the disk would read them, byte by byte.

Each user writes through every path the engine offers (messages, event metadata, model
names, tool arguments and results, structured data, a large offloaded tool result,
images, session state and metadata, a thread summary, the search index, a memory),
each with marker strings of its own. After ``delete_user_data`` and ``close`` no marker
of the erased user is in any file; the other user's are all still there.

What PostgreSQL may keep is its write-ahead log: with the default ``wal_recycle = on``
a finished segment is renamed for reuse, old bytes and all (agentctx.storage.scrub).
The test turns recycling off for its run and then requires ``pg_wal`` clean too.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import pgserver
import pytest
from sqlalchemy import create_engine, text, update

from agentctx import ContextEngine
from agentctx.events import utcnow
from agentctx.storage.database import normalize_url
from agentctx.storage.schema import sessions
from agentctx.storage.scrub import LOCK_TIMEOUT_MS, scrub_erased
from conftest import make_png

# A marker's name never holds "zq": stored side by side (JSONB packs a value's strings
# with nothing between them), "zqkeptamarkzqkeptbmark" is two markers.
MARKER = re.compile(rb"zq(?:gone|kept)(?:(?!zq)[a-z0-9])+?mark")


def markers(tag: str, name: str) -> str:
    return f"zq{tag}{name}mark"


def write_user(engine: ContextEngine, user_id: str, tag: str) -> set[str]:
    """Write ``user_id``'s data through every path; returns the markers written."""
    written: set[str] = set()

    def m(name: str) -> str:
        written.add(markers(tag, name))
        return markers(tag, name)

    session = engine.create_session(
        user_id, state={"note": m("state")}, metadata={"label": m("sessionmeta")}
    )
    for i in range(6):
        session.add_message(
            "user", f"hello {m(f'msg{i}')} remember {m(f'word{i}')}", metadata={"k": m(f"evm{i}")}
        )
        session.add_message("assistant", f"sure, {m(f'reply{i}')}", model=m(f"model{i}"))
    call = session.add_tool_call("lookup", {"query": m("toolarg")}, metadata={"t": m("callmeta")})
    session.add_tool_result(call.call_id, f"found {m('toolres')}", data={"rows": [m("tooldata")]})
    big = session.add_tool_call("fetch", {"url": m("fetcharg")})
    large = " ".join(m(f"large{i}") for i in range(5000))  # past the size guard: a blob
    session.add_tool_result(big.call_id, large)
    session.add_message("user", f"look {m('imagemsg')}", images=[make_png(seed=ord(tag[0]))])
    session.update_state({"later": m("state2")})
    engine.memory.add(user_id, f"The user's codename is {m('memory')}")
    # The search index (its full-text table included) and a thread summary.
    assert engine.search_index.search(user_id, session.id, f"remember {markers(tag, 'word1')}")
    assert engine.thread_summaries.maybe_update(user_id, session.id, force=True) is not None
    assert engine.memory.search(user_id, "codename")
    return written


def found_in(paths: list[Path]) -> set[str]:
    """The marker strings in the raw bytes of ``paths`` (files, or directories walked)."""
    found: set[str] = set()
    for path in paths:
        files = [path] if path.is_file() else [p for p in path.rglob("*") if p.is_file()]
        for file in files:
            try:
                data = file.read_bytes()
            except (FileNotFoundError, PermissionError):
                continue  # a temporary file gone meanwhile
            found.update(match.decode() for match in MARKER.findall(data))
    return found


def postgresql_files(server: pgserver.PostgresServer, engine: ContextEngine) -> list[Path]:
    """Every file of the server but the WAL and other databases' (other tests'): the
    database's tables and indexes, the shared catalogs, statistics, the server log."""
    with engine.db.read() as conn:
        oid = conn.execute(
            text("SELECT oid FROM pg_database WHERE datname = current_database()")
        ).scalar_one()
    pgdata = Path(server.pgdata)
    assert (pgdata / "base" / str(oid)).is_dir()
    return [pgdata / "base" / str(oid)] + [
        p for p in pgdata.iterdir() if p.name not in ("pg_wal", "base")
    ]


def sqlite_files(db_path: Path) -> list[Path]:
    return [p for p in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")) if p.exists()]


def _engine(db_url: str, home: Path, **settings: object) -> ContextEngine:
    return ContextEngine(
        url=db_url,
        home=home,
        embeddings={"provider": "hashing"},
        jobs="inline",
        erasure_poll=None,
        thread_summary={"enabled": True, "every_messages": 5, "budget_tokens": 60},
        **settings,
    )


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """The default: a user's erasure rewrites PostgreSQL's tables, sessions vacuum."""
    engine = _engine(db_url, home)
    yield engine
    engine.close()


@pytest.fixture
def rewriting_engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """``erasure_scrub: rewrite``: every deletion rewrites PostgreSQL's tables."""
    engine = _engine(db_url, home, erasure_scrub="rewrite")
    yield engine
    engine.close()


def test_an_erased_users_strings_leave_the_files(
    engine: ContextEngine, backend: str, home: Path, request: pytest.FixtureRequest
) -> None:
    gone = write_user(engine, "u-gone", "gone")
    kept = write_user(engine, "u-kept", "kept")
    blob_dir = home / "blobs"
    blobs_before = {p.name for p in blob_dir.rglob("*") if p.is_file()}

    report = engine.delete_user_data("u-gone")
    assert report.events and report.blobs and report.extra.get("memories") == 1

    if backend == "sqlite":
        assert engine.db.path is not None
        db_path = engine.db.path
        with engine.db.read() as conn:  # set on every connection, not left to the build
            assert conn.exec_driver_sql("PRAGMA secure_delete").scalar() == 1
        # While the engine is still open (a server's case): the WAL was checkpointed.
        assert found_in(sqlite_files(db_path)) & gone == set()
        engine.close()
        database_files = sqlite_files(db_path)
        wal_files: list[Path] = []
    else:
        server: pgserver.PostgresServer = request.getfixturevalue("pg_server")
        database_files = postgresql_files(server, engine)
        engine.close()
        _flush_and_drop_wal(server)
        wal_files = [Path(server.pgdata) / "pg_wal"]

    assert found_in(database_files) & gone == set()
    assert found_in([*database_files, blob_dir]) >= kept
    assert found_in([home]) & gone == set()  # blobs, the audit file
    assert found_in(wal_files) & gone == set()
    # The erased user's blobs are gone, the other user's are still there.
    blobs_after = {p.name for p in blob_dir.rglob("*") if p.is_file()}
    assert blobs_after < blobs_before


def _flush_and_drop_wal(server: pgserver.PostgresServer) -> None:
    """Write the dirty pages to the table files and let go of the WAL written so far,
    with recycling off so finished segments are deleted rather than renamed for reuse
    (the setting is reset afterwards: the server is shared by the test session)."""
    server.psql("ALTER SYSTEM SET wal_recycle = off;")
    server.psql("SELECT pg_reload_conf();")
    try:
        for _ in range(2):
            server.psql("SELECT pg_switch_wal();")
            server.psql("CHECKPOINT;")
    finally:
        server.psql("ALTER SYSTEM RESET wal_recycle;")
        server.psql("SELECT pg_reload_conf();")


def test_the_scrub_reports_what_it_did(engine: ContextEngine, backend: str) -> None:
    write_user(engine, "u-gone", "gone")
    report = scrub_erased(engine.db)
    if backend == "sqlite":
        assert {"search_fts", "memory_fts"} <= set(report.optimized)
        assert report.checkpointed
        assert report.vacuumed == []
    else:
        assert {"events", "search_fts", "memory_fts", "memories"} <= set(report.vacuumed)


@pytest.mark.parametrize("backend", ["postgresql"])  # table locks are PostgreSQL's
def test_a_transaction_left_open_does_not_stall_the_scrub(
    engine: ContextEngine, backend: str, db_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    """PostgreSQL: VACUUM FULL waits a bounded time for a table another transaction
    holds, then vacuums it in place (which that transaction does not block)."""
    write_user(engine, "u-gone", "gone")
    raw = create_engine(normalize_url(db_url))
    try:
        with raw.connect() as holder:
            holder.execute(text("SELECT count(*) FROM events"))  # holds ACCESS SHARE
            started = time.monotonic()
            report = scrub_erased(engine.db)
            waited = time.monotonic() - started
            holder.rollback()
    finally:
        raw.dispose()
    assert "events" in report.vacuumed  # in place, once FULL was refused
    assert waited < 4 * LOCK_TIMEOUT_MS / 1000
    assert any("VACUUM (FULL) events" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("how", ["delete_session", "sweep"])
def test_a_deleted_or_expired_sessions_strings_leave_the_files(
    rewriting_engine: ContextEngine,
    backend: str,
    home: Path,
    how: str,
    request: pytest.FixtureRequest,
) -> None:
    """The other ways data is erased scrub too: a session's deletion, and the sweep of
    expired sessions (on PostgreSQL with ``erasure_scrub: rewrite``; by default they
    take a plain VACUUM, which locks nothing)."""
    engine = rewriting_engine
    session = engine.create_session("u1")
    kept = engine.create_session("u1")
    for i in range(4):
        session.add_message("user", f"note {markers('gone', f'sess{i}')}")
        kept.add_message("user", f"note {markers('kept', f'sess{i}')}")
    assert engine.search_index.search("u1", session.id, "note")
    if how == "delete_session":
        engine.delete_session(session.id, user_id="u1")
    else:
        with engine.db.write() as conn:  # expired (a write renews a session's TTL)
            conn.execute(
                update(sessions)
                .where(sessions.c.session_id == session.id)
                .values(expires_at=utcnow() - timedelta(seconds=1))
            )
        assert engine.sweep().expired_sessions == 1
    if backend == "sqlite":
        assert engine.db.path is not None
        files = sqlite_files(engine.db.path)
    else:
        server: pgserver.PostgresServer = request.getfixturevalue("pg_server")
        server.psql("CHECKPOINT;")  # the table files as the database now has them
        files = postgresql_files(server, engine)
    found = found_in(files)
    assert {m for m in found if m.startswith("zqgone")} == set()
    assert {markers("kept", f"sess{i}") for i in range(4)} <= found
