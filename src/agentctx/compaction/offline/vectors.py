"""TF-IDF term vectors over the index terms of :mod:`agentctx.retrieval.terms`.

The vectors exist to compare texts (cosine similarity), so only terms found in at
least two texts get a column: a term of one text never adds to a dot product. Row
norms are still taken over every term, so the dot product of two rows is their
exact TF-IDF cosine while the matrix stays as narrow as the shared vocabulary.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from agentctx.retrieval.terms import document_terms

Matrix = npt.NDArray[np.float32]

MAX_COLUMNS = 8192
"""At most this many shared terms become columns (the most widespread ones)."""


def term_counts(text: str) -> Counter[str]:
    """The index terms of ``text`` with their counts."""
    return Counter(document_terms(text))


def document_frequency(counts: Sequence[Counter[str]]) -> Counter[str]:
    """In how many of the texts each term occurs."""
    df: Counter[str] = Counter()
    for row in counts:
        df.update(row.keys())
    return df


def idf_weights(counts: Sequence[Counter[str]], df: Counter[str] | None = None) -> dict[str, float]:
    """Smoothed inverse document frequency of every term: ``ln((n+1)/(df+1)) + 1``."""
    df = document_frequency(counts) if df is None else df
    n = len(counts)
    return {term: math.log((n + 1) / (freq + 1)) + 1.0 for term, freq in df.items()}


def cosine_matrix(counts: Sequence[Counter[str]]) -> Matrix:
    """Rows of sublinear TF-IDF weights scaled so that ``rows @ rows.T`` is the cosine.

    A text with no terms is a row of zeros (cosine 0 with everything).
    """
    df = document_frequency(counts)
    idf = idf_weights(counts, df)
    shared = sorted((term for term, freq in df.items() if freq >= 2), key=lambda t: (-df[t], t))
    columns = {term: i for i, term in enumerate(shared[:MAX_COLUMNS])}
    matrix = np.zeros((len(counts), len(columns)), dtype=np.float32)
    for i, row in enumerate(counts):
        squares = 0.0
        for term, count in row.items():
            weight = (1.0 + math.log(count)) * idf[term]
            squares += weight * weight
            column = columns.get(term)
            if column is not None:
                matrix[i, column] = weight
        if squares > 0.0:
            matrix[i] /= math.sqrt(squares)
    return matrix
