"""``agentctx bench store`` (f): disk bytes per short session, with its vectors.

Many short sessions (20-60 messages each, like a support deployment's) are written into
a fresh database, indexed and embedded (every message gets a vector, and a second one
embedded after the message before it: the two vector tables of the retrieval index),
then the database's growth is measured and divided by the sessions:

SQLite
    The file (and its ``-wal``, emptied by a checkpoint first) before and after; each
    table's pages (``dbstat``) split it into the events, the vectors and the rest.
PostgreSQL
    A database of its own on the same server: ``pg_database_size`` before and after,
    split by each table's ``pg_total_relation_size`` (indexes and TOAST included).

"Vectors" are the vector tables (``search_vec_<id>``, ``memory_vec_<id>``) and the
sign codes and int8 copies kept beside them (``search_codes``); "events" the event log
and its indexes. The target (``DISK_VECTOR_MAX_RATIO`` and ``DISK_VECTOR_SLACK_BYTES``
in :mod:`agentctx.bench.targets`): vectors take at most twice their raw size
(dimensions x 4 bytes each) plus a small constant per session, so that disk grows with
the vectors stored, not with the sessions.

Texts are synthetic (the store benchmark's corpus) unless conversations are given
(:func:`agentctx.bench.agentloop_data.load_conversations`'s format), whose messages are
then replayed in order, cut to :data:`MAX_MESSAGES` each.
"""

from __future__ import annotations

import contextlib
import random
import tempfile
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from pydantic import BaseModel
from sqlalchemy import Connection, create_engine, text
from sqlalchemy.engine import make_url

from agentctx.bench.stats import chat_messages
from agentctx.bench.subjects import AgentctxSubject, StoreSubject
from agentctx.bench.targets import DISK_VECTOR_MAX_RATIO, DISK_VECTOR_SLACK_BYTES
from agentctx.engine import ContextEngine

Progress = Callable[[str], None]

MIN_MESSAGES = 20
MAX_MESSAGES = 60

_USER = "bench-disk"
_EVENT_TABLES = ("events",)
_VECTOR_PREFIXES = ("search_vec_", "search_codes", "memory_vec_")


class DiskResult(BaseModel):
    """(f) What ``sessions`` short sessions added to a fresh database, per session."""

    system: str
    sessions: int
    events: int
    vectors: int  # stored, in every vector table
    dimensions: int
    bytes_per_session: float  # the whole database's growth
    event_bytes_per_session: float
    vector_bytes_per_session: float
    other_bytes_per_session: float
    raw_vector_bytes_per_session: float  # vectors x dimensions x 4
    data: str  # "synthetic" or the conversations' file name

    @property
    def vector_bound(self) -> float:
        """The most vector bytes a session may take (the target)."""
        return DISK_VECTOR_MAX_RATIO * self.raw_vector_bytes_per_session + DISK_VECTOR_SLACK_BYTES


def session_texts(count: int, *, seed: int = 0, data: Path | None = None) -> list[list[str]]:
    """``count`` sessions' message texts, 20-60 each: synthetic, or replayed (and reused
    round-robin) from the conversations in ``data``."""
    rng = random.Random(seed)
    if data is None:
        sessions = []
        start = 0
        for _ in range(count):
            size = rng.randint(MIN_MESSAGES, MAX_MESSAGES)
            sessions.append(chat_messages(start, size))
            start += size
        return sessions
    from agentctx.bench.agentloop_data import (  # noqa: PLC0415 - only with --disk-data
        load_conversations,
        message_text,
    )

    replayed = []
    for conversation in load_conversations(data):
        texts = [t for t in (message_text(m) for m in conversation.messages) if t.strip()]
        if texts:
            replayed.append(texts[:MAX_MESSAGES])
    if not replayed:
        return []
    return [replayed[i % len(replayed)] for i in range(count)]


def _group(table: str) -> str:
    if table in _EVENT_TABLES:
        return "events"
    if table.startswith(_VECTOR_PREFIXES):
        return "vectors"
    return "other"


def _sqlite_sizes(engine: ContextEngine) -> dict[str, int]:
    """Bytes of the file and its WAL (after a checkpoint), and by group (``dbstat``)."""
    db = engine.db
    assert db.path is not None
    with db.write_lock(), db.engine.connect() as conn:
        raw = conn.connection.dbapi_connection
        assert raw is not None
        raw.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        owners = dict(raw.execute("SELECT name, tbl_name FROM sqlite_master").fetchall())
        pages = raw.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    sizes = {"events": 0, "vectors": 0, "other": 0}
    for name, size in pages:
        sizes[_group(owners.get(name, name))] += int(size)
    path = Path(db.path)
    wal = path.with_name(path.name + "-wal")
    sizes["total"] = path.stat().st_size + (wal.stat().st_size if wal.exists() else 0)
    return sizes


