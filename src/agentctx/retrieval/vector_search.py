"""How a session's vectors are searched: exactly in the database, exactly in memory, or
by sign codes first, chosen by the session's size and the database.

* Small sessions on SQLite: the float vectors are read once and kept in memory
  (:class:`~agentctx.retrieval.vector_cache.VectorCache`); each search is one matrix
  product, exact.
* Sessions over :attr:`RetrievalConfig.exact_vector_limit` vectors (4,000 on SQLite, 256
  on PostgreSQL by default): a Hamming scan of in-memory sign codes picks candidates and
  their stored vectors are rescored exactly
  (:class:`~agentctx.retrieval.dense.CodeCache`).
* Otherwise (PostgreSQL's small sessions, or the caches switched off): the database's
  own exact search, sqlite-vec or pgvector.

Hits farther than ``1 - min_similarity`` from the query are dropped whichever way was
taken.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection

from agentctx.retrieval import dense as dense_index
from agentctx.retrieval.config import RetrievalConfig
from agentctx.retrieval.sync import IndexState
from agentctx.retrieval.vector_cache import VectorCache


class VectorSearch:
    """The k nearest events of a session to a query vector, with the caches that make it
    fast. Thread-safe; one per search index."""

    def __init__(self, config: RetrievalConfig) -> None:
        self.config = config
        self.codes = dense_index.CodeCache(config.code_cache_vectors)
        self.vectors = VectorCache(config.vector_cache_vectors)

    def search(
        self,
        conn: Connection,
        state: IndexState,
        embedder_id: int,
        vector: list[float],
        *,
        depth: int,
        before_seq: int | None,
    ) -> list[dense_index.DenseHit]:
        """The ``depth`` events of the session (``state``) nearest to ``vector`` among
        those embedded by ``embedder_id``, nearest first; with ``before_seq``, only older
        events."""
        assert state.sid is not None
        cached = (conn, embedder_id, state.sid, state.embedded_seq, vector)
        if self.codes.enabled and state.vector_count > self.exact_limit(conn):
            candidates = max(self.config.rescore_candidates, depth)
            hits = self.codes.search(*cached, k=depth, before_seq=before_seq, candidates=candidates)
        elif self.vectors.enabled and conn.dialect.name == "sqlite":
            hits = self.vectors.search(*cached, k=depth, before_seq=before_seq)
        else:
            hits = dense_index.exact_search(
                conn, embedder_id, state.sid, vector, k=depth, before_seq=before_seq
            )
        farthest = 1.0 - self.config.min_similarity
        return [hit for hit in hits if hit.distance <= farthest]

    def feedback(
        self,
        conn: Connection,
        state: IndexState,
        embedder_id: int,
        vector: list[float],
        best: Sequence[int],
        *,
        depth: int,
        before_seq: int | None,
    ) -> list[dense_index.DenseHit]:
        """:meth:`search` for ``vector`` moved towards the stored vectors of the events
        ``best`` (the first ``feedback_docs`` of them) by ``feedback_mix``: Rocchio's
        pseudo-relevance feedback, which finds events like the answers found."""
        assert state.sid is not None
        found = dense_index.stored_vectors(
            conn, embedder_id, state.sid, best[: self.config.feedback_docs]
        )
        if not found:
            return []
        mix = self.config.feedback_mix / len(found)
        moved = [q + mix * sum(stored[i] for stored in found) for i, q in enumerate(vector)]
        norm = sum(v * v for v in moved) ** 0.5 or 1.0
        return self.search(
            conn,
            state,
            embedder_id,
            [v / norm for v in moved],
            depth=depth,
            before_seq=before_seq,
        )

    def exact_limit(self, conn: Connection) -> int:
        """Up to how many vectors a session is searched exactly, without sign codes."""
        limit = self.config.exact_vector_limit
        if limit is None:
            # Measured: sqlite-vec ~1 µs a vector, pgvector 0.6 ~20 µs. Numpy over cached
            # floats is bound by reading 1.5 KB a vector, so past 4000 the codes win too.
            limit = 4000 if conn.dialect.name == "sqlite" else 256
        return limit

    def clear(self) -> None:
        """Drop every cached vector and sign code (reloaded on the next search)."""
        self.vectors.clear()
        self.codes.clear()

    def drop_session(self, sid: int) -> None:
        """Drop the cached vectors and sign codes of session ``sid``."""
        self.vectors.drop(sid)
        self.codes.drop(sid)
