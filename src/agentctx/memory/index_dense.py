"""Dense side of the memory index: a user's memory vectors, stored and searched.

Vectors live in sqlite-vec or pgvector (:mod:`agentctx.memory.index_tables`),
partitioned by the user. A user with few memories is searched there exactly. Both
exact searches read every vector of the user (about 1 µs a vector on sqlite-vec, 20 µs
on pgvector), too slow at 100k memories, so for a larger user :class:`CodeCache` keeps
the sign bits and an int8 copy of every vector in memory (the retrieval index's
scheme, see :mod:`agentctx.retrieval.dense`, with the int8 vectors in memory too:
384 bytes a memory): the closest few hundred by Hamming distance are ranked again
by their int8 cosine.
"""

from __future__ import annotations

import importlib
import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, bindparam, text

from agentctx.memory.index_tables import vector_table
from agentctx.retrieval.dense import float32_bytes, pgvector_literal


def _numpy() -> Any | None:
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


def insert_vectors(
    conn: Connection, embedder_id: int, uid: int, items: Sequence[tuple[int, Sequence[float]]]
) -> None:
    """Store vectors given as (doc_id, vector)."""
    if not items:
        return
    table = vector_table(embedder_id)
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(
            f'INSERT INTO "{table}" (rowid, uid, embedding) VALUES (?, ?, ?)',
            [(doc, uid, float32_bytes(vector)) for doc, vector in items],
        )
        return
    conn.execute(
        text(
            f'INSERT INTO "{table}" (doc_id, uid, embedding) '
            "VALUES (:doc, :uid, CAST(:vector AS vector))"
        ),
        [{"doc": doc, "uid": uid, "vector": pgvector_literal(vector)} for doc, vector in items],
    )


def exact_search(
    conn: Connection, embedder_id: int, uid: int, query: Sequence[float], *, k: int
) -> list[tuple[int, float]]:
    """The user's ``k`` nearest documents as (doc_id, cosine distance), nearest first."""
    table = vector_table(embedder_id)
    if conn.dialect.name == "sqlite":
        rows = conn.execute(
            text(
                f'SELECT rowid, distance FROM "{table}" WHERE embedding MATCH :q '
                "AND k = :k AND uid = :uid ORDER BY distance"
            ),
            {"q": float32_bytes(query), "k": min(k, 4096), "uid": uid},
        ).all()
    else:
        rows = conn.execute(
            text(
                f'SELECT doc_id, embedding <=> CAST(:q AS vector) AS distance FROM "{table}" '
                "WHERE uid = :uid ORDER BY distance LIMIT :k"
            ),
            {"q": pgvector_literal(query), "k": k, "uid": uid},
        ).all()
    return [(int(doc), float(distance)) for doc, distance in rows if distance is not None]


def vectors_of(conn: Connection, embedder_id: int, doc_ids: Sequence[int]) -> dict[int, Any]:
    """Stored vectors by doc_id (float32 bytes on SQLite, float lists on PostgreSQL)."""
    if not doc_ids:
        return {}
    table = vector_table(embedder_id)
    if conn.dialect.name == "sqlite":
        sql = f'SELECT rowid, embedding FROM "{table}" WHERE rowid IN :ids'
    else:
        sql = f'SELECT doc_id, CAST(embedding AS real[]) FROM "{table}" WHERE doc_id IN :ids'
    statement = text(sql).bindparams(bindparam("ids", expanding=True))
    return {int(doc): vector for doc, vector in conn.execute(statement, {"ids": list(doc_ids)})}


def cosines(query: Sequence[float], vectors: dict[int, Any]) -> dict[int, float]:
    """Cosine similarity of the query with each stored vector (both unit length)."""
    np = _numpy()
    found: dict[int, float] = {}
    if np is not None:
        q = np.asarray(query, dtype=np.float32)
        for doc, vector in vectors.items():
            v = (
                np.frombuffer(vector, dtype=np.float32)
                if isinstance(vector, bytes | memoryview)
                else np.asarray(vector, dtype=np.float32)
            )
            norm = float(np.linalg.norm(v)) * float(np.linalg.norm(q))
            found[doc] = float(v @ q) / norm if norm else 0.0
        return found
    import struct  # noqa: PLC0415 - only without numpy

    for doc, vector in vectors.items():
        values: Sequence[float] = (
            struct.unpack(f"<{len(vector) // 4}f", bytes(vector))
            if isinstance(vector, bytes | memoryview)
            else vector
        )
        dot = sum(a * b for a, b in zip(values, query, strict=False))
        norm = (sum(a * a for a in values) * sum(b * b for b in query)) ** 0.5
        found[doc] = dot / norm if norm else 0.0
    return found


@dataclass(frozen=True, slots=True)
class _Codes:
    stamp: tuple[int, int]  # (documents, newest doc_id) of the user when loaded
    doc_ids: Any  # int64[n]
    codes: Any  # uint64[words, n]: sign bits, 64 dimensions a word, one row per word
    quantized: Any  # int8[n, dimensions]: each row scaled so its largest magnitude is 127


