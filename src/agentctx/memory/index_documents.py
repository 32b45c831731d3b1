"""The memory index's documents: written, read back and deleted inside a caller's
transaction.

A memory's document is one row of ``memory_docs`` (its digest, to skip unchanged
memories), its terms in ``memory_fts`` (prefixed with the user's partition number) and
its vector in ``memory_vec_<embedder_id>``. On PostgreSQL the per-user document
frequencies (``memory_fts_df``) are kept with them (:mod:`agentctx.memory.index_terms`).
:class:`~agentctx.memory.index.MemoryIndex` prepares documents outside any
transaction and writes them with these.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, text

from agentctx.memory import index_dense, index_terms
from agentctx.memory.index_tables import DOCS_TABLE, LEXICAL_TABLE
from agentctx.retrieval.lexical import prefixed


@dataclass(frozen=True, slots=True)
class PreparedDocument:
    """A memory analysed (and embedded) outside any transaction, ready to write."""

    memory_id: str
    user_id: str
    uid: int
    digest: str
    terms: list[str]
    vector: list[float] | None


def indexed_digests(
    conn: Connection, memory_ids: Sequence[str], embedder_id: int | None
) -> dict[str, str]:
    """memory_id -> digest of what is indexed (only complete documents: with their
    vector when vectors are kept)."""
    if not memory_ids:
        return {}
    rows = conn.execute(
        text(
            f"SELECT memory_id, doc_id, digest FROM {DOCS_TABLE} WHERE memory_id IN :ids"
        ).bindparams(bindparam("ids", expanding=True)),
        {"ids": list(memory_ids)},
    ).all()
    if embedder_id is None or not rows:
        return {row[0]: row[2] for row in rows}
    present = index_dense.vectors_of(conn, embedder_id, [int(row[1]) for row in rows])
    return {row[0]: row[2] for row in rows if int(row[1]) in present}


def write_documents(
    conn: Connection, documents: Sequence[PreparedDocument], embedder_id: int | None
) -> None:
    """Write prepared documents inside the caller's write transaction (replacing any
    earlier document of the same memory). The memories must exist in that
    transaction. ``embedder_id``: where vectors go (None: none are kept)."""
    if not documents:
        return
    ids = [d.memory_id for d in documents]
    if conn.dialect.name == "postgresql":
        # Two writers indexing one memory (two sessions' extractions merged into it)
        # take turns on its row, so the second replaces the first's document rather
        # than colliding with it. Sorted: no lock-order deadlock. (SQLite's writer
        # lock already serializes them.)
        conn.execute(
            text(
                "SELECT memory_id FROM memories WHERE memory_id IN :ids "
                "ORDER BY memory_id FOR UPDATE"
            ).bindparams(bindparam("ids", expanding=True)),
            {"ids": sorted(set(ids))},
        )
    counts = delete_documents(conn, ids)
    conn.execute(
        text(
            f"INSERT INTO {DOCS_TABLE} (memory_id, user_id, uid, digest) VALUES (:m, :u, :uid, :d)"
        ),
        [{"m": d.memory_id, "u": d.user_id, "uid": d.uid, "d": d.digest} for d in documents],
    )
    doc_ids: dict[str, int] = dict(
        conn.execute(
            text(f"SELECT memory_id, doc_id FROM {DOCS_TABLE} WHERE memory_id IN :ids").bindparams(
                bindparam("ids", expanding=True)
            ),
            {"ids": ids},
        ).all()
    )
    # A memory without an indexable word ("!!!", emoji) has no lexical row; an empty
    # executemany would run the statement once without parameters.
    with_terms = [d for d in documents if d.terms]
    if conn.dialect.name == "sqlite" and with_terms:
        conn.exec_driver_sql(
            f"INSERT INTO {LEXICAL_TABLE} (rowid, terms) VALUES (?, ?)",
            [
                (doc_ids[d.memory_id], " ".join(prefixed(d.uid, t) for t in d.terms))
                for d in with_terms
            ],
        )
    elif with_terms:
        conn.execute(
            text(
                f"INSERT INTO {LEXICAL_TABLE} (doc_id, terms) "
                "VALUES (:d, array_to_tsvector(CAST(:t AS text[])))"
            ),
            [
                {
                    "d": doc_ids[d.memory_id],
                    "t": list(dict.fromkeys(prefixed(d.uid, t) for t in d.terms)),
                }
                for d in with_terms
            ],
        )
    if conn.dialect.name == "postgresql":
        for d in with_terms:
            counts.update((d.uid, term) for term in set(d.terms))
        index_terms.apply_counts(conn, counts)
    if embedder_id is not None:
        by_user: dict[int, list[tuple[int, Sequence[float]]]] = {}
        for d in documents:
            if d.vector is not None:
                by_user.setdefault(d.uid, []).append((doc_ids[d.memory_id], d.vector))
        for uid, items in by_user.items():
            index_dense.insert_vectors(conn, embedder_id, uid, items)


def delete_documents(conn: Connection, memory_ids: Sequence[str]) -> Counter[tuple[int, str]]:
    """Delete the memories' documents; on PostgreSQL the term counts to take off
    (negative), for the caller to apply with its own in one statement."""
    counts: Counter[tuple[int, str]] = Counter()
    if not memory_ids:
        return counts
    if conn.dialect.name == "postgresql":
        counts.subtract(index_terms.indexed_terms(conn, memory_ids))
    statement = text(f"DELETE FROM {DOCS_TABLE} WHERE memory_id IN :ids").bindparams(
        bindparam("ids", expanding=True)
    )
    conn.execute(statement, {"ids": list(memory_ids)})
    return counts


def remove_documents(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Delete the memories' documents, and on PostgreSQL take their terms off the counts."""
    counts = delete_documents(conn, memory_ids)
    if conn.dialect.name == "postgresql":
        index_terms.apply_counts(conn, counts)
