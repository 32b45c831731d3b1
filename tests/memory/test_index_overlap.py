"""The memory search's one-statement state read, background code scan and chunked
code loading: same results as the sequential path, on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from sqlalchemy import text

from agentctx.llm.hashing import HashingEmbedder
from agentctx.memory import index_dense, index_terms
from agentctx.memory.index import MemoryIndex
from agentctx.memory.index_tables import DOCS_TABLE, vector_table
from agentctx.memory.index_tables import user_partition as partition
from agentctx.memory.models import Memory, MemoryKind
from agentctx.memory.store import insert_memory
from agentctx.retrieval.codes import sign_words
from agentctx.storage.database import Database
from agentctx.storage.migrate import upgrade

NOW = datetime(2026, 6, 1, tzinfo=UTC)
_ids = itertools.count(1)
TOPICS = ["coffee", "violin", "train", "novels", "tea", "tennis", "opera", "sushi"]
QUERIES = ["coffee violin", "morning train novels", "opera", "tea tennis sushi", "unknownword"]


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    upgrade(database)
    yield database
    database.dispose()


def make(user_id: str, content: str, days: int) -> Memory:
    at = NOW - timedelta(days=days)
    return Memory(
        memory_id=f"mo_{next(_ids):06d}",
        user_id=user_id,
        agent_id=None,
        session_id=None,
        kind=MemoryKind.FACT,
        subject=None,
        content=content,
        data={},
        keywords=(),
        confidence=0.5 + (days % 5) / 10,
        support_count=1,
        tainted=False,
        version=1,
        status="active",
        extractor_version="test",
        model=None,
        created_at=at,
        updated_at=at,
        expires_at=None,
    )


def fill(db: Database, index: MemoryIndex, count: int, user: str = "u1") -> list[Memory]:
    items = [
        make(user, f"Note {i}: {TOPICS[i % 8]} and {TOPICS[(i * 3) % 8]} item {i}", i % 40)
        for i in range(count)
    ]
    with db.write() as conn:
        for m in items:
            row = m.model_dump(exclude={"sources"})
            row["kind"] = m.kind.value
            row["keywords"] = list(m.keywords)
            insert_memory(conn, row)
    index.index_memories(items)
    return items


def large_index(db: Database) -> MemoryIndex:
    """An index whose user is over the exact-search limit: the code cache serves it."""
    return MemoryIndex(db, HashingEmbedder(), exact_vector_limit=10, rescore_candidates=20)


def start(
    index: MemoryIndex, db: Database, query: str, *, background: bool
) -> list[tuple[int, float]]:
    embedder = index.embedder
    assert embedder is not None and index._embedder_id is not None
    uid = partition("u1")
    with db.read() as conn:
        state = index_terms.search_state(conn, uid, [], 10)
        pending = index_dense.start_search(
            conn,
            index._codes,
            embedder_id=index._embedder_id,
            uid=uid,
            stamp=(state.documents, state.newest),
            query=embedder.embed([query])[0],
            k=15,
            exact_limit=10,
            rescore=20,
            background=background,
        )
        # The connection is free while the scan runs: use it.
        assert conn.execute(text("SELECT 1")).scalar_one() == 1
        return pending()


@pytest.fixture
def pooled(monkeypatch: pytest.MonkeyPatch) -> None:
    """Scan every code set on the pool (by default only the large ones go there)."""
    monkeypatch.setattr(index_dense, "BACKGROUND_SCAN_MIN", 0)


def scan_threads() -> int:
    return sum(t.name.startswith("agentctx-memscan") for t in threading.enumerate())


@pytest.mark.usefixtures("pooled")
def test_background_scan_gives_the_inline_result(db: Database) -> None:
    index = large_index(db)
    fill(db, index, 60)
    for query in QUERIES:
        inline = start(index, db, query, background=False)
        assert len(inline) == 15
        assert start(index, db, query, background=True) == inline
    assert scan_threads() >= 1


@pytest.mark.usefixtures("pooled")
def test_a_failing_scan_raises_in_the_caller(db: Database) -> None:
    index = large_index(db)
    fill(db, index, 30)
    assert index._embedder_id is not None
    with db.read() as conn:
        pending = index_dense.start_search(
            conn,
            index._codes,
            embedder_id=index._embedder_id,
            uid=partition("u1"),
            stamp=index_terms.search_state(conn, partition("u1"), [], 10).stamp(),
            query=[1.0] * 7,  # not the embedder's 384 dimensions
            k=5,
            exact_limit=10,
            rescore=20,
        )
        with pytest.raises(ValueError):
            pending()


@pytest.mark.usefixtures("pooled")
def test_concurrent_searches_get_what_they_get_alone(db: Database) -> None:
    """Searches from several threads share the scan pool and the code cache; each gets
    exactly the hits it gets alone (and the same as with the scan inline)."""
    index = large_index(db)
    fill(db, index, 80)
    alone = {q: index.search("u1", q, now=NOW) for q in QUERIES}
    with pytest.MonkeyPatch.context() as inline:
        inline.setattr(index_dense, "BACKGROUND_SCAN_MIN", 10**9)
        for query in QUERIES:
            got = [(h.memory.memory_id, h.score) for h in index.search("u1", query, now=NOW)]
            assert got == [(h.memory.memory_id, h.score) for h in alone[query]]
    results: dict[tuple[int, str], list[tuple[str, float]]] = {}
    barrier = threading.Barrier(4)

    def run(worker: int) -> None:
        barrier.wait()
        for query in QUERIES:
            hits = index.search("u1", query, now=NOW)
            results[(worker, query)] = [(h.memory.memory_id, h.score) for h in hits]

    threads = [threading.Thread(target=run, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 4 * len(QUERIES)
    for (_, query), got in results.items():
        assert got == [(h.memory.memory_id, h.score) for h in alone[query]]
    assert any(alone[q] for q in QUERIES)


def test_search_state_reads_what_the_separate_queries_read(db: Database, backend: str) -> None:
    index = MemoryIndex(db)
    fill(db, index, 12)
    fill(db, index, 3, user="u2")
    uid = partition("u1")
    terms = ["coffee", "violin", "oboe", "coffee"]
    with db.read() as conn:
        state = index_terms.search_state(conn, uid, terms, 5)
        newest = conn.execute(
            text(f"SELECT max(doc_id) FROM {DOCS_TABLE} WHERE uid = :u"), {"u": uid}
        ).scalar_one()
        frequencies = index_terms.document_frequencies(conn, uid, terms)
        assert state.documents == 6  # counted up to the limit + 1
        assert state.newest == newest
        assert index_terms.search_state(conn, uid, [], 100).documents == 12
        if backend == "postgresql":
            assert state.frequencies == frequencies
            assert frequencies["oboe"] == 0 and frequencies["coffee"] > 0
        else:
            assert state.frequencies is None
        nobody = index_terms.search_state(conn, partition("nobody"), ["coffee"], 5)
        assert (nobody.documents, nobody.newest) == (0, 0)
        if backend == "postgresql":  # the recent window is PostgreSQL's
            bounds = index_terms.RecentBounds()
            given = bounds.bound(conn, uid, 4, newest=state.newest)
            assert given == index_terms.recent_bound(conn, uid, 4) is not None
            assert index_terms.RecentBounds().bound(conn, uid, 4) == given


def test_chunked_code_load_matches_the_stored_vectors(
    db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Loading in chunks (three here) gives every vector once, in doc_id order, with
    the codes and int8 rows of the vectors as stored."""
    index = large_index(db)
    fill(db, index, 25)
    fill(db, index, 4, user="u2")
    monkeypatch.setattr(index_dense, "_LOAD_CHUNK", 10)
    assert index._embedder_id is not None
    uid = partition("u1")
    with db.read() as conn:
        state = index_terms.search_state(conn, uid, [], 10)
        entry = index._codes.entry(conn, index._embedder_id, uid, state.stamp())
        stored = index_dense.vectors_of(conn, index._embedder_id, [int(d) for d in entry.doc_ids])
        if conn.dialect.name == "postgresql":
            count = conn.execute(
                text(f'SELECT count(*) FROM "{vector_table(index._embedder_id)}" WHERE uid = :u'),
                {"u": uid},
            ).scalar_one()
            assert count == 25
    assert len(entry.doc_ids) == 25 and len(stored) == 25
    matrix = np.asarray(
        [
            np.frombuffer(v, dtype=np.float32) if isinstance(v, bytes) else v
            for v in (stored[int(d)] for d in entry.doc_ids)
        ],
        dtype=np.float32,
    )
    if db.dialect == "postgresql":
        assert list(entry.doc_ids) == sorted(entry.doc_ids)
    assert (entry.codes == sign_words(np, matrix)).all()
    assert (entry.quantized == index_dense._quantize(np, matrix)).all()
