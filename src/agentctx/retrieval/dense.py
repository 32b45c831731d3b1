"""Dense search: nearest events by cosine distance between embeddings, within one session.

Vectors are stored as float32 in a plain table (SQLite, see
:mod:`agentctx.retrieval.tables`) or as pgvector's ``vector``, and a session's nearest
neighbours come from there, exactly, while the session is small
(``RetrievalConfig.exact_vector_limit``): sqlite-vec's ``vec_distance_cosine`` or
pgvector's ``<=>`` over the session's rows. Both read every vector of the session to do
it: measured, about 1 µs a vector for sqlite-vec and 20 µs for pgvector 0.6, so 85 ms
and 200 ms at 100k events. So each vector is also kept in ``search_codes`` as its
sign bits (48 bytes for 384 dimensions) and as int8. For a larger session,
:class:`CodeCache` keeps the sign bits in memory (numpy), takes the closest few
hundred by Hamming distance, and ranks those by their int8 vectors, read by primary
key: a few milliseconds at 100k events, on either database. On SQLite a small
session's float vectors are kept in memory instead
(:class:`agentctx.retrieval.vector_cache.VectorCache`), since sqlite-vec pays per
result row. Without numpy, the exact search serves every session.
"""

from __future__ import annotations

import importlib
import struct
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import Connection, bindparam, select, text

from agentctx.cache.bounded import WeightedLru
from agentctx.retrieval.blas import one_blas_thread
from agentctx.retrieval.codes import closest, hamming, word_columns
from agentctx.retrieval.tables import vector_table
from agentctx.storage import fastsql
from agentctx.storage.schema import search_codes
from agentctx.storage.where import rows_by_seqs, seq_list_value


@dataclass(frozen=True, slots=True)
class DenseHit:
    """A document near the query (cosine distance: 0 same direction, 2 opposite)."""

    seq: int
    doc_id: int
    distance: float


def numpy_module() -> Any | None:
    """numpy, or None when it is not installed."""
    try:
        return importlib.import_module("numpy")
    except ImportError:
        return None


def float32_bytes(vector: Sequence[float]) -> bytes:
    """The vector as little-endian float32 (sqlite-vec's format)."""
    return struct.pack(f"<{len(vector)}f", *vector)


def pgvector_literal(vector: Sequence[float]) -> str:
    """The vector as pgvector's text form."""
    return "[" + ",".join(f"{x:.7g}" for x in vector) + "]"


