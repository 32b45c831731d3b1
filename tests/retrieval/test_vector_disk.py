"""Vectors take disk in proportion to how many are stored, not to how many sessions hold
them; vector tables of the old sqlite-vec ``vec0`` form are converted, vectors kept."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Connection, text

from agentctx import ContextEngine
from agentctx.bench.store_disk import database_sizes
from agentctx.bench.targets import DISK_VECTOR_MAX_RATIO, DISK_VECTOR_SLACK_BYTES
from agentctx.memory.index_tables import DOCS_TABLE
from agentctx.memory.index_tables import vector_table as memory_vector_table
from agentctx.retrieval.tables import LEXICAL_TABLE, refresh_cleanup_trigger

SESSIONS = 200


@pytest.fixture
def embedding_engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        yield engine


def vector_count(conn: Connection) -> int:
    return int(
        conn.execute(text("SELECT coalesce(sum(vector_count), 0) FROM search_dense")).scalar() or 0
    )


def test_disk_grows_with_the_vectors_not_with_the_sessions(
    embedding_engine: ContextEngine,
) -> None:
    engine, index = embedding_engine, embedding_engine.search_index
    assert index.dense_enabled
    before = database_sizes(engine)
    for i in range(SESSIONS):
        session = engine.create_session(user_id="u1")
        session.add_message("user", f"one short question number {i} about a parcel")
        index.sync("u1", session.id)
    after = database_sizes(engine)
    with engine.db.read() as conn:
        vectors = vector_count(conn)
    assert vectors == 2 * SESSIONS  # each event, and each after the one before it
    dimensions = 384
    raw = vectors * dimensions * 4
    # Within the target: 2x raw plus one page a session (about 2 MB here). A vec0 table
    # partitioned by session took 1,024 vectors' room a session a table (over 600 MB).
    bound = DISK_VECTOR_MAX_RATIO * raw + DISK_VECTOR_SLACK_BYTES * SESSIONS
    grown = after["vectors"] - before["vectors"]
    assert 0 < grown <= bound, (grown, bound)
    assert after["total"] - before["total"] <= 3 * bound


def _as_vec0(conn: Connection, table: str, key: str, columns: str, docs_table: str) -> None:
    """Rewrite a vector table in the form earlier releases made (a sqlite-vec ``vec0``
    table partitioned by ``key``, rowid = doc_id, deleted through the cleanup trigger)."""
    rows = conn.exec_driver_sql(f'SELECT doc_id, {columns}, embedding FROM "{table}"').all()
    conn.exec_driver_sql(f'DROP TABLE "{table}"')
    conn.exec_driver_sql(
        f'CREATE VIRTUAL TABLE "{table}" USING vec0({key} integer partition key, '
        "embedding float[384] distance_metric=cosine"
        + (", seq integer)" if "seq" in columns else ")")
    )
    names = ", ".join(columns.split(", "))
    marks = ", ".join("?" for _ in range(len(columns.split(", ")) + 2))
    conn.exec_driver_sql(
        f'INSERT INTO "{table}" (rowid, {names}, embedding) VALUES ({marks})',
        [tuple(row) for row in rows],
    )
    search = docs_table == "search_docs"
    refresh_cleanup_trigger(
        conn,
        trigger="search_docs_derived_cleanup" if search else "memory_fts_docs_cleanup",
        docs_table=docs_table,
        lexical_table=LEXICAL_TABLE if search else "memory_fts",
        vector_prefix="search_vec_" if search else "memory_vec_",
    )


def memory_ranks(engine: ContextEngine) -> list[tuple[str, int | None]]:
    hits = engine.memory.search("u1", "where is the kettle")
    return [(hit.memory.memory_id, hit.dense_rank) for hit in hits]


def _table_sql(conn: Connection, name: str) -> str:
    return str(
        conn.exec_driver_sql("SELECT sql FROM sqlite_master WHERE name = ?", (name,)).scalar()
    )


def test_vec0_tables_of_an_earlier_release_are_converted_with_their_vectors(
    tmp_path: Path,
) -> None:
    url, home = f"sqlite:///{tmp_path / 'old.db'}", tmp_path / "home"
    config = {"embeddings": {"provider": "hashing"}, "redaction": {"enabled": False}}
    questions = ["where is my parcel", "refund for the broken kettle", "change my address"]
    with ContextEngine(url=url, home=home, **config) as engine:
        sessions = []
        for topic in ("parcel delivery", "kettle refund", "address change"):
            session = engine.create_session(user_id="u1")
            with session.turn() as turn:
                for i in range(30):
                    turn.add_message("user", f"message {i} on the {topic}, detail {i * 7}")
            engine.search_index.sync("u1", session.id)
            sessions.append(session.id)
        engine.memory.add("u1", "prefers parcels left with the neighbour")
        engine.memory.add("u1", "kettle bought in March")
        before = {
            (sid, q): [(h.seq, round(h.score, 6)) for h in engine.search_index.search("u1", sid, q)]
            for sid in sessions
            for q in questions
        }
        remembered = memory_ranks(engine)
        assert any(dense is not None for _, dense in remembered)
        with engine.db.write() as conn:
            vectors = {
                name: conn.exec_driver_sql(f"SELECT count(*) FROM {name}").scalar()
                for name in ("search_vec_1", "search_vec_2", "memory_vec_1")
            }
            _as_vec0(conn, "search_vec_1", "sid", "sid, seq", "search_docs")
            _as_vec0(conn, "search_vec_2", "sid", "sid, seq", "search_docs")
            _as_vec0(conn, "memory_vec_1", "uid", "uid", DOCS_TABLE)
            assert "USING vec0" in _table_sql(conn, "search_vec_1")
    assert all(vectors.values())

    with ContextEngine(url=url, home=home, **config) as engine:
        after = {
            (sid, q): [(h.seq, round(h.score, 6)) for h in engine.search_index.search("u1", sid, q)]
            for sid in sessions
            for q in questions
        }
        assert after == before
        assert memory_ranks(engine) == remembered
        with engine.db.read() as conn:
            for name, count in vectors.items():
                assert "VIRTUAL" not in _table_sql(conn, name)
                assert conn.exec_driver_sql(f"SELECT count(*) FROM {name}").scalar() == count
            trigger = _table_sql(conn, "search_docs_derived_cleanup")
            assert "search_vec" not in trigger  # the foreign keys cascade now
        # Deleting a converted session removes its vectors (by the foreign key).
        engine.delete_session(sessions[0], user_id="u1")
        with engine.db.read() as conn:
            for name in ("search_vec_1", "search_vec_2"):
                left = conn.exec_driver_sql(f"SELECT count(*) FROM {name}").scalar()
                assert left == vectors[name] * 2 // 3
        engine.delete_user_data("u1")
        with engine.db.read() as conn:
            for name in vectors:
                assert conn.exec_driver_sql(f"SELECT count(*) FROM {name}").scalar() == 0


def _vector_blobs(conn: Connection, user_id: str) -> list[bytes]:
    rows = conn.exec_driver_sql(
        "SELECT v.embedding FROM search_vec_1 AS v "
        "JOIN search_sessions AS s ON s.sid = v.sid WHERE s.user_id = ?",
        (user_id,),
    )
    return [bytes(row[0]) for row in rows]


def test_an_erased_users_vectors_leave_the_sqlite_file(tmp_path: Path) -> None:
    path = tmp_path / "erase.db"
    with ContextEngine(
        url=f"sqlite:///{path}", home=tmp_path / "home", embeddings={"provider": "hashing"}
    ) as engine:
        for user_id in ("gone", "kept"):
            session = engine.create_session(user_id=user_id)
            with session.turn() as turn:
                for i in range(20):
                    turn.add_message("user", f"{user_id} writes note {i}: item {i * 13} ok")
            engine.search_index.sync(user_id, session.id)
        with engine.db.read() as conn:
            gone, kept = _vector_blobs(conn, "gone"), _vector_blobs(conn, "kept")
        assert len(gone) == len(kept) == 20
        assert not set(gone) & set(kept)
        engine.delete_user_data("gone")
    files = b"".join(p.read_bytes() for p in tmp_path.glob("erase.db*"))
    assert all(blob in files for blob in kept)  # so a vector left behind would be seen
    assert not any(blob in files for blob in gone)


def test_memory_vectors_take_disk_by_the_memory_not_by_the_user(
    embedding_engine: ContextEngine,
) -> None:
    engine = embedding_engine
    engine.memory.add("u0", "a first memory, so that the tables exist")
    before = database_sizes(engine)
    users = 100
    for i in range(users):
        engine.memory.add(f"user{i}", f"prefers delivery number {i} before noon")
    after = database_sizes(engine)
    index = engine.memory.index
    assert index is not None and index._embedder_id is not None
    with engine.db.read() as conn:
        table = memory_vector_table(index._embedder_id)
        stored = int(conn.execute(text(f"SELECT count(*) FROM {table}")).scalar() or 0)
    assert stored == users + 1
    bound = DISK_VECTOR_MAX_RATIO * users * 384 * 4 + DISK_VECTOR_SLACK_BYTES * users
    grown = after["vectors"] - before["vectors"]
    assert 0 < grown <= bound, (grown, bound)  # vec0: 1.5 MB a user, 150 MB here
