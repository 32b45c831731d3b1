"""Reciprocal rank fusion: several rankings of seqs (or ids) made one.

Each ranking is (items best first, weight); an item scores ``weight / (k + rank)`` in
each ranking that holds it, summed. The session index fuses its lexical, dense,
contextual, participant and feedback rankings this way, the memory index its lexical
and dense ones.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence


def fuse(
    rankings: Sequence[tuple[Sequence[int], float]], k: int
) -> list[tuple[int, float, list[int | None]]]:
    """Reciprocal rank fusion of seq rankings given as (seqs best first, weight).

    Returns (seq, score, 1-based rank in each ranking or None), best first; ties go to
    the newer event.
    """
    scores = fused_scores(rankings, k)
    ranks: dict[int, list[int | None]] = {}
    count = len(rankings)
    for index, (ranking, _) in enumerate(rankings):
        for rank, seq in enumerate(ranking, start=1):
            found = ranks.get(seq)
            if found is None:
                found = ranks[seq] = [None] * count
            found[index] = rank
    order = sorted(scores, key=lambda seq: (-scores[seq], -seq))
    return [(seq, scores[seq], ranks[seq]) for seq in order]


def fused_scores(rankings: Sequence[tuple[Sequence[int], float]], k: int) -> dict[int, float]:
    """seq -> its reciprocal rank fusion score over ``rankings`` (see :func:`fuse`)."""
    scores: dict[int, float] = {}
    get = scores.get
    for ranking, weight in rankings:
        for rank, seq in enumerate(ranking, start=k + 1):
            scores[seq] = get(seq, 0.0) + weight / rank
    return scores


def best_fused(rankings: Sequence[tuple[Sequence[int], float]], k: int, n: int) -> list[int]:
    """The first ``n`` seqs :func:`fuse` would give, without ranking the rest."""
    return [seq for seq, _ in top_fused(rankings, k, n)]


def top_fused(
    rankings: Sequence[tuple[Sequence[int], float]], k: int, n: int
) -> list[tuple[int, float]]:
    """The first ``n`` (seq, score) pairs :func:`fuse` would give, without their ranks
    and without ranking the rest."""
    scores = fused_scores(rankings, k)
    best = heapq.nsmallest(n, scores, key=lambda seq: (-scores[seq], -seq))
    return [(seq, scores[seq]) for seq in best]
