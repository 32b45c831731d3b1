"""Dense side of the memory index: a user's memory vectors, stored and searched.

Vectors live in a plain table (SQLite, float32) or pgvector
(:mod:`agentctx.memory.index_tables`), indexed by the user. A user with few memories is
searched there exactly (sqlite-vec's ``vec_distance_cosine``, pgvector's ``<=>``). Both
exact searches read every vector of the user (about 1 µs a vector on sqlite-vec, 20 µs
on pgvector), too slow at 100k memories, so for a larger user :class:`CodeCache` keeps
the sign bits and an int8 copy of every vector in memory (the retrieval index's
scheme, see :mod:`agentctx.retrieval.dense`, with the int8 vectors in memory too:
384 bytes a memory): the closest few hundred by Hamming distance are ranked again
by their int8 cosine. On PostgreSQL the cache loads in chunks of pgvector's binary
form, and a large user's scan runs on a pool thread while the search's connection
waits for the lexical query (:func:`start_search`).
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from sqlalchemy import Connection, bindparam, text

from agentctx.cache.bounded import WeightedLru
from agentctx.memory.index_tables import vector_table
from agentctx.retrieval.blas import one_blas_thread
from agentctx.retrieval.codes import closest, hamming, sign_words
from agentctx.retrieval.dense import float32_bytes, pgvector_literal
from agentctx.retrieval.vector_cache import nearest_rows, unit_rows


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
            f'INSERT INTO "{table}" (doc_id, uid, embedding) VALUES (?, ?, ?)',
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
        # Of equal distances the newest first. Zero vectors, whose distance is undefined
        # (null), are not stored: only a zero query gives nulls, all of them.
        rows = conn.execute(
            text(
                f"SELECT doc_id, vec_distance_cosine(embedding, :q) AS distance "
                f'FROM "{table}" WHERE uid = :uid '
                "ORDER BY distance, doc_id DESC LIMIT :k"
            ),
            {"q": float32_bytes(query), "k": k, "uid": uid},
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
        sql = f'SELECT doc_id, embedding FROM "{table}" WHERE doc_id IN :ids'
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


class _Stamped(Protocol):
    @property
    def stamp(self) -> tuple[int, int]: ...

    @property
    def doc_ids(self) -> Any: ...


StampedT = TypeVar("StampedT", bound=_Stamped)


class _UserCache(Generic[StampedT]):
    """Base of the in-memory caches of a user's vectors (numpy needed): entries keyed by
    (uid, embedder_id), each checked against the user's (document count, newest doc_id)
    stamp: doc_ids are never reused and a changed memory gets a new one, so any index
    change moves the stamp and the entry is loaded again. At most ``max_vectors`` rows
    are held, least recently used users dropped first."""

    def __init__(self, max_vectors: int) -> None:
        self.max_vectors = max_vectors
        self._entries: WeightedLru[tuple[int, int], StampedT] = WeightedLru(
            max_vectors, weigh=lambda entry: len(entry.doc_ids)
        )
        self._np = _numpy()

    @property
    def enabled(self) -> bool:
        """Whether numpy is available and the cache may hold anything."""
        return self._np is not None and self.max_vectors > 0

    def __len__(self) -> int:
        """Rows held, of all users."""
        return self._entries.weight

    def held(self) -> list[tuple[int, int]]:
        """The (uid, embedder_id) of the partitions held, least recently used first."""
        return self._entries.keys()

    def drop(self, uid: int | None = None) -> None:
        """Forget partition ``uid`` (every partition when None)."""
        if uid is None:
            self._entries.clear()
        else:
            self._entries.discard(lambda key: key[0] == uid)

    def _fresh(self, key: tuple[int, int], stamp: tuple[int, int]) -> StampedT | None:
        entry = self._entries.get(key)
        return entry if entry is not None and entry.stamp == stamp else None


@dataclass(frozen=True, slots=True)
class _Floats:
    stamp: tuple[int, int]  # as _Codes'
    doc_ids: Any  # int64[n], ascending
    unit: Any  # float32[n, dimensions], rows of length 1 (zero rows stay zero)
    nonzero: Any  # bool[n]


class FloatCache(_UserCache[_Floats]):
    """The float vectors of users searched exactly, scaled to length 1, in memory (SQLite,
    numpy): a matrix product ranks a few thousand in well under a millisecond, where
    ``vec_distance_cosine`` over the table's rows takes about 1 µs a row. The ranking is
    :func:`exact_search`'s (up to float rounding, ties newest first)."""

    def __init__(self, max_vectors: int = 50_000) -> None:
        super().__init__(max_vectors)

    def search(
        self,
        conn: Connection,
        embedder_id: int,
        uid: int,
        stamp: tuple[int, int],
        query: Sequence[float],
        *,
        k: int,
    ) -> list[tuple[int, float]]:
        """The user's ``k`` nearest documents as (doc_id, cosine distance), nearest first."""
        np = self._np
        assert np is not None
        key = (uid, embedder_id)
        entry = self._fresh(key, stamp)
        if entry is None:
            rows = conn.execute(
                text(
                    f'SELECT doc_id, embedding FROM "{vector_table(embedder_id)}" '
                    "WHERE uid = :uid ORDER BY doc_id"
                ),
                {"uid": uid},
            ).all()
            doc_ids = np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows))
            unit, nonzero = unit_rows(np, [bytes(row[1]) for row in rows])
            entry = _Floats(stamp, doc_ids, unit, nonzero)
            self._entries.put(key, entry)
        order, distance = nearest_rows(np, entry.unit, entry.nonzero, entry.doc_ids, query, k=k)
        return list(zip(entry.doc_ids[order].tolist(), distance[order].tolist(), strict=True))


