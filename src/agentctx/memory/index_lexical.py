"""The lexical half of memory search, and the filters every ranking passes through.

:class:`LexicalRanking` ranks a user's documents by their terms (FTS5's bm25 on
SQLite, ``ts_rank`` on PostgreSQL) within a postings budget: query terms are taken
rarest first until the next would pass it (scoring is per matching document, and a
term in a tenth of a user's memories adds little to the ranking but thousands of
documents to score). On PostgreSQL, when even the rarest term is over the budget,
only the user's newest documents are ranked, by all the terms.

:func:`passing` keeps the documents (of the dense ranking) that pass the search's
filters; :func:`candidate_rows` reads what both rankings give the scoring.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection

from agentctx.memory import index_terms
from agentctx.memory.index_rows import bound, utc
from agentctx.memory.index_tables import DOCS_TABLE, LEXICAL_TABLE
from agentctx.retrieval.lexical import choose_terms, prefixed

COLUMNS = "d.doc_id, d.memory_id, m.confidence, m.updated_at"
"""What :func:`candidate_rows` reads of a document (``d``) and its memory (``m``)."""


@dataclass(frozen=True, slots=True)
class Candidate:
    """A document a ranking found: its memory and what scoring needs of it."""

    doc_id: int
    memory_id: str
    confidence: float
    updated_at: datetime


def candidate_rows(conn: Connection, sql: str, params: dict[str, Any]) -> list[Candidate]:
    """The candidates ``sql`` selects (:data:`COLUMNS` first)."""
    rows = conn.execute(bound(sql, params), params).all()
    return [Candidate(int(r[0]), str(r[1]), float(r[2]), utc(r[3])) for r in rows]


def passing(
    conn: Connection, doc_ids: Sequence[int], where: str, params: dict[str, Any]
) -> list[Candidate]:
    """The given documents that pass the filters, in the given order."""
    if not doc_ids:
        return []
    # CROSS JOIN makes SQLite read the few documents first (it would otherwise scan
    # the user's memories by the (user_id, status, kind) index).
    join = "CROSS JOIN" if conn.dialect.name == "sqlite" else "JOIN"
    sql = (
        f"SELECT {COLUMNS} FROM {DOCS_TABLE} AS d "
        f"{join} memories AS m ON m.memory_id = d.memory_id "
        f"WHERE d.doc_id IN :docs AND {where}"
    )
    found = {c.doc_id: c for c in candidate_rows(conn, sql, {**params, "docs": list(doc_ids)})}
    return [found[doc] for doc in doc_ids if doc in found]


class LexicalRanking:
    """Full-text ranking of one user's documents within ``max_postings`` (see the module
    docstring). Thread-safe; the index shares one."""

    def __init__(self, max_postings: int, recent_window: int) -> None:
        self.max_postings = max_postings
        self.recent_window = recent_window
        self._recent = index_terms.RecentBounds()

    def candidates(
        self,
        conn: Connection,
        uid: int,
        *,
        terms: Sequence[str],
        where: str,
        params: dict[str, Any],
        depth: int,
        state: index_terms.SearchState | None = None,
    ) -> list[Candidate]:
        """The best ``depth`` documents of user partition ``uid`` for ``terms`` that pass
        the filters (``where`` with ``params``), best first. ``state``: the terms'
        frequencies and the newest doc_id, when the search read them already."""
        if not terms:
            return []
        sqlite = conn.dialect.name == "sqlite"
        terms, floor = self._budget(conn, uid, list(dict.fromkeys(terms)), state)
        if not terms:
            return []
        if sqlite:
            match = f"{LEXICAL_TABLE} MATCH :q"
            score = f"-bm25({LEXICAL_TABLE})"
            key = "rowid"
            query = " OR ".join('"' + prefixed(uid, t).replace('"', '""') + '"' for t in terms)
        else:
            match = "terms @@ CAST(:q AS tsquery)"
            if floor is not None:
                # A literal, so the planner sees how few rows the range holds and reads
                # them by the primary key rather than every posting from the GIN index.
                match += f" AND doc_id >= {int(floor)}"
            score = "ts_rank(terms, CAST(:q AS tsquery))"
            key = "doc_id"
            query = " | ".join(
                "'" + prefixed(uid, t).replace("\\", "\\\\").replace("'", "''") + "'" for t in terms
            )
        # CROSS JOIN fixes SQLite's join order: ranked documents first.
        join = "CROSS JOIN" if sqlite else "JOIN"

        def ranked(pool: str) -> list[Candidate]:
            sql = (
                f"SELECT {COLUMNS}, s.score FROM (SELECT {key} AS doc_id, {score} AS score "
                f"FROM {LEXICAL_TABLE} WHERE {match} ORDER BY score DESC{pool}) AS s "
                f"{join} {DOCS_TABLE} AS d ON d.doc_id = s.doc_id "
                f"{join} memories AS m ON m.memory_id = d.memory_id "
                f"WHERE {where} ORDER BY s.score DESC, d.doc_id DESC LIMIT :depth"
            )
            return candidate_rows(
                conn, sql, {**params, "q": query, "depth": depth, "pool": pool_size}
            )

        # Rank in the full-text table alone (joining every match costs ~5 µs a row), then
        # filter the best few; only when too few of those pass, filter every match.
        pool_size = depth * 4
        found = ranked(" LIMIT :pool")
        return found if len(found) >= depth else ranked("")

    def _budget(
        self,
        conn: Connection,
        uid: int,
        terms: list[str],
        state: index_terms.SearchState | None = None,
    ) -> tuple[list[str], int | None]:
        """The query terms to look up within the postings budget, rarest first, and on
        PostgreSQL the doc_id from which to rank when every term is over it (None: all
        documents). ``state``: frequencies and newest doc_id already read."""
        budget = self.max_postings
        if conn.dialect.name == "sqlite" and len(terms) < 2:
            return terms, None
        known = state.frequencies if state is not None else None
        if known is not None and all(term in known for term in terms):
            frequencies = {term: known[term] for term in terms}
        else:
            frequencies = index_terms.document_frequencies(conn, uid, terms)
        if conn.dialect.name == "sqlite":
            return choose_terms(frequencies, budget)[0] or terms, None
        if sum(frequencies.values()) <= budget:
            return terms, None
        chosen, recent_only = choose_terms(frequencies, budget)
        if not recent_only:
            return chosen, None
        # Every term is common: rank the newest documents by all the terms instead (the
        # cost is the window's rows). A user with no more documents than the window
        # (counts left high by a purge) is ranked whole, which is as cheap.
        newest = state.newest if state is not None else None
        floor = self._recent.bound(conn, uid, self.recent_window, newest=newest)
        present = [term for term in terms if frequencies[term] > 0]
        return present, floor
