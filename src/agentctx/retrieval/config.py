"""Retrieval settings: fusion weights, batch sizes, and the knobs that bound latency."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field


class RetrievalConfig(BaseModel):
    """How the search index ranks, syncs and bounds its work."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    rrf_k: int = Field(
        default=20,
        ge=1,
        description="Reciprocal rank fusion constant (smaller: the top of each ranking "
        "counts for more).",
    )
    lexical_weight: float = Field(default=1.0, ge=0, description="Weight of the lexical ranking.")
    dense_weight: float = Field(default=1.0, ge=0, description="Weight of the dense ranking.")
    context_chars: int = Field(
        default=200,
        ge=0,
        le=2000,
        description="Each event also gets a second vector, embedded after this many "
        "characters of the event before it, searched as a third ranking (0: off).",
    )
    participant_weight: float = Field(
        default=2.0,
        ge=0,
        description="Weight of the rankings restricted to the one session author a query "
        "names (0: off). See agentctx.retrieval.participants.",
    )
    date_weight: float = Field(
        default=2.0,
        ge=0,
        description="Weight of the rankings restricted to the events of a day the query "
        "names (a date, or 'yesterday', 'on Friday' counted from the newest event), and of "
        "the day after (0: off). See agentctx.retrieval.dates.",
    )
    aliases: bool = Field(
        default=True,
        description="Learn the other names participants go by from how they are addressed "
        "and introduce themselves, so a query naming one finds their events. See "
        "agentctx.retrieval.aliases.",
    )
    feedback_weight: float = Field(
        default=1.0,
        ge=0,
        description="Weight of a second dense ranking, for the query moved towards its "
        "best hits (pseudo-relevance feedback; 0: off).",
    )
    feedback_docs: int = Field(default=3, ge=1, le=20, description="Best hits fed back.")
    feedback_mix: float = Field(
        default=0.7, ge=0, le=5, description="How far the query moves towards the hits fed back."
    )
    min_similarity: float = Field(
        default=0.1,
        ge=-1,
        le=1,
        description="Dense hits less similar than this (cosine) are dropped: nearest is not "
        "always near.",
    )
    # Reciprocal-rank fusion rewards an event several rankings agree on; cut short, they
    # agree on little past their first few dozen. With rankings 83 deep (the earlier
    # default of 50, raised to a 1k window's 83 candidates) a 1k window found 0.785 of
    # the development chats' evidence, 200 deep 0.790, 400-1,000 deep 0.791; windows of
    # 4k and more ask for more candidates than this anyway.
    candidates: int = Field(
        default=200, ge=1, le=4096, description="Depth of each ranking before fusion (at least)."
    )
    sync_batch: int = Field(
        default=256, ge=1, le=10_000, description="Events read (and embedded) per sync step."
    )
    inline_embed_limit: int = Field(
        default=256,
        ge=0,
        description="With jobs='inline' only: documents a search embeds itself before "
        "answering; the rest are left to the turn-end job (lexical indexing always "
        "completes). With a background worker or jobs='manual' a search embeds nothing.",
    )
    query_embedding: Literal["inline", "background"] = Field(
        default="inline",
        description="With the background worker: 'inline' embeds a new query in the "
        "search once the model is loaded (one short text, about 12 ms on one core), so "
        "the call that brings a new request ranks by vectors; 'background' never runs "
        "the model in a window: a new query is ranked by words and recency and its vector "
        "is computed by the worker for the next call (dense_ranking 'pending').",
    )
    embed_queue_size: int = Field(
        default=1024,
        ge=1,
        description="Sessions the background embedding worker holds queued; past it, a "
        "request is shed (never blocking a write) and the session is asked for again by "
        "its next search or turn end. See agentctx.retrieval.embedding_worker.",
    )
    embed_batch: int = Field(
        default=8,
        ge=1,
        le=10_000,
        description="Events the background worker embeds of one session before the next "
        "queued session's turn, and before it answers a query a window asked for.",
    )
    embed_step_chars: int = Field(
        default=2000,
        ge=1,
        description="And at most about this many characters of their text (each vector "
        "kind; at least one event). The model's time grows with the text: a 2,000-"
        "character tool result takes the local model about 100 ms on one core. Between "
        "two steps the worker indexes the words of what was written meanwhile, which a "
        "window needs to find it.",
    )
    max_postings: int = Field(
        default=8000,
        ge=100,
        description="Postings a lexical lookup may score (about 1 µs each); the rarest "
        "query terms are kept.",
    )
    exact_vector_limit: int | None = Field(
        default=None,
        ge=0,
        description="Sessions with up to this many vectors are searched exactly (on "
        "SQLite in memory over their cached float vectors, else in the database), larger "
        "ones through the in-memory sign codes (with numpy). Default: 4000 on SQLite, "
        "256 on PostgreSQL (pgvector reads whole rows).",
    )
    rescore_candidates: int = Field(
        default=256, ge=1, description="Sign-code neighbours ranked again by int8 vectors."
    )
    code_cache_vectors: int = Field(
        default=1_000_000, ge=0, description="Sign codes kept in memory (about 64 bytes each)."
    )
    vector_cache_vectors: int = Field(
        default=50_000,
        ge=0,
        description="Float vectors of small SQLite sessions kept in memory for exact search "
        "with numpy (about 1.5 KB each at 384 dimensions); 0 leaves it to sqlite-vec.",
    )
    query_cache_size: int = Field(
        default=256, ge=0, description="Query embeddings remembered (repeated queries)."
    )