@dataclass(frozen=True, slots=True)
class _Codes:
    stamp: tuple[int, int]  # (documents, newest doc_id) of the user when loaded
    doc_ids: Any  # int64[n]
    codes: Any  # uint64[words, n]: sign bits, 64 dimensions a word, one row per word
    quantized: Any  # int8[n, dimensions]: each row scaled so its largest magnitude is 127


class CodeCache(_UserCache[_Codes]):
    """Sign codes of large users' memory vectors, in memory (needs numpy), stamped as
    :class:`_UserCache` says."""

    def __init__(self, max_vectors: int = 2_000_000) -> None:
        super().__init__(max_vectors)

    def entry(self, conn: Connection, embedder_id: int, uid: int, stamp: tuple[int, int]) -> _Codes:
        """The user's codes, loaded through ``conn`` unless cached with this stamp."""
        np = self._np
        assert np is not None
        key = (uid, embedder_id)
        entry = self._fresh(key, stamp)
        if entry is not None:
            return entry
        if conn.dialect.name == "sqlite":
            table = vector_table(embedder_id)
            rows = conn.execute(
                text(f'SELECT doc_id, embedding FROM "{table}" WHERE uid = :uid'), {"uid": uid}
            ).all()
            matrix = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.float32)
            doc_ids = np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows))
            matrix = matrix.reshape(len(rows), -1) if len(rows) else matrix.reshape(0, 8)
            fresh = _Codes(stamp, doc_ids, sign_words(np, matrix), _quantize(np, matrix))
        else:
            fresh = _load_pg(np, conn, embedder_id, uid, stamp)
        self._entries.put(key, fresh)
        return fresh

    def scan(
        self, entry: _Codes, query: Sequence[float], *, take: int, k: int
    ) -> list[tuple[int, float]]:
        """The ``take`` doc_ids of ``entry`` closest to the query by Hamming distance of
        sign codes, ranked by the cosine of their int8 vectors; the best ``k`` as (doc_id,
        cosine distance). numpy only, no database, so it can run on another thread while
        the caller's connection waits on a query."""
        np = self._np
        assert np is not None
        n = len(entry.doc_ids)
        if n == 0:
            return []
        distances = hamming(np, entry.codes, sign_words(np, np.asarray([query]))[:, 0])
        nearest = closest(np, distances, min(take, n))
        matrix = entry.quantized[nearest].astype(np.float32)
        norms = np.linalg.norm(matrix, axis=1)
        norms[norms == 0] = 1.0
        q_vector = np.asarray(query, dtype=np.float32)
        q_norm = float(np.linalg.norm(q_vector)) or 1.0
        with one_blas_thread():
            cosine = (matrix @ q_vector) / norms / q_norm
        order = np.argsort(-cosine, kind="stable")[:k]
        return [(int(entry.doc_ids[nearest[i]]), float(1.0 - cosine[i])) for i in order]


_LOAD_CHUNK = 20_000


def _quantize(np: Any, matrix: Any) -> Any:
    """int8 rows, each scaled so its largest magnitude is 127."""
    top = np.abs(matrix).max(axis=1, initial=0.0) if len(matrix) else np.zeros(0)
    scale = np.divide(127.0, top, out=np.zeros_like(top), where=top > 0)
    return np.round(matrix * scale[:, None]).astype(np.int8)


