"""Sign codes: one bit per dimension, for a fast first pass over many vectors.

Both dense indexes (a session's events in :mod:`agentctx.retrieval.dense`, a user's
memories in :mod:`agentctx.memory.index_dense`) keep codes in memory and rank them by
Hamming distance to the query's code before scoring the nearest few exactly.

Codes are held word-major, ``uint64[words, n]``: each 64-bit word of every code in
one contiguous row. A scan then XORs and counts one row at a time into reused
buffers; counting a ``(n, words)`` matrix at once took several times as long (the
row sums run over a short inner axis, and the temporaries are as large as the codes).
numpy is passed in by the caller, which imports it only when installed.
"""

from __future__ import annotations

from typing import Any

BYTE_BITS: list[int] = [bin(i).count("1") for i in range(256)]
"""Set bits of each byte value (popcount on numpy < 2, which lacks ``bitwise_count``)."""


def word_columns(np: Any, packed: Any) -> Any:
    """Codes given as bytes, ``uint8[n, bytes]`` (numpy's ``packbits`` order), as
    ``uint64[words, n]``, each code padded with zero bits to whole words."""
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    words = np.ascontiguousarray(packed).view(np.uint64)
    return np.ascontiguousarray(words.T)


def sign_words(np: Any, matrix: Any) -> Any:
    """The sign codes of each row of ``matrix`` (bit set for a positive value), as
    ``uint64[words, rows]``."""
    return word_columns(np, np.packbits(np.asarray(matrix, dtype=np.float32) > 0, axis=1))


def hamming(np: Any, codes: Any, query: Any) -> Any:
    """Hamming distance of each code in ``codes`` (``uint64[words, n]``) to ``query``
    (``uint64[words]``), as ``uint16[n]``."""
    n = codes.shape[1]
    total = np.zeros(n, dtype=np.uint16)
    xor = np.empty(n, dtype=np.uint64)
    count = getattr(np, "bitwise_count", None)
    bits = np.empty(n, dtype=np.uint8)
    table: Any = np.asarray(BYTE_BITS, dtype=np.uint16) if count is None else None
    for word, q in zip(codes, query, strict=True):
        np.bitwise_xor(word, q, out=xor)
        if count is not None:
            count(xor, out=bits)
            np.add(total, bits, out=total)
        else:  # numpy < 2: a byte table
            np.add(total, table[xor.view(np.uint8)].reshape(n, 8).sum(axis=1), out=total)
    return total


def closest(np: Any, distances: Any, take: int) -> Any:
    """Indices of the ``take`` smallest distances (ties at the cut broken by position).

    Distances are small integers, so a histogram finds the cut in one pass, cheaper
    than a partition of the whole array."""
    if take >= len(distances):
        return np.arange(len(distances))
    cumulative = np.cumsum(np.bincount(distances))
    cut = int(np.searchsorted(cumulative, take))  # the first distance reaching `take`
    inside = np.flatnonzero(distances < cut)
    tied = np.flatnonzero(distances == cut)[: take - len(inside)]
    return np.concatenate([inside, tied])
