"""Pseudo-relevance feedback: a second dense ranking for the query moved towards its
best hits finds events that share words with the answers but not with the query."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from agentctx import ContextEngine
from agentctx.llm import HashingEmbedder
from agentctx.retrieval import RetrievalConfig, SearchIndex, dense
from agentctx.retrieval.sync import read_state

T0 = datetime(2025, 3, 1, 9, 0, tzinfo=UTC)
# The event like the answer comes first, so no event embedded with the one before it
# (the contextual vectors) carries the query's word into it.
TEXTS = [
    "orchard harvest apples cider",  # shares words with the answer, none with the query
    "quarterly invoices spreadsheet taxes",
    "zephyr orchard harvest apples",  # the answer: the one event naming the query's word
]


def index_for(engine: ContextEngine, feedback: float) -> tuple[SearchIndex, str]:
    session = engine.create_session(user_id="u1", agent_id="helper")
    for i, text in enumerate(TEXTS):
        session.add_message("user", text, ts=T0 + timedelta(minutes=i))
    index = SearchIndex(
        engine.db, HashingEmbedder(), config=RetrievalConfig(feedback_weight=feedback)
    )
    return index, session.id


def test_feedback_finds_what_resembles_the_best_hit(engine: ContextEngine) -> None:
    index, session_id = index_for(engine, feedback=0.0)
    plain = [hit.seq for hit in index.search("u1", session_id, "zephyr")]
    assert plain == [3]  # only the event with the query's word
    index, session_id = index_for(engine, feedback=1.0)
    found = [hit.seq for hit in index.search("u1", session_id, "zephyr")]
    assert found[0] == 3
    assert 1 in found  # like the answer (orchard, harvest, apples)
    assert 2 not in found  # like neither


def stored_vectors(engine: ContextEngine, *seqs: int) -> list[list[float]]:
    """``dense.stored_vectors`` of the indexed ``TEXTS`` session's events ``seqs``."""
    index, session_id = index_for(engine, feedback=1.0)
    index.sync("u1", session_id)
    embedder_id = index._ensure_dense()
    assert embedder_id is not None
    with engine.db.read() as conn:
        state = read_state(conn, "u1", session_id, embedder_id)
        assert state is not None and state.sid is not None
        return dense.stored_vectors(conn, embedder_id, state.sid, seqs)


def test_stored_vectors_point_where_the_embeddings_do(engine: ContextEngine) -> None:
    vectors = stored_vectors(engine, 1, 3)
    expected = HashingEmbedder().embed([TEXTS[0], TEXTS[2]])
    assert len(vectors) == 2
    for got in vectors:
        assert abs(sum(v * v for v in got) - 1.0) < 1e-6
        best = max(sum(a * b for a, b in zip(got, want, strict=True)) for want in expected)
        assert best > 0.99  # int8 storage keeps the direction


def test_stored_vectors_come_in_seq_order_and_skip_events_without_one(
    engine: ContextEngine,
) -> None:
    assert stored_vectors(engine, 3, 99, 1) == stored_vectors(engine, 1, 3)  # 99: none
    assert stored_vectors(engine) == []
