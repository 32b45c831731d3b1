"""Per-user document frequencies of the memory index's terms (kept on PostgreSQL).

``memory_fts_df (uid, term, df)`` counts, for each user partition (see
:func:`~agentctx.memory.index_tables.user_partition`), the documents holding each
(unprefixed) term. :class:`~agentctx.memory.index.MemoryIndex` keeps it with the
documents: every write or removal applies the net change of its documents' terms in
one statement, terms sorted, so concurrent writers lock the shared rows in one order
and never deadlock. It is created (and filled from the documents already indexed)
on first use, like the other derived tables, so it needs no migration.

Search reads it to keep the lexical query within a postings budget, rarest terms
first (SQLite reads the same counts from an fts5vocab view). Deleting memories by
cascade (purging expired memories) bypasses the index and leaves counts too high: a
term then looks commoner than it is, which can only make the budget bite early (and
a user with no more documents than the recent window is ranked whole anyway). When
a user's last document goes, a trigger deletes the user's counts (they hold words
of the memories).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, text

from agentctx.cache.bounded import Lru
from agentctx.memory.index_tables import DOCS_TABLE, LEXICAL_TABLE, TERMS_TABLE, VOCAB_TABLE
from agentctx.retrieval.lexical import prefixed


def indexed_terms(conn: Connection, memory_ids: Sequence[str]) -> Counter[tuple[int, str]]:
    """(uid, term) -> how many of these memories' current documents hold the term."""
    counts: Counter[tuple[int, str]] = Counter()
    if not memory_ids:
        return counts
    rows = conn.execute(
        text(
            f"SELECT d.uid, tsvector_to_array(f.terms) FROM {DOCS_TABLE} AS d "
            f"JOIN {LEXICAL_TABLE} AS f ON f.doc_id = d.doc_id WHERE d.memory_id IN :ids"
        ).bindparams(bindparam("ids", expanding=True)),
        {"ids": list(memory_ids)},
    ).all()
    for uid, terms in rows:
        prefix = len(str(uid)) + 1
        counts.update((int(uid), term[prefix:]) for term in terms)
    return counts


def apply_counts(conn: Connection, deltas: Counter[tuple[int, str]]) -> None:
    """Add the (uid, term) -> change counts, in one statement, sorted."""
    changed = sorted((key, n) for key, n in deltas.items() if n)
    if not changed:
        return
    conn.execute(
        text(
            f"INSERT INTO {TERMS_TABLE} (uid, term, df) "
            "SELECT u, t, n FROM unnest(CAST(:uids AS bigint[]), CAST(:terms AS text[]), "
            "CAST(:dfs AS bigint[])) AS x(u, t, n) "
            f"ON CONFLICT (uid, term) DO UPDATE SET df = {TERMS_TABLE}.df + EXCLUDED.df"
        ),
        {
            "uids": [uid for (uid, _), _ in changed],
            "terms": [term for (_, term), _ in changed],
            "dfs": [n for _, n in changed],
        },
    )
    gone = [key for key, n in changed if n < 0]
    if gone:  # rows this transaction already locked: no new lock order
        conn.execute(
            text(
                f"DELETE FROM {TERMS_TABLE} AS c USING unnest(CAST(:uids AS bigint[]), "
                "CAST(:terms AS text[])) AS x(u, t) "
                "WHERE c.uid = x.u AND c.term = x.t AND c.df <= 0"
            ),
            {"uids": [uid for uid, _ in gone], "terms": [term for _, term in gone]},
        )


def document_frequencies(conn: Connection, uid: int, terms: Iterable[str]) -> dict[str, int]:
    """How many of the user's documents hold each term (0 for an unknown term): from
    the counts table on PostgreSQL, from the fts5vocab view on SQLite."""
    wanted = list(dict.fromkeys(terms))
    if not wanted:
        return {}
    if conn.dialect.name == "sqlite":
        return {
            term: int(
                conn.exec_driver_sql(
                    f"SELECT doc FROM {VOCAB_TABLE} WHERE term = ?", (prefixed(uid, term),)
                ).scalar()
                or 0
            )
            for term in wanted
        }
    rows = conn.execute(
        text(f"SELECT term, df FROM {TERMS_TABLE} WHERE uid = :u AND term IN :terms").bindparams(
            bindparam("terms", expanding=True)
        ),
        {"u": uid, "terms": wanted},
    ).all()
    found = {str(term): int(df) for term, df in rows}
    return {term: found.get(term, 0) for term in wanted}


