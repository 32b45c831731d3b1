"""The in-memory exact search of a SQLite user's memory vectors ranks as the database's."""

from __future__ import annotations

import random
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.memory import index_dense
from agentctx.memory.index_tables import user_partition

TOPICS = ["parcel", "kettle", "address", "refund", "invoice", "passport", "train", "noon"]


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[ContextEngine]:
    with ContextEngine(
        url=f"sqlite:///{tmp_path / 'db.sqlite'}",
        home=tmp_path / "home",
        embeddings={"provider": "hashing"},
        redaction={"enabled": False},
    ) as eng:
        yield eng


def _queries(count: int, seed: int = 7) -> list[list[float]]:
    """Random directions: their distances to the stored vectors are all distinct."""
    rng = random.Random(seed)
    return [[rng.gauss(0.0, 1.0) for _ in range(384)] for _ in range(count)]


def _stamp(engine: ContextEngine, uid: int) -> tuple[int, int]:
    with engine.db.read() as conn:
        count, newest = conn.exec_driver_sql(
            "SELECT count(*), max(doc_id) FROM memory_fts_docs WHERE uid = ?", (uid,)
        ).one()
    return int(count), int(newest)


@pytest.mark.parametrize("k", [1, 10, 500])
def test_cached_memory_search_equals_the_database_hit_for_hit(
    engine: ContextEngine, k: int
) -> None:
    rng = random.Random(k)
    for i in range(150):
        words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(1, 4)))
        engine.memory.add("u1", f"note {i}: {words}")
    index = engine.memory.index
    assert index is not None and index.dense_enabled
    embedder_id, uid = index._embedder_id, user_partition("u1")
    assert embedder_id is not None
    cache = index_dense.FloatCache()
    stamp = _stamp(engine, uid)
    with engine.db.read() as conn:
        for query in _queries(5):
            exact = index_dense.exact_search(conn, embedder_id, uid, query, k=k)
            cached = cache.search(conn, embedder_id, uid, stamp, query, k=k)
            assert [doc for doc, _ in cached] == [doc for doc, _ in exact]
            assert [d for _, d in cached] == pytest.approx([d for _, d in exact], abs=1e-6)
            assert len(cached) == min(k, 150)
        assert cache.search(conn, embedder_id, uid, stamp, [0.0] * 384, k=k) == []


def test_a_new_memory_is_found_once_the_stamp_moves(engine: ContextEngine) -> None:
    engine.memory.add("u1", "the kettle was bought in March")
    index = engine.memory.index
    assert index is not None and index._embedder_id is not None
    embedder_id, uid = index._embedder_id, user_partition("u1")
    cache = index_dense.FloatCache()
    query = index.embedder.embed(["parcel left with the neighbour"])[0]
    with engine.db.read() as conn:
        first = cache.search(conn, embedder_id, uid, _stamp(engine, uid), query, k=5)
    added = engine.memory.add("u1", "parcel left with the neighbour")
    with engine.db.read() as conn:
        second = cache.search(conn, embedder_id, uid, _stamp(engine, uid), query, k=5)
        newest = conn.exec_driver_sql(
            "SELECT doc_id FROM memory_fts_docs WHERE memory_id = ?", (added.memory_id,)
        ).scalar()
    assert len(first) == 1 and len(second) == 2
    assert second[0] == (newest, pytest.approx(0.0, abs=1e-6))
    assert engine.memory.search("u1", "parcel left with the neighbour")
    assert len(index._floats) == 2  # the index's own cache: the user's two vectors
    index.forget_user("u1")
    assert len(index._floats) == 0
