"""``MemoryIndex``: hybrid lexical + dense search over one user's long-term memories.

A memory's document is its content, keywords and the question words of its subject
(:mod:`agentctx.memory.vocabulary`). Its terms (the analysis of
:mod:`agentctx.retrieval.terms`, prefixed with the user's partition number, as the
retrieval index prefixes a session's) go to ``memory_fts``; its embedding to
``memory_vec_<embedder_id>`` (tables: :mod:`agentctx.memory.index_tables`; written
and deleted by :mod:`agentctx.memory.index_documents`; the lexical ranking and the
filters are :mod:`agentctx.memory.index_lexical`'s).

Scoring of :meth:`MemoryIndex.search`::

    relevance = RRF(lexical rank, dense rank) / RRF of a hit ranked first in both (0..1]
    freshness = max(floor, 0.5 ** (age_days / half_life_days))  # age from updated_at
    score     = relevance * confidence * freshness  (* 0.5 for a retraction)

With the defaults (half-life 180 days, floor 0.5) a memory loses half its weight in
six months and never more. With no query, relevance is 1 and memories are ordered by
confidence * freshness. Filters (user, status, kind, agent, ``data`` keys, expiry) are
applied in SQL to the lexical ranking; the dense ranking takes the user's nearest
``candidates`` vectors and keeps those that pass them.

Indexing is an idempotent upsert: an unchanged memory (same text, vector present) is
skipped; a changed one gets a new document. Deleting a memory row removes its
documents through the database (cascade, and a trigger on SQLite), so
``delete_user_data`` needs nothing more.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Connection

from agentctx.errors import InvalidInput
from agentctx.events import utcnow
from agentctx.llm.embeddings import Embedder, EmbeddingError
from agentctx.llm.query_vectors import QueryVectors
from agentctx.memory import index_dense, index_terms
from agentctx.memory.calibration import threshold_for
from agentctx.memory.index_documents import (
    PreparedDocument,
    indexed_digests,
    remove_documents,
    write_documents,
)
from agentctx.memory.index_lexical import Candidate, LexicalRanking, candidate_rows, passing
from agentctx.memory.index_rows import filter_sql, load_memories
from agentctx.memory.index_tables import ensure_lexical, ensure_vectors, user_partition
from agentctx.memory.models import Memory, MemoryHit, MemoryKind
from agentctx.memory.questions import about_user
from agentctx.memory.vocabulary import subject_words
from agentctx.retrieval.fusion import fuse
from agentctx.retrieval.sync import register_embedder
from agentctx.retrieval.terms import document_terms, query_terms
from agentctx.storage.database import Database

log = logging.getLogger(__name__)


MAX_LEXICAL_POSTINGS = 10_000
"""The most matching documents the full-text ranking scores per search: query terms
are taken rarest first until the next would pass it. On SQLite at least one term is
kept (FTS5 reads postings cheaply); on PostgreSQL, when even the rarest is over it,
only the user's newest :data:`RECENT_WINDOW` documents are ranked, by all the terms."""

RECENT_WINDOW = 10_000
"""PostgreSQL: how many of the user's newest documents are ranked when every query
term is too common for the postings budget (each costs a heap row, not a posting)."""

RETRACTION_WEIGHT = 0.5
"""A retraction's share of its score: below a statement of its subject as relevant."""


def memory_text(memory: Memory) -> str:
    """What is indexed of a memory: its content, its keywords, and the words questions
    about its subject are asked with (:mod:`agentctx.memory.vocabulary`)."""
    return "\n".join(
        [memory.content, " ".join(memory.keywords), subject_words(memory.subject)]
    ).strip()


def freshness(updated_at: datetime, now: datetime, *, half_life_days: float, floor: float) -> float:
    """``max(floor, 0.5 ** (age_days / half_life_days))``; 1 for a future timestamp."""
    age_days = max(0.0, (now - updated_at).total_seconds() / 86400.0)
    return float(max(floor, 0.5 ** (age_days / half_life_days)))


class _Scored(NamedTuple):
    """A candidate with its score, relevance and (lexical, dense) ranks."""

    score: float
    relevance: float
    candidate: Candidate
    ranks: Sequence[int | None]


