"""The sentence graph of TextRank: pairwise cosines and PageRank centrality.

Rows are TF-IDF vectors scaled so that a dot product is the cosine (see
:func:`~agentctx.compaction.offline.vectors.cosine_matrix`).
"""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from agentctx.compaction.offline.vectors import Matrix
from agentctx.priority import yield_to_foreground

MAX_GRAPH = 1500
"""Past this many sentences centrality is the cosine to the centroid (linear, not quadratic)."""

_DAMPING = 0.85
_NEIGHBOURS = 20  # links per sentence in the TextRank graph
_SPARSE_PAIRS = 2_000_000  # past this many term co-occurrences the product is dense


def similarities(matrix: Matrix) -> Matrix | None:
    """Sentence-by-sentence cosines (zero diagonal), or None past MAX_GRAPH sentences.

    Sentences share few terms, so the products are summed term by term over the
    sentences holding each term (a sparse product, no BLAS threads to wake); a dense
    product is used when that would be the larger job.
    """
    n = matrix.shape[0]
    if n > MAX_GRAPH or matrix.shape[1] == 0:
        return None
    rows, cols = np.nonzero(matrix)
    df = np.bincount(cols, minlength=matrix.shape[1])
    if int((df.astype(np.int64) ** 2).sum()) > _SPARSE_PAIRS:
        dense: Matrix = matrix @ matrix.T
        np.fill_diagonal(dense, 0.0)
        return dense
    order = np.argsort(cols, kind="stable")
    rows, cols = rows[order], cols[order]
    values = matrix[rows, cols].astype(np.float64)
    ends = np.cumsum(df)
    flat: list[npt.NDArray[np.int64]] = []
    weights: list[npt.NDArray[np.float64]] = []
    for done, column in enumerate(np.flatnonzero(df >= 2)):
        if not done % 256:
            yield_to_foreground()  # summaries are made in the background
        span = slice(int(ends[column] - df[column]), int(ends[column]))
        members, value = rows[span].astype(np.int64), values[span]
        flat.append((members[:, None] * n + members[None, :]).ravel())
        weights.append(np.outer(value, value).ravel())
    if not flat:
        return np.zeros((n, n), dtype=np.float32)
    sums = np.bincount(np.concatenate(flat), weights=np.concatenate(weights), minlength=n * n)
    similarity: Matrix = sums.reshape(n, n).astype(np.float32)
    np.fill_diagonal(similarity, 0.0)
    return similarity


def centrality(matrix: Matrix, similarity: Matrix | None) -> npt.NDArray[np.float64]:
    """TextRank scores scaled to a maximum of 1 (centroid cosine past MAX_GRAPH rows).

    The graph links each sentence to its :data:`_NEIGHBOURS` most similar ones, the
    usual sparsification of TextRank: the power iteration then costs a few thousand
    multiplications a step, whatever the number of sentences.
    """
    n = matrix.shape[0]
    if n == 0 or matrix.shape[1] == 0:
        return np.zeros(n)
    if similarity is None:
        scores = (matrix @ matrix.sum(axis=0)).astype(np.float64)
    else:
        k = min(_NEIGHBOURS, n - 1)
        if k <= 0:
            return np.ones(n)
        cols = np.argpartition(-similarity, k - 1, axis=1)[:, :k]
        weights = np.take_along_axis(similarity, cols, axis=1).astype(np.float64)
        totals = weights.sum(axis=1)
        isolated = totals <= 0
        transition = weights / np.where(isolated, 1.0, totals)[:, None]
        rows_flat, cols_flat = np.repeat(np.arange(n), k), cols.ravel()
        weights_flat = transition.ravel()
        # Power iteration of PageRank; a sentence sharing nothing links to all evenly.
        scores = np.full(n, 1.0 / n)
        for _ in range(100):
            links = np.bincount(cols_flat, weights=weights_flat * scores[rows_flat], minlength=n)
            links += scores[isolated].sum() / n
            updated = (1 - _DAMPING) / n + _DAMPING * links
            done = float(np.abs(updated - scores).sum()) < 1e-7
            scores = updated
            if done:
                break
    top = scores.max()
    return scores / top if top > 0 else np.zeros(n)
