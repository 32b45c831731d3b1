"""Query embeddings remembered by text: bounded, never a failure or another text's
vector, one embedding per window query shared by the event and memory indexes, and
gone with a user's data. The engine tests run on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.llm.embeddings import EmbeddingError
from agentctx.llm.hashing import HashingEmbedder
from agentctx.llm.query_vectors import QueryVectors


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, keeping every text it was asked to embed; it fails for
    the texts in ``failing`` once each."""

    def __init__(self, failing: Sequence[str] = ()) -> None:
        super().__init__()
        self.texts: list[str] = []
        self.failing = set(failing)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        for text in texts:
            if text in self.failing:
                self.failing.discard(text)
                raise EmbeddingError(f"endpoint down while embedding {text!r}")
        self.texts.extend(texts)
        return super().embed(texts)


def test_a_query_is_embedded_once_and_gives_its_own_vector() -> None:
    embedder = RecordingEmbedder()
    vectors = QueryVectors(embedder, size=8)
    hiking = vectors.vector("where did we go hiking")
    chess = vectors.vector("who won the chess game")
    assert hiking is not None and chess is not None and hiking != chess
    assert vectors.vector("where did we go hiking") == hiking
    assert hiking == HashingEmbedder().embed(["where did we go hiking"])[0]
    assert embedder.texts == ["where did we go hiking", "who won the chess game"]


def test_the_least_recently_used_query_goes_first() -> None:
    embedder = RecordingEmbedder()
    vectors = QueryVectors(embedder, size=2)
    for query in ("alpha river", "beta mountain", "alpha river", "gamma forest"):
        vectors.vector(query)
    # "beta" was used least recently when "gamma" came, so it went.
    assert vectors.queries() == ["alpha river", "gamma forest"]
    vectors.vector("beta mountain")
    assert embedder.texts.count("beta mountain") == 2
    assert len(vectors.queries()) == 2


def test_size_zero_keeps_nothing_and_a_negative_size_is_refused() -> None:
    embedder = RecordingEmbedder()
    vectors = QueryVectors(embedder, size=0)
    assert vectors.vector("quiet lake") == vectors.vector("quiet lake")
    assert embedder.texts == ["quiet lake", "quiet lake"] and vectors.queries() == []
    with pytest.raises(ValueError, match="size"):
        QueryVectors(embedder, size=-1)


def test_a_query_with_nothing_to_compare_gives_none() -> None:
    vectors = QueryVectors(RecordingEmbedder())
    assert vectors.vector("   ") is None  # the hashing embedder's zero vector
    assert vectors.vector("the of and") is None  # stopwords only


def test_a_failure_is_raised_and_not_remembered() -> None:
    embedder = RecordingEmbedder(failing=["flaky endpoint query"])
    vectors = QueryVectors(embedder)
    with pytest.raises(EmbeddingError):
        vectors.vector("flaky endpoint query")
    assert vectors.queries() == []
    assert vectors.vector("flaky endpoint query") is not None  # the retry embeds it


def test_clear_forgets_every_query() -> None:
    vectors = QueryVectors(RecordingEmbedder())
    vectors.vector("first question")
    vectors.vector("second question")
    vectors.clear()
    assert vectors.queries() == []


def test_the_window_query_is_embedded_once_for_events_and_memories(db_url: str, home: Path) -> None:
    with ContextEngine(
        url=db_url,
        home=home,
        embeddings={"provider": "hashing"},
        # Not a test of the memory deadline (tests/memory has that): on a loaded machine
        # the first memory search can take longer than the default half second.
        memory={"enabled": True, "min_support_sessions": 1, "retrieval_timeout_ms": 60_000},
        session_ttl=None,
    ) as engine:
        shared = engine.search_index.query_vectors
        assert shared is not None and engine.memory.index.query_vectors is shared
        recording = RecordingEmbedder()
        shared.embedder = recording
        earlier = engine.create_session(user_id="u1")
        earlier.add_message("user", "I work as a beekeeper at the city farm.")
        session = engine.create_session(user_id="u1")
        session.add_message("user", "The honey harvest was small this year")
        query = "What do I do for work?"

        window = session.build_context(query=query, budget=2000)

        assert recording.texts.count(query) == 1
        # The memory learned from the earlier session is in the window all the same.
        assert "User works as a beekeeper" in str(window.messages)
        # The user's data deleted: no query of theirs stays with either index.
        engine.delete_user_data("u1")
        assert shared.queries() == []
