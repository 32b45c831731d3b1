"""``SearchIndex``: hybrid lexical + dense search over one session's events.

Each event with searchable text (see :mod:`agentctx.retrieval.text`) becomes a
document of its session: its terms go to the lexical index, its embedding to the
vector index. :meth:`SearchIndex.sync` indexes whatever the session gained since
the last sync; it is cheap when nothing is new, runs as a durable turn-end job
(:meth:`SearchIndex.on_turn_end`), and every search runs it first, so results are
never stale. :meth:`SearchIndex.search` ranks both ways and fuses the rankings by
reciprocal rank fusion; each hit keeps its event's time, turn and type.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from typing import TYPE_CHECKING, Literal, TypeVar

from readerwriterlock import rwlock
from sqlalchemy import Connection

from agentctx.errors import InvalidInput
from agentctx.jobs import Job
from agentctx.llm.embeddings import Embedder, EmbeddingError
from agentctx.llm.query_vectors import QueryVectors
from agentctx.llm.warmup import ModelWarmup
from agentctx.retrieval.asking import QueryReader
from agentctx.retrieval.config import RetrievalConfig
from agentctx.retrieval.dates import query_days
from agentctx.retrieval.embedding_worker import EmbeddingWorker
from agentctx.retrieval.event_rows import (
    event_column,
    hit_rows,
    turn_neighbours,
)
from agentctx.retrieval.fusion import fuse, top_fused
from agentctx.retrieval.rankings import Ranking, Rankings, rankings_of
from agentctx.retrieval.sync import (
    IndexState,
    SyncReport,
    read_state,
    register_embedder,
    sync_dense,
    sync_lexical,
)
from agentctx.retrieval.tables import ensure_lexical, ensure_vectors
from agentctx.retrieval.terms import query_terms
from agentctx.retrieval.vector_search import VectorSearch
from agentctx.storage.database import Database

if TYPE_CHECKING:
    from agentctx.context.sources import DenseState, Retrieval

log = logging.getLogger(__name__)

EmbeddingMode = Literal["inline", "background", "manual"]
_SEARCH_CATCH_UP = 64
"""With a background worker: events a search leaves unindexed for the worker. An agent
writes a few events between two windows (a tool call, its result); more is a backlog,
whose words the search indexes itself (fast, unlike vectors) so that it finds them."""
_Found = TypeVar("_Found")
_Finish = Callable[[Connection, Ranking, Rankings], _Found]
"""Makes what a search returns from its rankings (``SearchIndex._ranked``,
``_retrieved``); called with no rankings when the session has nothing indexed."""


@dataclass(frozen=True, slots=True)
class SearchHit:
    """An event matching a query. ``score`` is the fused score (higher is better);
    ``lexical_rank``/``dense_rank`` its 1-based place in each ranking (None: absent)."""

    seq: int
    event_id: str
    turn_id: str | None
    ts: datetime
    type: str
    author: str | None
    score: float
    lexical_rank: int | None
    dense_rank: int | None
    token_estimate: int | None = None  # the event's stored token estimate


class SearchIndex:
    """The retrieval index of a database: lexical always, dense when an embedder is given.

    Thread-safe; share one per engine. ``embedder=None`` indexes and searches terms only.
    """

    def __init__(
        self,
        db: Database,
        embedder: Embedder | None = None,
        *,
        config: RetrievalConfig | None = None,
        warmup: ModelWarmup | None = None,
    ) -> None:
        self.db = db
        self.embedder = embedder
        self.config = config or RetrievalConfig()
        self._lexical_ready = False
        self._embedder_id: int | None = None
        self._dense_ready: bool | None = None  # None: not set up yet
        self._context_id: int | None = None  # vectors embedded with the event before
        self._setup_lock = threading.Lock()
        self._vector_search = VectorSearch(self.config)
        self.query_vectors = (
            QueryVectors(embedder, self.config.query_cache_size, warmup=warmup)
            if embedder is not None
            else None
        )
        self._reader = QueryReader(db, self.config)  # who a query names, how it is embedded
        # Who embeds new events: the search itself, at most ``inline_embed_limit`` per
        # search ("inline"), a background worker ("background"), or the caller's
        # ``run_pending`` through the turn-end job ("manual"); see embed_in_background.
        self._embedding: EmbeddingMode = "inline"
        self._worker: EmbeddingWorker | None = None
        # Searches share it and forget_user takes it alone, so that no search in flight
        # puts a deleted user's data back into the caches after they were cleared
        # (writers first: a deletion is not starved by a stream of searches).
        self._forgetting = rwlock.RWLockWrite()

    # Setup ------------------------------------------------------------------------------

    def _ensure_lexical(self) -> None:
        if self._lexical_ready:
            return
        with self._setup_lock, self.db.write() as conn:
            ensure_lexical(conn)
        self._lexical_ready = True

    def _ensure_dense(self) -> int | None:
        """The embedder's id, with its vector table ready; None when vectors are unavailable."""
        if self._dense_ready is not None:
            return self._embedder_id if self._dense_ready else None
        embedder = self.embedder
        if embedder is None:
            return None
        name, dimensions = embedder.name, embedder.dimensions  # may load a model: no lock held
        with self._setup_lock:
            if self._dense_ready is not None:
                return self._embedder_id if self._dense_ready else None
            context_chars = self.config.context_chars
            with self.db.write() as conn:
                ensure_lexical(conn)  # the SQLite cleanup trigger names the lexical table too
                embedder_id = register_embedder(conn, name, dimensions)
                ready = ensure_vectors(conn, embedder_id, dimensions)
                if ready and context_chars:
                    context_id = register_embedder(
                        conn, f"{name}+context{context_chars}", dimensions
                    )
                    ensure_vectors(conn, context_id, dimensions)
                    self._context_id = int(context_id)
            self._lexical_ready = True
            self._embedder_id = int(embedder_id)
            self._dense_ready = ready
            if not ready:
                log.warning("vector search is unavailable on this database; lexical only")
        return self._embedder_id if ready else None

    @property
    def dense_enabled(self) -> bool:
        """Whether vectors are indexed and searched (an embedder, and sqlite-vec or pgvector)."""
        return self._ensure_dense() is not None

    def embed_in_background(self, mode: EmbeddingMode, worker: EmbeddingWorker | None) -> None:
        """Take embedding off the search: ``background`` hands it to ``worker`` (asked
        after every write and by any search that finds vectors missing), ``manual``
        leaves it to the turn-end job the caller runs; ``inline`` (the default) embeds
        in the search, up to ``inline_embed_limit`` documents. Lexical indexing always
        completes in the search: it is fast, and a new event must be findable at once."""
        if mode == "background" and worker is None:
            raise ValueError("background embedding needs a worker")
        self._embedding = mode
        self._worker = worker if mode == "background" else None

    def request_embedding(self, user_id: str, session_id: str) -> None:
        """Tell the background worker the session has new events (no-op otherwise)."""
        if self._worker is not None and self.embedder is not None:
            self._worker.request(user_id, session_id)

    def embed_step(self, user_id: str, session_id: str, limit: int) -> bool:
        """Index the session's new events and embed at most ``limit`` of them (each
        vector kind); True when some are still without a vector. The background
        worker's unit of work: at most ``retrieval.embed_step_chars`` characters of
        each kind are embedded, so that the worker soon indexes the words of what the
        agent writes meanwhile."""
        self.sync(user_id, session_id, embed_limit=limit, embed_chars=self.config.embed_step_chars)
        embedder_id = self._ensure_dense()
        if embedder_id is None:
            return False
        with self.db.read() as conn:
            states = [read_state(conn, user_id, session_id, embedder_id)]
            if self._context_id is not None:
                states.append(read_state(conn, user_id, session_id, self._context_id))
        return any(s is not None and s.embedded_seq < s.indexed_seq for s in states)

    def _dense_state(self) -> DenseState:
        """Whether a search can rank by vectors now, without waiting for a model."""
        if self.embedder is None or self.query_vectors is None:
            return "off"
        state = self.query_vectors.model_state
        return "used" if state == "ready" else state

    # Sync -------------------------------------------------------------------------------

    def sync(
        self,
        user_id: str,
        session_id: str,
        *,
        embed_limit: int | None = None,
        embed_chars: int | None = None,
    ) -> SyncReport:
        """Index the session's events newer than what is indexed.

        ``embed_limit``: embed at most this many documents now (None: all); the rest
        wait for the next sync. ``embed_chars``: and about this many characters of
        text (at least one document; None: no bound). A missing session syncs nothing.
        """
        self._ensure_lexical()
        embedder_id = self._ensure_dense() if self.embedder is not None else None
        with self.db.read() as conn:
            state = read_state(conn, user_id, session_id, embedder_id)
        if state is None:
            return SyncReport()
        batch = self.config.sync_batch
        indexed = 0
        if state.indexed_seq < state.last_seq:
            indexed = sync_lexical(
                self.db, user_id, session_id, after=state.indexed_seq, batch=batch, sid=state.sid
            )
        embedded = 0
        wanted = embed_limit is None or embed_limit > 0
        behind = bool(indexed) or state.embedded_seq < state.indexed_seq
        if self.embedder is not None and embedder_id is not None and wanted and behind:
            embedded = sync_dense(
                self.db,
                self.embedder,
                user_id,
                session_id,
                embedder_id=embedder_id,
                batch=batch,
                limit=embed_limit,
                max_chars=embed_chars,
            )
        context_id = self._context_id
        if self.embedder is not None and context_id is not None and wanted:
            with self.db.read() as conn:
                context = read_state(conn, user_id, session_id, context_id)
            if context is not None and context.embedded_seq < context.indexed_seq:
                sync_dense(
                    self.db,
                    self.embedder,
                    user_id,
                    session_id,
                    embedder_id=context_id,
                    batch=batch,
                    limit=embed_limit,
                    context_chars=self.config.context_chars,
                    max_chars=embed_chars,
                )
        return SyncReport(indexed, embedded)

    def forget_user(self, user_id: str | None) -> None:
        """Drop everything held in memory that came from the user's data (call it once
        their data is deleted): the authors and aliases of their sessions (of every
        user's when None), and, since they are kept by session number and query text
        rather than by user, every cached vector, sign code and query embedding
        (reloaded on the next search)."""
        with self._forgetting.gen_wlock():  # once the searches in flight are done
            self._reader.drop_user(user_id)
            self._vector_search.clear()
            if self.query_vectors is not None:
                self.query_vectors.clear()

    def forget_session(self, user_id: str, session_id: str, sid: int | None) -> None:
        """Drop what is held in memory of a deleted session: its authors and aliases, and
        the vectors and sign codes cached under its number ``sid`` (read in the deleting
        transaction)."""
        with self._forgetting.gen_wlock():  # once the searches in flight are done
            self._reader.drop_session(user_id, session_id)
            if sid is not None:
                self._vector_search.drop_session(sid)

    def on_turn_end(self, job: Job) -> None:
        """Turn-end job handler: ``engine.on_turn_end("search_index", index.on_turn_end)``.

        With a background worker it hands the session to the worker, which indexes words
        and vectors (one thread reads and tokenizes a session's new events, not two). Being
        durable, the job asks again for a session whose request a crash or a full queue
        lost. Without a worker it indexes and embeds."""
        if job.user_id is None or job.session_id is None:
            return
        if self._worker is not None:
            self._worker.request(job.user_id, job.session_id)
        else:
            self.sync(job.user_id, job.session_id)

    # Search -----------------------------------------------------------------------------

    def search(
        self,
        user_id: str,
        session_id: str,
        query: str,
        *,
        limit: int = 50,
        lexical: bool = True,
        dense: bool = True,
        exclude_from_seq: int | None = None,
        sync: bool = True,
        depth: int | None = None,
    ) -> list[SearchHit]:
        """The session's events most relevant to ``query``, best first.

        ``exclude_from_seq``: only events with a smaller seq (leave out the recent window).
        ``lexical``/``dense`` switch either ranking off. ``sync=False`` skips the sync
        that otherwise runs first. ``depth``: candidates taken from each ranking before
        fusion (default: ``limit`` or the configured ``candidates``, whichever is more).
        An unknown session (or another user's) has no hits.

        When the query names exactly one of the session's authors, that author's events
        are ranked again on their own and the query is embedded in their first person
        (:mod:`agentctx.retrieval.participants`). An author is also named by an alias
        learned from the indexed events, such as the name others address them by
        (:mod:`agentctx.retrieval.aliases`).
        """
        with self._forgetting.gen_rlock():
            return self._search(
                user_id,
                session_id,
                query,
                limit=limit,
                lexical=lexical,
                dense=dense,
                exclude_from_seq=exclude_from_seq,
                sync=sync,
                depth=depth,
                finish=self._ranked,
            )

    def _search(
        self,
        user_id: str,
        session_id: str,
        query: str,
        *,
        limit: int,
        lexical: bool = True,
        dense: bool = True,
        exclude_from_seq: int | None = None,
        sync: bool = True,
        depth: int | None = None,
        finish: _Finish[_Found],
    ) -> _Found:
        """:meth:`search`, its result made by ``finish`` from the rankings."""
        if limit < 1:
            raise InvalidInput(f"limit must be at least 1, got {limit}")
        if depth is not None and depth < 1:
            raise InvalidInput(f"depth must be at least 1, got {depth}")
        self._ensure_lexical()
        embedder_id: int | None = None
        vector: list[float] | None = None
        # Never wait for the model: while it loads (or after it failed) rank lexically.
        dense_state = self._dense_state() if dense else "off"
        try:
            embedder_id = self._ensure_dense() if dense_state == "used" else None
        except EmbeddingError as exc:  # e.g. an endpoint asked for its vector size is down
            log.warning("the embedder is unavailable, lexical ranking only: %s", exc)
            dense_state = "failed"
        if dense_state == "used" and embedder_id is None:
            dense_state = "off"  # no vector search on this database
        asked = self._reader.asked(user_id, session_id, query)
        if dense_state == "used" and embedder_id is not None and query.strip():
            vector, dense_state = self._query_vector(asked.text)
        terms = query_terms(query) if lexical else []
        ranking = Ranking(
            user_id,
            session_id,
            terms,
            vector,
            depth=max(limit, depth or self.config.candidates),
            limit=limit,
            before_seq=exclude_from_seq,
            focus=asked.focus,
            subject=asked.subject,
            days=query_days(query) if self.config.date_weight else None,
            dense=dense_state,
        )
        # One read transaction (round trips count on PostgreSQL); a second only after a sync.
        with self.db.read() as conn:
            state = read_state(conn, user_id, session_id, embedder_id)
            if state is None:
                return finish(conn, ranking, [])
            context = self._context_state(conn, ranking, embedder_id)
            behind = self._behind(state, embedder_id) or (
                context is not None and self._behind(context, self._context_id)
            )
            if not (sync and behind):
                self._ask_for_vectors(ranking, state)
                rankings = self._rankings(conn, state, embedder_id, ranking, context)
                return finish(conn, self._counted(ranking, state), rankings)
        try:
            self.sync(user_id, session_id, embed_limit=self._search_embed_limit())
        except EmbeddingError as exc:  # the turn-end job retries; search what is indexed
            log.warning("embedding during search failed: %s", exc)
        with self.db.read() as conn:
            state = read_state(conn, user_id, session_id, embedder_id)
            if state is None:
                return finish(conn, ranking, [])
            self._ask_for_vectors(ranking, state)
            context = self._context_state(conn, ranking, embedder_id)
            rankings = self._rankings(conn, state, embedder_id, ranking, context)
            return finish(conn, self._counted(ranking, state), rankings)

    def _query_vector(self, text: str) -> tuple[list[float] | None, DenseState]:
        """The query's vector and whether vectors take part. With a background worker
        and ``query_embedding: background`` a search never runs the model: a query seen
        before has its vector; a new one is handed to the worker (the agent's next call
        has it) and ranked without."""
        assert self.query_vectors is not None
        if self._worker is not None and self.config.query_embedding == "background":
            known, vector = self.query_vectors.cached(text)
            if known:
                return vector, "used"
            self._worker.request_query(text)
            return None, "pending"
        try:
            return self.query_vectors.vector(text), "used"
        except EmbeddingError as exc:
            log.warning("embedding the query failed, lexical ranking only: %s", exc)
            return None, "failed"

    def _search_embed_limit(self) -> int:
        """Documents a search embeds itself: none unless embedding is inline."""
        return self.config.inline_embed_limit if self._embedding == "inline" else 0

    def _ask_for_vectors(self, ranking: Ranking, state: IndexState) -> None:
        """Hand a session whose vectors lag to the background worker."""
        if self._worker is not None and state.embedded_seq < state.last_seq:
            self._worker.request(ranking.user_id, ranking.session_id)

    @staticmethod
    def _counted(ranking: Ranking, state: IndexState) -> Ranking:
        """The ranking with the number of events searched without their vector."""
        if ranking.dense not in ("used", "pending"):
            return ranking
        return replace(ranking, unembedded=max(0, state.last_seq - state.embedded_seq))

    def _context_state(
        self, conn: Connection, ranking: Ranking, embedder_id: int | None
    ) -> IndexState | None:
        """How far the contextual vectors have got (None when they are not kept)."""
        if embedder_id is None or self._context_id is None or ranking.vector is None:
            return None
        return read_state(conn, ranking.user_id, ranking.session_id, self._context_id)

    def _ranked(self, conn: Connection, ranking: Ranking, rankings: Rankings) -> list[SearchHit]:
        """The fused rankings as :class:`SearchHit`, best first (for :meth:`search`)."""
        fused = fuse(rankings, self.config.rrf_k)[: ranking.limit]
        if not fused:
            return []
        rows = hit_rows(conn, ranking.user_id, ranking.session_id, [s for s, _, _ in fused])
        return [
            SearchHit(
                seq=seq,
                event_id=rows[seq][1],
                turn_id=rows[seq][2],
                ts=rows[seq][3],
                type=rows[seq][4],
                author=rows[seq][5],
                score=score,
                lexical_rank=ranks[0],
                dense_rank=ranks[1],
                token_estimate=rows[seq][6],
            )
            for seq, score, ranks in fused
            if seq in rows
        ]

    def _retrieved(self, conn: Connection, ranking: Ranking, rankings: Rankings) -> Retrieval:
        """The fused rankings as the context builder takes them, best first: seq, score
        and token estimate only (it reads the events it keeps itself), with the author
        the query is about."""
        # context imports us
        from agentctx.context.sources import Retrieval, RetrievedHit  # noqa: PLC0415

        best = top_fused(rankings, self.config.rrf_k, ranking.limit)
        if not best:
            return Retrieval(
                subject=ranking.subject, dense=ranking.dense, unembedded=ranking.unembedded
            )
        tokens = event_column(
            conn, ranking.user_id, ranking.session_id, [s for s, _ in best], "token_estimate"
        )
        hits = tuple(
            RetrievedHit(seq=seq, score=score, tokens=tokens[seq])
            for seq, score in best
            if seq in tokens
        )
        return Retrieval(
            hits, subject=ranking.subject, dense=ranking.dense, unembedded=ranking.unembedded
        )

    def _rankings(
        self,
        conn: Connection,
        state: IndexState,
        embedder_id: int | None,
        ranking: Ranking,
        context: IndexState | None,
    ) -> Rankings:
        """The rankings to fuse (:func:`~agentctx.retrieval.rankings.rankings_of`)."""
        return rankings_of(
            conn, state, embedder_id, ranking, context, self._context_id,
            config=self.config, vectors=self._vector_search,
        )  # fmt: skip

    def _behind(self, state: IndexState, embedder_id: int | None) -> bool:
        """Whether the search should sync first (from the state alone): with a background
        worker, only when the words of more than a few steps' events are not indexed
        (an import, a worker far behind); the newest few are in the window's recent
        history anyway, and indexing them here would queue the search behind the
        worker's writes."""
        lexical_backlog = state.last_seq - state.indexed_seq
        if self._worker is not None:
            return lexical_backlog > _SEARCH_CATCH_UP
        if lexical_backlog > 0:
            return True
        embeds = embedder_id is not None and self._search_embed_limit() > 0
        return embeds and state.embedded_seq < state.indexed_seq

    def retrieve(
        self, user_id: str, session_id: str, query: str, *, limit: int, before_seq: int | None
    ) -> Retrieval:
        """The context builder's ``Retriever`` protocol: :meth:`search`'s hits as (seq,
        score, token estimate), and the one author the query names (``subject``)."""
        with self._forgetting.gen_rlock():
            return self._search(
                user_id,
                session_id,
                query,
                limit=limit,
                exclude_from_seq=before_seq,
                finish=self._retrieved,
            )

    def prefetch(self, user_id: str, session_id: str, query: str) -> None:
        """The ``Retriever`` protocol's head start: embed the text a search of the
        session by ``query`` would embed on a helper thread
        (:meth:`QueryVectors.prefetch`), so the window's other work runs meanwhile."""
        vectors = self.query_vectors
        if vectors is None or not query.strip() or self._dense_state() != "used":
            return
        if self._worker is not None and self.config.query_embedding == "background":
            return  # the worker embeds it and the search does not wait
        if vectors.cached(query)[0]:
            return  # asked before (as it stands: working out who it names costs a read)
        with self._forgetting.gen_rlock():
            vectors.prefetch(self._reader.asked(user_id, session_id, query).text)

    # Neighbours -------------------------------------------------------------------------

    def neighbours(
        self,
        user_id: str,
        session_id: str,
        seqs: Sequence[int],
        *,
        radius: int = 1,
        same_turn: bool = True,
    ) -> list[int]:
        """Seqs within ``radius`` of the given ones (not themselves), oldest first;
        with ``same_turn`` only those in the same turn as the event they neighbour."""
        with self.db.read() as conn:
            return turn_neighbours(conn, (user_id, session_id), seqs, radius, same_turn)
