"""The in-memory exact search of small SQLite sessions must rank as sqlite-vec does."""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.llm import HashingEmbedder
from agentctx.retrieval import RetrievalConfig, SearchIndex
from agentctx.retrieval import dense as dense_index
from agentctx.retrieval.sync import read_state
from agentctx.retrieval.vector_cache import VectorCache

TOPICS = ["tokyo flight", "paris weather", "passport renewal", "tax return", "dog walking"]


class SmoothEmbedder:
    """Hashing vectors plus a small text-seeded Gaussian: the hashing embedder's many equal
    distances become distinct, as with a real model, so the order is fully determined."""

    name = "smooth-test-384"
    dimensions = 384

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out = []
        for text, base in zip(texts, HashingEmbedder().embed(texts), strict=True):
            if not text.strip():
                out.append([0.0] * self.dimensions)
                continue
            rng = random.Random(hashlib.sha256(text.encode()).digest())
            vector = [x + rng.gauss(0.0, 0.02) for x in base]
            norm = sum(x * x for x in vector) ** 0.5
            out.append([x / norm for x in vector])
        return out


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> ContextEngine:
    engine = ContextEngine(
        url=f"sqlite:///{tmp_path}/db.sqlite",
        home=tmp_path,
        redaction={"enabled": False},
        embeddings={"provider": "hashing"},
    )
    yield engine  # type: ignore[misc]
    engine.close()


def _fill(engine: ContextEngine, count: int, start: int = 0) -> str:
    session = engine.create_session(user_id="u1")
    _more(session, count, start)
    return session.id


def _more(session, count: int, start: int = 0) -> None:  # type: ignore[no-untyped-def]
    rng = random.Random(start)
    with session.turn() as turn:
        for i in range(start, start + count):
            words = " ".join(rng.choice(TOPICS) for _ in range(rng.randint(1, 3)))
            # Blank texts embed as zero vectors, whose distance is undefined.
            turn.add_message("user", "   " if i % 17 == 5 else f"note {i}: {words}")


def _both(engine: ContextEngine, session_id: str, query: str, k: int, before: int | None):  # type: ignore[no-untyped-def]
    index = SearchIndex(engine.db, SmoothEmbedder(), config=RetrievalConfig(context_chars=0))
    index.sync("u1", session_id)
    embedder_id = index._ensure_dense()
    assert embedder_id is not None
    assert index.query_vectors is not None
    vector = index.query_vectors.vector(query)
    cache = VectorCache()
    with engine.db.read() as conn:
        state = read_state(conn, "u1", session_id, embedder_id)
        assert state is not None and state.sid is not None
        exact = dense_index.exact_search(
            conn, embedder_id, state.sid, vector, k=k, before_seq=before
        )
        cached = cache.search(
            conn, embedder_id, state.sid, state.embedded_seq, vector, k=k, before_seq=before
        )
    return exact, cached, cache


@pytest.mark.parametrize(("k", "before"), [(5, None), (40, None), (500, None), (30, 70)])
def test_cached_search_equals_sqlite_vec_hit_for_hit(
    sqlite_engine: ContextEngine, k: int, before: int | None
) -> None:
    session_id = _fill(sqlite_engine, 120)
    exact, cached, _ = _both(sqlite_engine, session_id, "passport renewal tax", k, before)
    assert [(h.seq, h.doc_id) for h in cached] == [(h.seq, h.doc_id) for h in exact]
    assert [h.distance for h in cached] == pytest.approx([h.distance for h in exact], abs=1e-6)
    assert all(h.seq < before for h in cached) if before else len(cached) == min(k, len(exact))
    blank = {i + 1 for i in range(120) if i % 17 == 5}
    assert not blank & {h.seq for h in cached}  # zero vectors are never returned


def test_cache_grows_with_the_session_and_evicts_least_recent(
    sqlite_engine: ContextEngine,
) -> None:
    first = sqlite_engine.create_session(user_id="u1")
    _more(first, 30)
    index = SearchIndex(
        sqlite_engine.db,
        SmoothEmbedder(),
        config=RetrievalConfig(context_chars=0, vector_cache_vectors=50),
    )

    def top(session_id: str, seq: int) -> int:
        text = sqlite_engine.get_session(session_id, user_id="u1").events()[seq - 1].text
        return index.search("u1", session_id, text, lexical=False, limit=1)[0].seq

    assert top(first.id, 30) == 30
    _more(first, 10, start=30)  # new events after the entry was loaded
    assert top(first.id, 39) == 39
    held = len(index._vector_search.vectors)
    assert 37 <= held <= 40  # every document of the 40 events (three are blank)
    second = sqlite_engine.create_session(user_id="u1")
    _more(second, 30, start=100)
    assert top(second.id, 12) == 12
    assert len(index._vector_search.vectors) <= 50  # the first session was dropped
    assert top(first.id, 39) == 39  # and is read again when asked for


def test_cache_off_or_without_vectors(sqlite_engine: ContextEngine) -> None:
    session_id = _fill(sqlite_engine, 20)
    index = SearchIndex(
        sqlite_engine.db,
        HashingEmbedder(),
        config=RetrievalConfig(context_chars=0, vector_cache_vectors=0),
    )
    off = index.search("u1", session_id, "tokyo flight", lexical=False, limit=5)
    on = SearchIndex(sqlite_engine.db, HashingEmbedder(), config=RetrievalConfig(context_chars=0))
    assert [h.seq for h in on.search("u1", session_id, "tokyo flight", lexical=False, limit=5)] == [
        h.seq for h in off
    ]
    assert len(index._vector_search.vectors) == 0 and not index._vector_search.vectors.enabled
    empty = sqlite_engine.create_session(user_id="u1")
    assert on.search("u1", empty.id, "tokyo", lexical=False) == []