def sign_code(vector: Sequence[float]) -> bytes:
    """One bit per dimension, set when the value is positive, first dimension in the
    high bit of the first byte (numpy's ``packbits`` order)."""
    bits = 0
    for value in vector:
        bits = (bits << 1) | (value > 0)
    pad = -len(vector) % 8
    return (bits << pad).to_bytes((len(vector) + pad) // 8, "big")


def quantize_int8(vector: Sequence[float]) -> bytes:
    """The vector scaled so its largest magnitude is 127, as signed bytes."""
    top = max((abs(x) for x in vector), default=0.0)
    scale = 127.0 / top if top > 0 else 0.0
    return struct.pack(f"{len(vector)}b", *(round(x * scale) for x in vector))


def insert_vectors(
    conn: Connection,
    embedder_id: int,
    sid: int,
    items: Sequence[tuple[int, int, Sequence[float]]],
) -> None:
    """Store vectors, given as (doc_id, seq, vector), with their codes."""
    if not items:
        return
    table = vector_table(embedder_id)
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(
            f'INSERT INTO "{table}" (doc_id, sid, seq, embedding) VALUES (?, ?, ?, ?)',
            [(doc, sid, seq, float32_bytes(vector)) for doc, seq, vector in items],
        )
    else:
        conn.execute(
            text(
                f'INSERT INTO "{table}" (doc_id, sid, seq, embedding) '
                "VALUES (:doc, :sid, :seq, CAST(:vector AS vector))"
            ),
            [
                {"doc": doc, "sid": sid, "seq": seq, "vector": pgvector_literal(vector)}
                for doc, seq, vector in items
            ],
        )
    conn.execute(
        search_codes.insert(),
        [
            {
                "sid": sid,
                "embedder_id": embedder_id,
                "seq": seq,
                "doc_id": doc,
                "code": sign_code(vector),
                "quantized": quantize_int8(vector),
            }
            for doc, seq, vector in items
        ],
    )


def exact_search(
    conn: Connection,
    embedder_id: int,
    sid: int,
    query: Sequence[float],
    *,
    k: int,
    before_seq: int | None,
) -> list[DenseHit]:
    """The ``k`` nearest documents of session ``sid`` (with ``seq < before_seq``), nearest first."""
    table = vector_table(embedder_id)
    bound = "" if before_seq is None else " AND seq < :before"
    params: dict[str, Any] = {"sid": sid, "k": k, "before": before_seq}
    if conn.dialect.name == "sqlite":
        params["q"] = float32_bytes(query)
        # Of equal distances the newest first, as the in-memory search ranks them
        # (agentctx.retrieval.vector_cache). A zero vector's distance is undefined (null),
        # but zero vectors are not stored: only a zero query gives nulls, all of them.
        sql = (
            f"SELECT seq, doc_id, vec_distance_cosine(embedding, :q) AS distance "
            f'FROM "{table}" WHERE sid = :sid{bound} '
            "ORDER BY distance, seq DESC LIMIT :k"
        )
    else:
        params["q"] = pgvector_literal(query)
        sql = (
            f'SELECT seq, doc_id, embedding <=> CAST(:q AS vector) AS distance FROM "{table}" '
            f"WHERE sid = :sid{bound} ORDER BY distance LIMIT :k"
        )
    rows = conn.execute(text(sql), params).all()
    return [
        DenseHit(int(seq), int(doc), float(distance))
        for seq, doc, distance in rows
        if distance is not None  # undefined for a zero vector
    ]


def stored_vectors(
    conn: Connection, embedder_id: int, sid: int, seqs: Sequence[int]
) -> list[list[float]]:
    """The stored (int8) vectors of the given events of session ``sid``, each of unit
    length, in seq order; events without a vector are left out."""
    if not seqs:
        return []
    vectors = []
    for _, _, raw in sorted(quantized_rows(conn, sid, embedder_id, seqs)):
        values = struct.unpack(f"{len(raw)}b", bytes(raw))
        norm = sum(v * v for v in values) ** 0.5
        if norm:
            vectors.append([v / norm for v in values])
    return vectors


def quantized_rows(
    conn: Connection, sid: int, embedder_id: int, seqs: Sequence[int]
) -> list[list[Any]]:
    """(seq, doc_id, int8 vector) of the given events of session ``sid`` that have one."""
    dialect = conn.dialect.name
    # Compiled once and run on the driver's cursor: through Connection.execute, the
    # statement's per-call work cost more than the read itself.
    found = fastsql.statement(conn, ("rescore_codes", dialect), lambda: _rescore_statement(dialect))
    values = {"sid": sid, "embedder_id": embedder_id, "seqs": seq_list_value(dialect, seqs)}
    return found.fetch_values(conn, values)


class _Entry(Protocol):
    @property
    def upto_seq(self) -> int: ...

    @property
    def seqs(self) -> Any: ...


EntryT = TypeVar("EntryT", bound=_Entry)


def rows_after(
    conn: Connection, sid: int, embedder_id: int, column: Any, *, after: int, upto_seq: int
) -> Sequence[Any]:
    """(seq, ``column``) of session ``sid``'s stored vectors with ``after < seq <=
    upto_seq``, in seq order: what a cache entry lacks."""
    return conn.execute(
        select(search_codes.c.seq, column)
        .where(
            search_codes.c.sid == sid,
            search_codes.c.embedder_id == embedder_id,
            search_codes.c.seq > after,
            search_codes.c.seq <= upto_seq,
        )
        .order_by(search_codes.c.seq)
    ).all()


class NumpyCache(Generic[EntryT]):
    """Base of the in-memory caches of per-session arrays (numpy needed)."""

    def __init__(self, max_vectors: int) -> None:
        self.max_vectors = max_vectors
        # Keyed by (sid, embedder_id), bounded by the rows held in all. A session's
        # number is never reused, so an entry can never serve another session; stored
        # vectors never change, so an entry is only replaced by one reaching further.
        self._entries: WeightedLru[tuple[int, int], EntryT] = WeightedLru(
            max_vectors, weigh=lambda entry: len(entry.seqs)
        )
        self._np = numpy_module()

    @property
    def enabled(self) -> bool:
        """Whether numpy is available and the cache may hold anything."""
        return self._np is not None and self.max_vectors > 0

    def __len__(self) -> int:
        """Rows held, in all sessions."""
        return self._entries.weight

    def held(self) -> list[tuple[int, int]]:
        """The (sid, embedder_id) of the sessions held, least recently used first."""
        return self._entries.keys()

    def clear(self) -> None:
        """Drop every session's arrays."""
        self._entries.clear()

    def drop(self, sid: int) -> None:
        """Drop session ``sid``'s arrays."""
        self._entries.discard(lambda key: key[0] == sid)

    def _keep(self, key: tuple[int, int], fresh: EntryT) -> None:
        """Hold ``fresh`` unless another thread stored an entry reaching as far."""
        self._entries.put(key, fresh, unless=lambda held: held.upto_seq >= fresh.upto_seq)


@dataclass(frozen=True, slots=True)
class _Codes:
    upto_seq: int
    seqs: Any  # int64[n], ascending
    codes: Any  # uint64[words, n] (see agentctx.retrieval.codes)


class CodeCache(NumpyCache[_Codes]):
    """In-memory sign codes of large sessions, for a fast approximate first pass.

    An entry only ever grows by the newer rows of its session.
    At most ``max_vectors`` codes are kept, least recently used sessions dropped first.
    """

    def __init__(self, max_vectors: int = 1_000_000) -> None:
        super().__init__(max_vectors)

    def _load(self, conn: Connection, sid: int, embedder_id: int, upto_seq: int) -> _Codes:
        np = self._np
        key = (sid, embedder_id)
        entry = self._entries.get(key)
        if entry is not None and entry.upto_seq >= upto_seq:
            return entry
        after = entry.upto_seq if entry is not None else 0
        rows = rows_after(
            conn, sid, embedder_id, search_codes.c.code, after=after, upto_seq=upto_seq
        )
        assert np is not None
        seqs = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
        raw = np.frombuffer(b"".join(bytes(row[1]) for row in rows), dtype=np.uint8)
        codes = word_columns(np, raw.reshape(len(rows), len(rows[0][1]) if rows else 0))
        if entry is not None and len(entry.seqs):
            seqs = np.concatenate([entry.seqs, seqs])
            codes = np.concatenate([entry.codes, codes], axis=1) if len(rows) else entry.codes
        fresh = _Codes(upto_seq, seqs, codes)
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
        candidates: int,
    ) -> list[DenseHit]:
        """Nearest ``k`` by Hamming distance of sign codes, then by int8 cosine."""
        np = self._np
        assert np is not None
        entry = self._load(conn, sid, embedder_id, embedded_seq)
        n = len(entry.seqs)
        if before_seq is not None:
            n = int(np.searchsorted(entry.seqs, before_seq, side="left"))
        if n == 0:
            return []
        q = word_columns(np, np.frombuffer(sign_code(query), dtype=np.uint8).reshape(1, -1))
        distances = hamming(np, entry.codes[:, :n], q[:, 0])
        nearest = closest(np, distances, min(candidates, n))
        seqs = sorted(int(s) for s in entry.seqs[nearest])
        rows = quantized_rows(conn, sid, embedder_id, seqs)
        if not rows:
            return []
        matrix = np.frombuffer(b"".join(bytes(r[2]) for r in rows), dtype=np.int8)
        matrix = matrix.reshape(len(rows), -1).astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0] = 1.0
        with one_blas_thread():
            cosine = (matrix @ np.asarray(query, dtype=np.float32)) / norms
        order = np.argsort(-cosine, kind="stable")[:k]
        return [DenseHit(int(rows[i][0]), int(rows[i][1]), float(1.0 - cosine[i])) for i in order]


def _rescore_statement(dialect: str) -> Any:
    """(seq, doc_id, int8 vector) of a list of a session's events (see ``rows_by_seqs``)."""
    return rows_by_seqs(
        dialect,
        search_codes,
        ("seq", "doc_id", "quantized"),
        search_codes.c.sid == bindparam("sid"),
        search_codes.c.embedder_id == bindparam("embedder_id"),
    )
