"""The rankings a search fuses: what one search asks of the index (:class:`Ranking`) and
the ranked lists made for it (:func:`rankings_of`), each weighted, fused by reciprocal
rank in :mod:`agentctx.retrieval.fusion`."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection

from agentctx.retrieval import dense as dense_index
from agentctx.retrieval import lexical as lexical_index
from agentctx.retrieval.config import RetrievalConfig
from agentctx.retrieval.dates import QueryDays, restrict_to_days
from agentctx.retrieval.event_rows import event_column
from agentctx.retrieval.fusion import best_fused
from agentctx.retrieval.sync import IndexState
from agentctx.retrieval.vector_search import VectorSearch

if TYPE_CHECKING:
    from agentctx.context.sources import DenseState

Rankings = list[tuple[Sequence[int], float]]
"""Rankings to fuse, each as (seqs best first, weight)."""


@dataclass(frozen=True, slots=True)
class Ranking:
    """What one search asks of the index."""

    user_id: str
    session_id: str
    terms: list[str]
    vector: list[float] | None
    depth: int  # candidates per ranking
    limit: int
    before_seq: int | None
    subject: str | None = None  # the one participant the query names (see participants)
    focus: str | None = None  # the subject, when their own events are ranked on their own
    days: QueryDays | None = None  # the days the query names (see dates)
    dense: DenseState = "off"  # whether vectors took part, or why not
    unembedded: int = 0  # indexed documents still waiting for their vector


def rankings_of(  # noqa: PLR0917 - a search's state and request
    conn: Connection,
    state: IndexState,
    embedder_id: int | None,
    ranking: Ranking,
    context: IndexState | None,
    context_id: int | None,
    *,
    config: RetrievalConfig,
    vectors: VectorSearch,
) -> Rankings:
    """The rankings to fuse: lexical, dense, the contextual vectors' (``context``, of
    the embedder id ``context_id``), the named participant's own, the days the query
    names, and the feedback ranking."""
    if state.sid is None:
        return []
    lexical_hits = lexical_index.search_session(
        conn,
        lexical_index.SessionStats(state.sid, state.doc_count, state.term_count),
        ranking.terms,
        limit=ranking.depth,
        before_seq=ranking.before_seq,
        max_postings=config.max_postings,
    )
    dense_hits: list[dense_index.DenseHit] = []
    if ranking.vector is not None and embedder_id is not None and state.vector_count:
        dense_hits = vectors.search(
            conn,
            state,
            embedder_id,
            ranking.vector,
            depth=ranking.depth,
            before_seq=ranking.before_seq,
        )
    lexical_seqs = [h.seq for h in lexical_hits]
    dense_seqs = [h.seq for h in dense_hits]
    weights = config.lexical_weight, config.dense_weight
    rankings: Rankings = [
        (lexical_seqs, weights[0]),
        (dense_seqs, weights[1]),
    ]
    if (
        context is not None
        and context_id is not None
        and ranking.vector is not None
        and context.vector_count
    ):
        # The same query against each event embedded after the one before it: a
        # short answer ("They said 6") is found through the question it answers.
        context_hits = vectors.search(
            conn,
            context,
            context_id,
            ranking.vector,
            depth=ranking.depth,
            before_seq=ranking.before_seq,
        )
        rankings.append(([h.seq for h in context_hits], weights[1]))
    base = list(rankings)
    if ranking.days is not None:
        # The events of the days the query names ranked on their own: the same
        # rankings, restricted to what was written on those days. The newest event
        # is the present that "yesterday" counts from.
        ranked = {seq for seqs, _ in base for seq in seqs} | {state.last_seq}
        written = event_column(conn, ranking.user_id, ranking.session_id, ranked, "ts")
        present = written.get(state.last_seq)
        days = ranking.days.resolve(present.date() if present is not None else None)
        rankings.extend(restrict_to_days(base, written, days, config.date_weight))
    if ranking.focus is not None:
        # The named participant's events ranked on their own: the same two rankings,
        # restricted to what they wrote.
        authors = event_column(
            conn,
            ranking.user_id,
            ranking.session_id,
            set(lexical_seqs) | set(dense_seqs),
            "author",
        )
        focus = ranking.focus
        boost = config.participant_weight
        for seqs, weight in base:
            own = [seq for seq in seqs if authors.get(seq) == focus]
            rankings.append((own, weight * boost))
    if (
        config.feedback_weight
        and ranking.vector is not None
        and embedder_id is not None
        and state.vector_count
    ):
        best = best_fused(rankings, config.rrf_k, config.feedback_docs)
        feedback = (
            vectors.feedback(
                conn,
                state,
                embedder_id,
                ranking.vector,
                best,
                depth=ranking.depth,
                before_seq=ranking.before_seq,
            )
            if best
            else []
        )
        if feedback:
            rankings.append(([h.seq for h in feedback], config.feedback_weight))
    return rankings