def _postgres_sizes(engine: ContextEngine) -> dict[str, int]:
    """``pg_database_size`` and each group's ``pg_total_relation_size``."""
    with engine.db.engine.connect() as conn:
        conn.exec_driver_sql("CHECKPOINT")
        rows = conn.execute(
            text(
                "SELECT tablename, pg_total_relation_size(quote_ident(tablename)) "
                "FROM pg_tables WHERE schemaname = current_schema()"
            )
        ).all()
        total = conn.execute(text("SELECT pg_database_size(current_database())")).scalar()
    sizes = {"events": 0, "vectors": 0, "other": 0, "total": int(total or 0)}
    for name, size in rows:
        sizes[_group(str(name))] += int(size)
    return sizes


def database_sizes(engine: ContextEngine) -> dict[str, int]:
    """Bytes the engine's database takes: ``total`` (SQLite: the file and its WAL after
    a checkpoint; PostgreSQL: the database), and of it the ``events``, the ``vectors``
    and the ``other`` tables (each with its indexes)."""
    if engine.db.dialect == "sqlite":
        return _sqlite_sizes(engine)
    return _postgres_sizes(engine)


@contextlib.contextmanager
def _fresh_postgres(url: str) -> Iterator[str]:
    """A new database on the server of ``url`` (dropped afterwards)."""
    name = f"agentctx_disk_{random.randrange(1 << 30)}"
    admin = create_engine(url, isolation_level="AUTOCOMMIT")
    try:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'CREATE DATABASE "{name}"')
        yield make_url(url).set(database=name).render_as_string(hide_password=False)
    finally:
        with admin.connect() as conn:
            conn.exec_driver_sql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        admin.dispose()


def _count(conn: Connection, sql: str) -> int:
    return int(conn.execute(text(sql)).scalar() or 0)


def _replay(engine: ContextEngine, sessions: Sequence[Sequence[str]]) -> tuple[int, int]:
    """Write, index and embed the sessions; (events, vectors) stored."""
    index = engine.search_index
    for texts in sessions:
        session = engine.create_session(user_id=_USER)
        with session.turn() as turn:
            for i, message in enumerate(texts):
                turn.add_message("user" if i % 2 == 0 else "assistant", message)
        index.sync(_USER, session.id)
    with engine.db.read() as conn:
        events = _count(conn, "SELECT count(*) FROM events")
        vectors = _count(conn, "SELECT coalesce(sum(vector_count), 0) FROM search_dense")
    return events, vectors


def measure_disk(
    backend: str,
    url: str | None,
    *,
    sessions: int,
    workdir: Path | None = None,
    data: Path | None = None,
    progress: Progress | None = None,
) -> DiskResult:
    """Replay ``sessions`` short sessions into a fresh database of ``backend`` (on the
    PostgreSQL server of ``url``) and measure what each added on disk."""
    say = progress or (lambda _message: None)
    texts = session_texts(sessions, data=data)
    with contextlib.ExitStack() as stack:
        home = Path(stack.enter_context(tempfile.TemporaryDirectory(dir=workdir)))
        if backend == "sqlite":
            url = f"sqlite:///{home / 'disk.db'}"
        else:
            assert url is not None
            url = stack.enter_context(_fresh_postgres(url))
        engine = ContextEngine(url=url, home=home / "home", embeddings={"provider": "hashing"})
        stack.callback(engine.close)
        embedder = engine.search_index.embedder
        assert embedder is not None
        engine.search_index.dense_enabled  # noqa: B018 - creates the tables before the baseline
        before = database_sizes(engine)
        say(f"disk per session: {len(texts)} short sessions into {backend}")
        events, vectors = _replay(engine, texts)
        after = database_sizes(engine)
    n = max(len(texts), 1)
    grown: dict[str, Any] = {k: (after[k] - before[k]) / n for k in after}
    return DiskResult(
        system=f"agentctx-{backend}",
        sessions=len(texts),
        events=events,
        vectors=vectors,
        dimensions=embedder.dimensions,
        bytes_per_session=grown["total"],
        event_bytes_per_session=grown["events"],
        vector_bytes_per_session=grown["vectors"],
        other_bytes_per_session=grown["total"] - grown["events"] - grown["vectors"],
        raw_vector_bytes_per_session=vectors * embedder.dimensions * 4 / n,
        data="synthetic" if data is None else data.name,
    )


def measure_subjects(
    subjects: Sequence[StoreSubject],
    *,
    sessions: int,
    workdir: Path | None,
    data: Path | None,
    progress: Progress | None = None,
) -> list[DiskResult]:
    """:func:`measure_disk` for the backend of each agentctx subject (none when
    ``sessions`` is 0); on PostgreSQL, on the subject's server."""
    results = []
    for subject in subjects:
        if not isinstance(subject, AgentctxSubject) or sessions < 1:
            continue
        db = subject.engine.db
        url = None if db.dialect == "sqlite" else db.engine.url.render_as_string(False)
        results.append(
            measure_disk(
                db.dialect, url, sessions=sessions, workdir=workdir, data=data, progress=progress
            )
        )
    return results