class MemoryIndex:
    """The memory index of a database: lexical always, dense when an embedder is given
    and the database has vectors (sqlite-vec or pgvector). Thread-safe; share one."""

    def __init__(
        self,
        db: Database,
        embedder: Embedder | None = None,
        *,
        half_life_days: float = 180.0,
        freshness_floor: float = 0.5,
        rrf_k: int = 60,
        candidates: int = 100,
        exact_vector_limit: int | None = None,
        rescore_candidates: int = 400,
        min_similarity: float | None = None,
        max_lexical_postings: int = MAX_LEXICAL_POSTINGS,
        recent_window: int = RECENT_WINDOW,
        query_vectors: QueryVectors | None = None,
    ) -> None:
        if half_life_days <= 0 or not 0 <= freshness_floor <= 1:
            raise InvalidInput("half_life_days must be > 0 and freshness_floor in [0, 1]")
        self.db = db
        self.embedder = embedder
        # Shared with the event index when the engine builds both (one embedding of a
        # window's query serves both); else this index's own.
        self.query_vectors = query_vectors or (QueryVectors(embedder) if embedder else None)
        self.half_life_days = half_life_days
        self.freshness_floor = freshness_floor
        self.rrf_k = rrf_k
        self.candidates = candidates
        self.exact_vector_limit = exact_vector_limit
        self.rescore_candidates = rescore_candidates
        # Calibrated per embedder (agentctx.memory.calibration) unless given.
        self.min_similarity = (
            min_similarity if min_similarity is not None else threshold_for(embedder)
        )
        self.lexical = LexicalRanking(max_lexical_postings, recent_window)
        self._lexical_ready = False
        self._embedder_id: int | None = None
        self._dense_ready: bool | None = None
        self._setup_lock = threading.Lock()
        self._codes = index_dense.CodeCache()
        self._floats = index_dense.FloatCache()

    # Setup ------------------------------------------------------------------------------

    def _setup(self) -> int | None:
        """Create the tables on first use; the embedder id when vectors are available."""
        if self._lexical_ready and (self.embedder is None or self._dense_ready is not None):
            return self._embedder_id if self._dense_ready else None
        embedder = self.embedder
        shape = (embedder.name, embedder.dimensions) if embedder is not None else None
        with self._setup_lock, self.db.write() as conn:
            ensure_lexical(conn)
            if shape is not None and self._dense_ready is None:
                embedder_id = register_embedder(conn, *shape)
                self._dense_ready = ensure_vectors(conn, embedder_id, shape[1])
                self._embedder_id = embedder_id
                if not self._dense_ready:
                    log.warning("vector search is unavailable on this database; lexical only")
        self._lexical_ready = True
        return self._embedder_id if self._dense_ready else None

    def ready(self) -> None:
        """Create the index's tables now if they are not yet (otherwise done on first
        use): lets a caller then index or remove inside a write transaction of its own."""
        self._setup()

    @property
    def dense_enabled(self) -> bool:
        """Whether vectors are indexed and searched."""
        return self._setup() is not None

    # Indexing ---------------------------------------------------------------------------

    def prepare(
        self, memories: Sequence[Memory], *, skip_unchanged: bool = True
    ) -> list[PreparedDocument]:
        """Analyse and embed (one batch) the memories whose indexed text changed; call
        outside a transaction, then :meth:`write` inside the caller's."""
        embedder_id = self._setup()
        latest = {m.memory_id: m for m in memories}  # the last of repeated ids wins
        texts = {m.memory_id: memory_text(m) for m in latest.values()}
        digests = {i: hashlib.sha256(t.encode()).hexdigest()[:32] for i, t in texts.items()}
        if skip_unchanged:
            with self.db.read() as conn:
                current = indexed_digests(conn, list(latest), embedder_id)
            latest = {i: m for i, m in latest.items() if current.get(i) != digests[i]}
        wanted = list(latest.values())
        vectors: list[list[float] | None] = [None] * len(wanted)
        if embedder_id is not None and self.embedder is not None and wanted:
            vectors = list(self.embedder.embed([texts[m.memory_id] for m in wanted]))
        return [
            PreparedDocument(
                memory_id=m.memory_id,
                user_id=m.user_id,
                uid=user_partition(m.user_id),
                digest=digests[m.memory_id],
                terms=document_terms(texts[m.memory_id]),
                vector=vector if vector is not None and any(vector) else None,
            )
            for m, vector in zip(wanted, vectors, strict=True)
        ]

    def write(self, conn: Connection, documents: Sequence[PreparedDocument]) -> None:
        """Write prepared documents inside the caller's write transaction (replacing any
        earlier document of the same memory). The memories must exist in that
        transaction. Call :meth:`prepare` (or :meth:`index_memories`) first."""
        write_documents(conn, documents, self._embedder_id if self._dense_ready else None)

    def index_memories(self, memories: Sequence[Memory]) -> None:
        """Index (or re-index) stored memories: an idempotent upsert. Unchanged ones are
        skipped; the changed ones are embedded in one batch before the write
        transaction. Safe to repeat after a crash: a memory is indexed wholly or not."""
        documents = self.prepare(memories)
        if documents:
            with self.db.write() as conn:
                self.write(conn, documents)

    def remove(self, memory_ids: Sequence[str], *, conn: Connection | None = None) -> None:
        """Take memories out of the index (the memories themselves are untouched).
        With ``conn``, inside the caller's write transaction."""
        self._setup()
        if conn is not None:
            remove_documents(conn, memory_ids)
            return
        with self.db.write() as own:
            remove_documents(own, memory_ids)

    def forget_user(self, user_id: str | None) -> None:
        """Drop the vectors and codes this process holds in memory of the user's memories
        (of every user's when None), read again on the next search that needs them, and
        every query embedding held (kept by text, not by user)."""
        partition = None if user_id is None else user_partition(user_id)
        self._codes.drop(partition)
        self._floats.drop(partition)
        if self.query_vectors is not None:
            self.query_vectors.clear()

    # Search -----------------------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: str | None,
        *,
        kinds: Sequence[MemoryKind | str] | None = None,
        agent_id: str | None = None,
        filters: dict[str, Any] | None = None,
        statuses: Sequence[str] = ("active",),
        limit: int = 10,
        now: datetime | None = None,
        as_of: datetime | None = None,
    ) -> list[MemoryHit]:
        """The user's memories most relevant to ``query``, best first (see the module
        docstring for the score). ``kinds``/``agent_id``/``statuses`` restrict the
        memories; ``filters`` match ``memories.data`` keys exactly (JSON equality);
        expired memories (``expires_at <= now``) are never returned. ``as_of``: the
        memories true at that time instead of ``statuses`` (see
        :func:`~agentctx.memory.index_rows.filter_sql`). No query (None or blank): the
        user's memories by confidence * freshness."""
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1, got {limit}")
        now = now or utcnow()
        embedder_id = self._setup()
        where, params = filter_sql(
            conn_dialect=self.db.dialect,
            user_id=user_id,
            kinds=kinds,
            agent_id=agent_id,
            filters=filters,
            statuses=statuses,
            now=now,
            as_of=as_of,
        )
        if query is None or not query.strip():
            return self._by_weight(user_id, where, params, limit, now)
        query = about_user(query)  # "what is my job?" as memories say it: "user's job"
        terms = query_terms(query)
        vector = self._query_vector(query) if embedder_id is not None else None
        depth = max(limit, self.candidates)
        uid = user_partition(user_id)
        with self.db.read() as conn:
            state = self._state(conn, uid, terms, vector is not None and embedder_id is not None)
            pending = None
            if vector is not None and embedder_id is not None:
                # On PostgreSQL a large user's code scan runs on a pool thread while this
                # one waits for the lexical query: the two overlap instead of adding up.
                pending = self._start_nearest(conn, embedder_id, uid, vector, depth, state=state)
            lexical = self.lexical.candidates(
                conn, uid, terms=terms, where=where, params=params, depth=depth, state=state
            )
            dense: list[Candidate] = []
            if pending is not None:
                nearest = pending()
                # Nearest is not always near: too dissimilar vectors are no evidence.
                farthest = 1.0 - self.min_similarity
                near = [doc for doc, distance in nearest if distance <= farthest]
                dense = passing(conn, near, where, params)
            scored = self._fused(lexical, dense, now)
            return self._hits(conn, user_id, scored, limit)

    def _fused(
        self, lexical: list[Candidate], dense: list[Candidate], now: datetime
    ) -> list[_Scored]:
        """Both rankings fused (RRF), each candidate scored by relevance (the fused score
        over the best possible) * confidence * freshness, best first."""
        found = {c.doc_id: c for c in [*lexical, *dense]}
        fused = fuse(
            [([c.doc_id for c in lexical], 1.0), ([c.doc_id for c in dense], 1.0)],
            self.rrf_k,
        )
        best = 2.0 / (self.rrf_k + 1)
        scored = []
        for doc_id, rrf, ranks in fused:
            candidate = found[doc_id]
            relevance = rrf / best
            score = relevance * candidate.confidence * self._fresh(candidate, now)
            scored.append(_Scored(score, relevance, candidate, ranks))
        scored.sort(key=lambda item: (-item.score, -item.candidate.doc_id))
        return scored

    def _hits(
        self, conn: Connection, user_id: str, scored: list[_Scored], limit: int
    ) -> list[MemoryHit]:
        """The best ``limit`` of ``scored`` as hits. Twice as many are read as returned:
        a retraction ("User is no longer vegetarian") states no current fact, so it ranks
        at half its score, below a statement of its subject that is as relevant."""
        ahead = scored[: limit * 2]
        memories = {
            m.memory_id: m
            for m in load_memories(conn, user_id, [item.candidate.memory_id for item in ahead])
        }

        def weighted(item: _Scored) -> _Scored:
            memory = memories.get(item.candidate.memory_id)
            if memory is not None and memory.retracted:
                return item._replace(score=item.score * RETRACTION_WEIGHT)
            return item

        top = sorted(map(weighted, ahead), key=lambda item: (-item.score, -item.candidate.doc_id))[
            :limit
        ]
        return [
            MemoryHit(
                memory=memories[item.candidate.memory_id],
                score=item.score,
                relevance=item.relevance,
                lexical_rank=item.ranks[0],
                dense_rank=item.ranks[1],
            )
            for item in top
            if item.candidate.memory_id in memories
        ]

    def _fresh(self, candidate: Candidate, now: datetime) -> float:
        return freshness(
            candidate.updated_at,
            now,
            half_life_days=self.half_life_days,
            floor=self.freshness_floor,
        )

    def _query_vector(self, query: str, *, wait: bool = False) -> list[float] | None:
        """The query's vector; None while the model loads in the background, unless
        ``wait`` (consolidation, off the call path, must not miss a duplicate)."""
        assert self.query_vectors is not None
        if not wait and self.query_vectors.model_state != "ready":
            return None  # a search never waits for the model: it ranks lexically
        try:
            return self.query_vectors.vector(query)
        except EmbeddingError as exc:
            log.warning("embedding the query failed, lexical ranking only: %s", exc)
            return None

    def _exact_limit(self, conn: Connection) -> int:
        limit = self.exact_vector_limit
        if limit is None:  # as measured for the retrieval index (see retrieval.dense)
            limit = 4000 if conn.dialect.name == "sqlite" else 256
        return limit

    def _state(
        self, conn: Connection, uid: int, terms: Sequence[str], dense: bool
    ) -> index_terms.SearchState | None:
        """What the search reads of the user first (one statement on PostgreSQL): the
        code cache's stamp (documents up to the exact-search limit, newest doc_id) and
        the terms' frequencies. None on SQLite without vectors (nothing to read early).

        The newest doc_id moves with every added or changed memory; a removed one may
        stay in the code cache, harmlessly, since candidates are joined to the
        documents table."""
        if conn.dialect.name == "sqlite" and not dense:
            return None
        return index_terms.search_state(conn, uid, terms, self._exact_limit(conn))

    def _start_nearest(
        self,
        conn: Connection,
        embedder_id: int,
        uid: int,
        vector: Sequence[float],
        depth: int,
        *,
        state: index_terms.SearchState | None,
    ) -> Callable[[], list[tuple[int, float]]]:
        """Start the dense ranking (see :func:`index_dense.start_search`): in the
        background on PostgreSQL, whose lexical query waits on the server meanwhile."""
        limit = self._exact_limit(conn)
        if state is None:
            state = index_terms.search_state(conn, uid, (), limit)
        return index_dense.start_search(
            conn,
            self._codes,
            embedder_id=embedder_id,
            uid=uid,
            stamp=state.stamp(),
            query=vector,
            k=depth,
            exact_limit=limit,
            rescore=self.rescore_candidates,
            floats=self._floats,
            background=conn.dialect.name == "postgresql",
        )

    def _nearest(
        self, conn: Connection, embedder_id: int, uid: int, vector: Sequence[float], depth: int
    ) -> list[tuple[int, float]]:
        return self._start_nearest(conn, embedder_id, uid, vector, depth, state=None)()

    def _by_weight(
        self, user_id: str, where: str, params: dict[str, Any], limit: int, now: datetime
    ) -> list[MemoryHit]:
        """Top memories by confidence * freshness, read in pages of falling confidence
        until no later memory could beat the ``limit``-th (freshness is at most 1)."""
        page = max(4 * limit, 200)
        best: list[tuple[float, Candidate]] = []
        offset = 0
        with self.db.read() as conn:
            while True:
                # Memories, not their documents: no doc_id (0) in these candidates.
                sql = (
                    f"SELECT 0 AS doc_id, m.memory_id, m.confidence, m.updated_at "
                    f"FROM memories AS m WHERE {where} "
                    "ORDER BY m.confidence DESC, m.memory_id LIMIT :page OFFSET :offset"
                )
                rows = candidate_rows(conn, sql, {**params, "page": page, "offset": offset})
                for candidate in rows:
                    best.append((candidate.confidence * self._fresh(candidate, now), candidate))
                best.sort(key=lambda item: -item[0])
                del best[limit:]
                offset += page
                if len(rows) < page or (len(best) == limit and best[-1][0] >= rows[-1].confidence):
                    break
            memories = {
                m.memory_id: m for m in load_memories(conn, user_id, [c.memory_id for _, c in best])
            }
        return [
            MemoryHit(memory=memories[c.memory_id], score=score, relevance=1.0)
            for score, c in best
            if c.memory_id in memories
        ]

    # Deduplication ----------------------------------------------------------------------

    def similar(
        self,
        user_id: str,
        kind: MemoryKind | str,
        content: str,
        *,
        limit: int = 5,
        statuses: Sequence[str] = ("active",),
    ) -> list[tuple[Memory, float]]:
        """The user's memories of ``kind`` most similar to ``content``, most similar first:
        cosine of the embeddings, or without vectors the Jaccard index of the two term
        sets. Consolidation treats >= 0.9 as the same memory. Candidates are the lexical
        and dense rankings' best, scored exactly."""
        embedder_id = self._setup()
        where, params = filter_sql(
            conn_dialect=self.db.dialect,
            user_id=user_id,
            kinds=[kind],
            agent_id=None,
            filters=None,
            statuses=statuses,
            now=utcnow(),
        )
        vector = self._query_vector(content, wait=True) if embedder_id is not None else None
        uid = user_partition(user_id)
        depth = max(limit * 10, 50)
        with self.db.read() as conn:
            candidates = self.lexical.candidates(
                conn, uid, terms=query_terms(content), where=where, params=params, depth=depth
            )
            if vector is not None and embedder_id is not None:
                nearest = self._nearest(conn, embedder_id, uid, vector, depth)
                candidates += passing(conn, [doc for doc, _ in nearest], where, params)
            by_doc = {c.doc_id: c for c in candidates}
            if vector is not None and embedder_id is not None:
                vectors = index_dense.vectors_of(conn, embedder_id, list(by_doc))
                similarity = index_dense.cosines(vector, vectors)
                scores = {by_doc[doc].memory_id: sim for doc, sim in similarity.items()}
                memories = load_memories(conn, user_id, list(scores))
            else:
                memories = load_memories(conn, user_id, [c.memory_id for c in by_doc.values()])
                wanted = set(document_terms(content))
                scores = {
                    m.memory_id: _jaccard(wanted, set(document_terms(memory_text(m))))
                    for m in memories
                }
        ranked = sorted(memories, key=lambda m: (-scores[m.memory_id], m.memory_id))
        return [(m, scores[m.memory_id]) for m in ranked[:limit]]


def _jaccard(a: set[str], b: set[str]) -> float:
    return len(a & b) / len(a | b) if a or b else 0.0