def recent_bound(conn: Connection, uid: int, window: int) -> int | None:
    """The doc_id from which the user's newest ``window`` documents start; None when
    the user has no more than ``window`` (an index-only scan of ``(uid, doc_id)``)."""
    value = conn.execute(
        text(
            f"SELECT doc_id FROM {DOCS_TABLE} WHERE uid = :u ORDER BY doc_id DESC OFFSET :w LIMIT 1"
        ),
        {"u": uid, "w": window},
    ).scalar()
    return None if value is None else int(value) + 1


class RecentBounds:
    """:func:`recent_bound` per user, cached until the user's newest doc_id moves.

    doc_ids are never reused and a changed memory gets a new one, so an unchanged
    newest doc_id means no document was added; a removal only leaves the window a
    little smaller until the next write. Thread-safe; at most ``size`` users kept.
    """

    def __init__(self, size: int = 1024) -> None:
        self.size = size
        # (uid, window) -> (the newest doc_id then, the bound)
        self._entries: Lru[tuple[int, int], tuple[int, int | None]] = Lru(size)

    def bound(
        self, conn: Connection, uid: int, window: int, *, newest: int | None = None
    ) -> int | None:
        """The cached or fresh :func:`recent_bound`; ``newest`` is the user's newest
        doc_id when the caller has read it already (:func:`search_state`)."""
        if newest is None:
            newest = conn.execute(
                text(f"SELECT max(doc_id) FROM {DOCS_TABLE} WHERE uid = :u"), {"u": uid}
            ).scalar()
        key = (uid, window)
        entry = self._entries.get(key)
        if entry is not None and entry[0] == newest:
            return entry[1]
        value = recent_bound(conn, uid, window)
        self._entries.put(key, (int(newest or 0), value))
        return value


@dataclass(frozen=True, slots=True)
class SearchState:
    """What a search reads of a user before ranking."""

    documents: int
    """The user's documents, counted up to the limit asked + 1."""
    newest: int
    """The user's newest doc_id (0: none); with ``documents``, the code cache's stamp."""
    frequencies: dict[str, int] | None
    """Document frequencies of the query terms (PostgreSQL; None on SQLite, whose
    fts5vocab view is read only when the budget needs it)."""

    def stamp(self) -> tuple[int, int]:
        """(documents, newest doc_id): the code cache's check that its entry is current."""
        return self.documents, self.newest


def search_state(conn: Connection, uid: int, terms: Sequence[str], limit: int) -> SearchState:
    """The user's document count (up to ``limit + 1``), newest doc_id and, on
    PostgreSQL, the terms' document frequencies: one statement there (each round trip
    to the server costs as much as the lookups themselves)."""
    if conn.dialect.name == "sqlite":
        count = conn.execute(
            text(f"SELECT count(*) FROM (SELECT 1 FROM {DOCS_TABLE} WHERE uid = :u LIMIT :n) AS x"),
            {"u": uid, "n": limit + 1},
        ).scalar_one()
        newest = conn.execute(
            text(f"SELECT max(doc_id) FROM {DOCS_TABLE} WHERE uid = :u"), {"u": uid}
        ).scalar()
        return SearchState(int(count), int(newest or 0), None)
    wanted = list(dict.fromkeys(terms))
    row = conn.execute(
        text(
            f"SELECT (SELECT count(*) FROM (SELECT 1 FROM {DOCS_TABLE} WHERE uid = :u "
            "LIMIT :n) AS x), "
            f"(SELECT max(doc_id) FROM {DOCS_TABLE} WHERE uid = :u), "
            f"(SELECT json_object_agg(term, df) FROM {TERMS_TABLE} "
            "WHERE uid = :u AND term = ANY(CAST(:terms AS text[])))"
        ),
        {"u": uid, "n": limit + 1, "terms": wanted},
    ).one()
    found = row[2] or {}
    return SearchState(
        int(row[0]), int(row[1] or 0), {term: int(found.get(term, 0)) for term in wanted}
    )