def _load_pg(
    np: Any, conn: Connection, embedder_id: int, uid: int, stamp: tuple[int, int]
) -> _Codes:
    """A user's codes from pgvector, :data:`_LOAD_CHUNK` vectors at a time, in doc_id
    order. Read in pgvector's binary form (``vector_send``: a 4-byte header, then
    big-endian float32s) and decoded by numpy: as ``real[]`` each value became a Python
    float, over 10 GB and minutes at a million vectors; this way a chunk at a time."""
    table = vector_table(embedder_id)
    statement = text(
        f'SELECT doc_id, vector_send(embedding) FROM "{table}" '
        "WHERE uid = :uid AND doc_id > :after ORDER BY doc_id LIMIT :n"
    )
    ids: list[Any] = []
    words: list[Any] = []
    quantized: list[Any] = []
    after = -1
    while True:
        rows = conn.execute(statement, {"uid": uid, "after": after, "n": _LOAD_CHUNK}).all()
        if not rows:
            break
        raw = np.frombuffer(b"".join(bytes(r[1]) for r in rows), dtype=np.uint8)
        matrix = raw.reshape(len(rows), -1)[:, 4:].copy().view(">f4").astype(np.float32)
        ids.append(np.fromiter((r[0] for r in rows), dtype=np.int64, count=len(rows)))
        words.append(sign_words(np, matrix))
        quantized.append(_quantize(np, matrix))
        after = int(rows[-1][0])
        if len(rows) < _LOAD_CHUNK:
            break
    if not ids:
        empty = np.zeros((0, 8), dtype=np.float32)
        return _Codes(
            stamp, np.zeros(0, dtype=np.int64), sign_words(np, empty), _quantize(np, empty)
        )
    return _Codes(
        stamp,
        np.concatenate(ids),
        np.ascontiguousarray(np.concatenate(words, axis=1)),
        np.concatenate(quantized),
    )


BACKGROUND_SCAN_MIN = 300_000
"""The fewest codes scanned on a pool thread: a smaller scan (about 1 ms a 100k codes)
gains less from overlapping the lexical query than the two threads lose taking turns
with the interpreter lock (measured at 100k: slower in the background)."""

_SCANNER: ThreadPoolExecutor | None = None
_SCANNER_LOCK = threading.Lock()


def _scanner() -> ThreadPoolExecutor:
    """The threads that run code scans, shared by the process's indexes. A scan waits on
    nothing (no lock, no connection), so a busy pool only queues; it never deadlocks."""
    global _SCANNER  # noqa: PLW0603 - one pool per process, made on first use
    with _SCANNER_LOCK:
        if _SCANNER is None:
            _SCANNER = ThreadPoolExecutor(
                max_workers=max(2, os.cpu_count() or 2), thread_name_prefix="agentctx-memscan"
            )
        return _SCANNER


def start_search(
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
    background: bool = True,
    floats: FloatCache | None = None,
) -> Callable[[], list[tuple[int, float]]]:
    """The user's ``k`` nearest documents as (doc_id, cosine distance), nearest first,
    started: returns a function that waits for them. Exact for a user with at most
    ``exact_limit`` documents (on SQLite in memory, with ``floats``), else the sign-code
    first pass over ``max(rescore, k)`` candidates ranked by their int8 cosine
    (:meth:`CodeCache.scan`).

    Whatever needs ``conn`` (the exact search of a small user, loading a stale code
    entry) is done before this returns. With ``background`` a scan of at least
    :data:`BACKGROUND_SCAN_MIN` codes then runs on a pool thread, so the caller can use
    ``conn`` meanwhile (the lexical query, which waits on the database server while the
    scan keeps a core busy). The result is the same either way; an exception in the
    scan is raised by the returned function."""
    if stamp[0] <= exact_limit or not cache.enabled:
        if floats is not None and floats.enabled and conn.dialect.name == "sqlite":
            exact = floats.search(conn, embedder_id, uid, stamp, query, k=k)
        else:
            exact = exact_search(conn, embedder_id, uid, query, k=k)
        return lambda: exact
    entry = cache.entry(conn, embedder_id, uid, stamp)
    take = max(rescore, k)
    if not background or len(entry.doc_ids) < BACKGROUND_SCAN_MIN:
        found = cache.scan(entry, query, take=take, k=k)
        return lambda: found
    return _scanner().submit(cache.scan, entry, query, take=take, k=k).result
