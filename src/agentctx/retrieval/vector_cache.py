"""Exact dense search of small sessions in memory, from their float vectors.

sqlite-vec answers a session's k nearest exactly, but it pays for every row it
returns: about 4 µs a result, so a context window that asks for several hundred
candidates from two vector tables spends 5-6 ms there on a 1,500-event session.
Numpy ranks the same 1,500 vectors in well under a millisecond. So the float
vectors of a small session are read once (through the vector table's ``(sid, seq)``
index) and kept, normalized, in memory; each search is one matrix product.

The distances are the same cosine distances sqlite-vec computes (up to float
rounding), events of equal distance come newest first, and zero vectors, whose
distance is undefined, are left out, as in :func:`agentctx.retrieval.dense.exact_search`.
Stored vectors never change and a session's number is never reused, so an entry only
grows by the newer rows of its session; least recently used sessions are dropped first
once more than ``max_vectors`` are held.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, text

from agentctx.retrieval.blas import one_blas_thread
from agentctx.retrieval.dense import DenseHit, NumpyCache
from agentctx.retrieval.tables import vector_table


@dataclass(frozen=True, slots=True)
class _Vectors:
    upto_seq: int
    seqs: Any  # int64[n], ascending
    docs: Any  # int64[n]
    unit: Any  # float32[n, dims], rows of length 1 (zero rows stay zero)
    nonzero: Any  # bool[n]


def nearest_rows(
    np: Any, unit: Any, nonzero: Any, newer: Any, query: Sequence[float], *, k: int
) -> tuple[Any, Any]:
    """The indices of the ``k`` rows of ``unit`` (float32, each of length 1 or 0) nearest
    to ``query`` by cosine distance, nearest first, and every row's distance. Of equal
    distances the row with the larger ``newer`` comes first; rows not ``nonzero`` (whose
    distance is undefined) are left out. Nothing for a zero query."""
    q = np.asarray(query, dtype=np.float32)
    norm = float(np.linalg.norm(q))
    if len(unit) == 0 or k < 1 or norm == 0.0:
        return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.float32)
    with one_blas_thread():
        distance = 1.0 - unit @ (q / norm)
    candidates = np.flatnonzero(nonzero)
    if len(candidates) > k:
        # The k smallest (ties at the cut kept whole, so that the order below decides).
        cut = np.partition(distance[candidates], k - 1)[k - 1]
        candidates = candidates[distance[candidates] <= cut]
    # Nearest first; of equal distances (rare with a real model) the newest first.
    order = candidates[np.lexsort((-newer[candidates], distance[candidates]))][:k]
    return order, distance


def unit_rows(np: Any, blobs: Sequence[bytes], *, width: int = 0) -> tuple[Any, Any]:
    """Little-endian float32 vectors as ``float32[n, dims]`` rows scaled to length 1 (zero
    rows stay zero), and which rows are not zero (``width``: dims when there are none)."""
    if blobs:
        matrix = np.frombuffer(b"".join(blobs), dtype=np.float32).reshape(len(blobs), -1)
    else:
        matrix = np.zeros((0, width), dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1)
    nonzero = norms > 0
    unit = matrix / np.where(nonzero, norms, 1.0)[:, None]
    return unit.astype(np.float32, copy=False), nonzero


class VectorCache(NumpyCache[_Vectors]):
    """Normalized float vectors of small sessions, for exact search with numpy (SQLite)."""

    def __init__(self, max_vectors: int = 50_000) -> None:
        super().__init__(max_vectors)

    def _load(self, conn: Connection, sid: int, embedder_id: int, upto_seq: int) -> _Vectors:
        np = self._np
        assert np is not None
        key = (sid, embedder_id)
        entry = self._entries.get(key)
        if entry is not None and entry.upto_seq >= upto_seq:
            return entry
        after = entry.upto_seq if entry is not None else 0
        present = conn.execute(
            text(
                f'SELECT seq, doc_id, embedding FROM "{vector_table(embedder_id)}" '
                "WHERE sid = :sid AND seq > :after AND seq <= :upto ORDER BY seq"
            ),
            {"sid": sid, "after": after, "upto": upto_seq},
        ).all()
        seqs = np.fromiter((row[0] for row in present), dtype=np.int64, count=len(present))
        doc_ids = np.fromiter((row[1] for row in present), dtype=np.int64, count=len(present))
        width = entry.unit.shape[1] if entry is not None else 0
        unit, nonzero = unit_rows(np, [bytes(row[2]) for row in present], width=width)
        if entry is not None and len(entry.seqs):
            seqs = np.concatenate([entry.seqs, seqs])
            doc_ids = np.concatenate([entry.docs, doc_ids])
            unit = np.concatenate([entry.unit, unit]) if present else entry.unit
            nonzero = np.concatenate([entry.nonzero, nonzero])
        fresh = _Vectors(upto_seq, seqs, doc_ids, unit, nonzero)
        self._keep(key, fresh)
        return fresh

    def search(
        self,
        conn: Connection,
        embedder_id: int,
        sid: int,
        embedded_seq: int,
        query: Sequence[float],
        *,
        k: int,
        before_seq: int | None,
    ) -> list[DenseHit]:
        """The ``k`` nearest documents of session ``sid`` (``seq < before_seq``), nearest first."""
        np = self._np
        assert np is not None
        entry = self._load(conn, sid, embedder_id, embedded_seq)
        n = len(entry.seqs)
        if before_seq is not None:
            n = int(np.searchsorted(entry.seqs, before_seq, side="left"))
        if n == 0:
            return []
        order, distance = nearest_rows(
            np, entry.unit[:n], entry.nonzero[:n], entry.seqs[:n], query, k=k
        )
        # Plain Python numbers, converted in bulk (one per hit, up to hundreds a search).
        return list(
            map(
                DenseHit,
                entry.seqs[order].tolist(),
                entry.docs[order].tolist(),
                distance[order].tolist(),
            )
        )