class CodeCache:
    """Sign codes of large users' memory vectors, in memory (needs numpy).

    Keyed by (uid, embedder_id) and checked against the user's (document count, newest
    doc_id): doc_ids are never reused and a changed memory gets a new one, so any index
    change moves the stamp and the entry is loaded again. At most ``max_vectors`` codes
    are kept, least recently used users dropped first.
    """

    def __init__(self, max_vectors: int = 2_000_000) -> None:
        self.max_vectors = max_vectors
        self._entries: OrderedDict[tuple[int, int], _Codes] = OrderedDict()
        self._lock = threading.Lock()
        self._np = _numpy()

    @property
    def enabled(self) -> bool:
        """Whether numpy is available."""
        return self._np is not None and self.max_vectors > 0

    def _load(self, conn: Connection, embedder_id: int, uid: int, stamp: tuple[int, int]) -> _Codes:
        np = self._np
        assert np is not None
        key = (uid, embedder_id)
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.stamp == stamp:
                self._entries.move_to_end(key)
                return entry
        table = vector_table(embedder_id)
        if conn.dialect.name == "sqlite":
            rows = conn.execute(
                text(f'SELECT rowid, embedding FROM "{table}" WHERE uid = :uid'), {"uid": uid}
            ).all()
            matrix = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32)
        else:
            rows = conn.execute(
                text(f'SELECT doc_id, CAST(embedding AS real[]) FROM "{table}" WHERE uid = :uid'),
                {"uid": uid},
            ).all()
            matrix = np.asarray([r[1] for r in rows], dtype=np.float32)
        doc_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
        matrix = matrix.reshape(len(rows), -1) if len(rows) else matrix.reshape(0, 8)
        top = np.abs(matrix).max(axis=1, initial=0.0) if len(rows) else np.zeros(0)
        scale = np.divide(127.0, top, out=np.zeros_like(top), where=top > 0)
        quantized = np.round(matrix * scale[:, None]).astype(np.int8)
        fresh = _Codes(stamp, doc_ids, _sign_words(np, matrix), quantized)
        with self._lock:
            self._entries[key] = fresh
            self._entries.move_to_end(key)
            total = sum(len(e.doc_ids) for e in self._entries.values())
            while total > self.max_vectors and len(self._entries) > 1:
                _, dropped = self._entries.popitem(last=False)
                total -= len(dropped.doc_ids)
        return fresh

    def search(
        self,
        conn: Connection,
        embedder_id: int,
        uid: int,
        stamp: tuple[int, int],
        query: Sequence[float],
        *,
        take: int,
        k: int,
    ) -> list[tuple[int, float]]:
        """The ``take`` doc_ids closest to the query by Hamming distance of sign codes,
        ranked by the cosine of their int8 vectors (in memory); the best ``k`` as
        (doc_id, cosine distance)."""
        np = self._np
        assert np is not None
        entry = self._load(conn, embedder_id, uid, stamp)
        n = len(entry.doc_ids)
        if n == 0:
            return []
        distances = _hamming(np, entry.codes, _sign_words(np, np.asarray([query])))
        nearest = _closest(np, distances, min(take, n))
        matrix = entry.quantized[nearest].astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0] = 1.0
        q_vector = np.asarray(query, dtype=np.float32)
        q_norm = float(np.linalg.norm(q_vector)) or 1.0
        cosine = (matrix @ q_vector) / norms / q_norm
        order = np.argsort(-cosine, kind="stable")[:k]
        return [(int(entry.doc_ids[nearest[i]]), float(1.0 - cosine[i])) for i in order]


def _sign_words(np: Any, matrix: Any) -> Any:
    """The sign bits of each row, as uint64[words, rows] (padded with zero bits)."""
    packed = np.packbits(np.asarray(matrix, dtype=np.float32) > 0, axis=1)
    pad = (-packed.shape[1]) % 8
    if pad:
        packed = np.pad(packed, ((0, 0), (0, pad)))
    words = np.ascontiguousarray(packed).view(np.uint64)
    return np.ascontiguousarray(words.T)


def _hamming(np: Any, codes: Any, query: Any) -> Any:
    """Hamming distance of each code to the query's, as uint16[n].

    A word (one contiguous row of ``n``) at a time, into reused buffers: at a million
    codes this takes a few milliseconds where XOR-ing the (n, bytes) matrix at once
    took tens (the temporaries are as large as the codes).
    """
    n = codes.shape[1]
    total = np.zeros(n, dtype=np.uint16)
    xor = np.empty(n, dtype=np.uint64)
    count = getattr(np, "bitwise_count", None)
    bits = np.empty(n, dtype=np.uint8)
    table: Any = np.asarray([bin(i).count("1") for i in range(256)], dtype=np.uint16)
    for word, q in zip(codes, query[:, 0], strict=True):
        np.bitwise_xor(word, q, out=xor)
        if count is not None:
            count(xor, out=bits)
            np.add(total, bits, out=total)
        else:  # numpy < 2: a byte table
            np.add(total, table[xor.view(np.uint8)].reshape(n, 8).sum(axis=1), out=total)
    return total


def _closest(np: Any, distances: Any, take: int) -> Any:
    """Indices of ``take`` smallest distances (ties at the cut broken by position).

    Distances are small integers, so a histogram finds the cut in one pass, cheaper
    than a partition of the whole array."""
    if take >= len(distances):
        return np.arange(len(distances))
    cumulative = np.cumsum(np.bincount(distances))
    cut = int(np.searchsorted(cumulative, take))  # the first distance reaching `take`
    inside = np.flatnonzero(distances < cut)
    tied = np.flatnonzero(distances == cut)[: take - len(inside)]
    return np.concatenate([inside, tied])


def search(
    conn: Connection,
    cache: CodeCache,
    *,
    embedder_id: int,
    uid: int,
    stamp: tuple[int, int],
    query: Sequence[float],
    k: int,
    exact_limit: int,
    rescore: int,
) -> list[tuple[int, float]]:
    """The user's ``k`` nearest documents as (doc_id, cosine distance), nearest first:
    exact for a user with at most ``exact_limit`` documents, else the sign-code first
    pass over ``max(rescore, k)`` candidates ranked by their int8 cosine."""
    if stamp[0] <= exact_limit or not cache.enabled:
        return exact_search(conn, embedder_id, uid, query, k=k)
    return cache.search(conn, embedder_id, uid, stamp, query, take=max(rescore, k), k=k)
