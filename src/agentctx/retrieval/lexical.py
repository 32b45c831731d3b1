"""Lexical search: BM25 over the index terms of one session.

Every term is stored prefixed with the session's number (``<sid>x<term>``), in
FTS5 on SQLite and in a GIN-indexed ``tsvector`` on PostgreSQL. A query's terms
carry the same prefix, so a lookup reads only that session's postings, however
many other sessions share the index: the prefix partitions the inverted index.

Ranking is BM25 from the session's own statistics, the same on both databases: per-
session document frequencies (``search_terms``), the session's document count and mean
length in distinct terms, and term presence in place of term frequency: ``Σ idf(t) ·
(k1 + 1) / (1 + k1 · (1 - b + b · len / avglen))``. (FTS5's ``bm25()`` is not used:
it takes the document count and mean length from the whole table, every session.)

The cost of a lookup grows with the number of postings it reads, so query terms
are taken rarest first within a postings budget; the commonest terms of a large
session (which BM25 weighs least) are left out. When even the rarest term is over
budget, only the most recent documents that fit it are searched.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, String, bindparam, func, select, text

from agentctx import jsonvalue
from agentctx.retrieval.tables import LEXICAL_TABLE
from agentctx.storage import fastsql
from agentctx.storage.schema import search_docs, search_terms
from agentctx.storage.where import rows_in_list, text_list_value

K1 = 1.2
B = 0.75


def prefixed(sid: int, term: str) -> str:
    """A term as stored for session ``sid``."""
    return f"{sid}x{term}"


@dataclass(frozen=True, slots=True)
class Document:
    """One event's terms, ready to index."""

    seq: int
    terms: list[str]


@dataclass(frozen=True, slots=True)
class LexicalHit:
    """A document matching a query, with its BM25 score (higher is better)."""

    seq: int
    doc_id: int
    score: float


@dataclass(frozen=True, slots=True)
class SessionStats:
    """What BM25 needs to know of a session's index: its number, documents and terms."""

    sid: int
    doc_count: int
    term_count: int


@dataclass(frozen=True, slots=True)
class PreparedDocuments:
    """Documents of one session in the form their rows take (:func:`prepare_documents`).

    Made before the write transaction: on SQLite the writer is one for the whole
    database, and the agent's next append waits for whoever holds it, so the
    transaction only stores."""

    sid: int
    seqs: list[int]
    term_counts: list[int]  # distinct terms per document (its BM25 length)
    stored: list[Any]  # per document: its prefixed terms (SQLite: one text; PostgreSQL: a list)
    frequencies: dict[str, int]  # term -> documents holding it
    distinct_total: int


def prepare_documents(sid: int, documents: Sequence[Document], dialect: str) -> PreparedDocuments:
    """The rows of ``documents`` (seq order, all new) for session ``sid`` on ``dialect``."""
    documents = [d for d in documents if d.terms]
    seqs: list[int] = []
    term_counts: list[int] = []
    stored: list[Any] = []
    frequencies: dict[str, int] = {}
    postgres = dialect == "postgresql"
    for document in documents:
        distinct = list(dict.fromkeys(document.terms))
        seqs.append(document.seq)
        term_counts.append(len(distinct))
        for term in distinct:
            frequencies[term] = frequencies.get(term, 0) + 1
        if postgres:
            stored.append([prefixed(sid, t) for t in distinct])
        else:
            stored.append(" ".join(prefixed(sid, t) for t in document.terms))
    return PreparedDocuments(sid, seqs, term_counts, stored, frequencies, sum(term_counts))


def insert_prepared(conn: Connection, prepared: PreparedDocuments) -> tuple[int, int]:
    """Store documents prepared by :func:`prepare_documents`; returns (documents,
    distinct terms summed)."""
    if not prepared.seqs:
        return 0, 0
    sid = prepared.sid
    conn.execute(
        search_docs.insert(),
        [
            {"sid": sid, "seq": seq, "term_count": count}
            for seq, count in zip(prepared.seqs, prepared.term_counts, strict=True)
        ],
    )
    ids = dict(
        conn.execute(
            select(search_docs.c.seq, search_docs.c.doc_id).where(
                search_docs.c.sid == sid,
                search_docs.c.seq.between(prepared.seqs[0], prepared.seqs[-1]),
            )
        ).all()
    )
    frequencies = prepared.frequencies
    if conn.dialect.name == "postgresql":
        conn.execute(
            text(
                f"INSERT INTO {LEXICAL_TABLE} (doc_id, terms) "
                "VALUES (:d, array_to_tsvector(CAST(:t AS text[])))"
            ),
            [
                {"d": ids[seq], "t": terms}
                for seq, terms in zip(prepared.seqs, prepared.stored, strict=True)
            ],
        )
        conn.execute(
            text(
                "INSERT INTO search_terms (sid, term, df) "
                "SELECT :sid, t, d "
                "FROM unnest(CAST(:terms AS text[]), CAST(:dfs AS bigint[])) AS u(t, d) "
                "ON CONFLICT (sid, term) DO UPDATE SET df = search_terms.df + EXCLUDED.df"
            ),
            {"sid": sid, "terms": list(frequencies), "dfs": list(frequencies.values())},
        )
    else:
        # One statement each, whatever the number of rows, passed as JSON: the driver
        # releases the interpreter lock around every row of an executemany and takes it
        # back after, and while the agent's thread ran Python each of those thousands of
        # returns waited for it. The write (and the agent's append queued behind it for
        # SQLite's writer) took 17 ms at the median and 75 ms at most.
        conn.exec_driver_sql(
            f"INSERT INTO {LEXICAL_TABLE} (rowid, terms) "
            "SELECT json_extract(value, '$[0]'), json_extract(value, '$[1]') FROM json_each(?)",
            (
                jsonvalue.dumps(
                    [
                        [ids[seq], terms]
                        for seq, terms in zip(prepared.seqs, prepared.stored, strict=True)
                    ]
                ),
            ),
        )
        conn.exec_driver_sql(
            "INSERT INTO search_terms (sid, term, df) SELECT ?, key, value FROM json_each(?) "
            "WHERE true ON CONFLICT (sid, term) DO UPDATE SET df = search_terms.df + excluded.df",
            (sid, jsonvalue.dumps(frequencies)),
        )
    return len(prepared.seqs), prepared.distinct_total


def document_frequencies(conn: Connection, sid: int, terms: Sequence[str]) -> dict[str, int]:
    """How many of the session's documents hold each term (absent terms: not returned)."""
    if not terms:
        return {}
    dialect = conn.dialect.name
    # Read once a window: compiled once, for any number of terms (see storage.fastsql).
    found = fastsql.statement(conn, ("document_frequencies", dialect), lambda: _df_query(dialect))
    rows = found.fetch_values(conn, {"sid": sid, "terms": text_list_value(dialect, terms)})
    return {str(term): int(df) for term, df in rows}


def _df_query(dialect: str) -> Any:
    # One probe of the (sid, term) key per term on PostgreSQL (see rows_in_list).
    return rows_in_list(
        dialect,
        search_terms,
        ("term", "df"),
        ("term", "terms", String),
        search_terms.c.sid == bindparam("sid"),
    )


def choose_terms(frequencies: dict[str, int], max_postings: int) -> tuple[list[str], bool]:
    """The query terms worth looking up, rarest first, within ``max_postings``.

    Returns (terms, recent_only): ``recent_only`` when even the rarest term has more
    postings than the budget, so only the newest documents can be scored.
    """
    ranked = sorted((df, term) for term, df in frequencies.items() if df > 0)
    if not ranked:
        return [], False
    chosen: list[str] = []
    total = 0
    for df, term in ranked:
        if chosen and total + df > max_postings:
            break
        chosen.append(term)
        total += df
    return chosen, total > max_postings


def _tsquery(term: str) -> str:
    return "'" + term.replace("\\", "\\\\").replace("'", "''") + "'"


def _sqlite_query(bound_terms: int, bounds: str) -> str:
    """The scoring query over the ``bound_terms`` terms :func:`_bind_terms` bound."""
    # Not FTS5's bm25(): it takes the number of documents and their mean length from the
    # whole table, every session of every user, so a session's ranking would move as
    # others are added or deleted. Each term's postings are read on their own (the
    # prefix keeps them to this session) and weighted by the session's statistics.
    postings = [
        f"SELECT f.rowid AS doc_id, :w{i} AS w FROM {LEXICAL_TABLE} AS f "
        f"WHERE {LEXICAL_TABLE} MATCH :t{i}{bounds}"
        for i in range(bound_terms)
    ]
    return (
        f"SELECT m.doc_id AS doc_id, m.w * {K1 + 1} / "
        f"(1 + {K1} * (1 - {B} + {B} * COALESCE(l.term_count, :avg) / :avg)) AS score "
        f"FROM (SELECT doc_id, SUM(w) AS w FROM ({' UNION ALL '.join(postings)}) "
        "GROUP BY doc_id) AS m JOIN search_docs AS l ON l.doc_id = m.doc_id "
        "ORDER BY score DESC, m.doc_id DESC LIMIT :limit"
    )


def _bind_terms(
    sid: int,
    terms: Sequence[str],
    frequencies: dict[str, int],
    params: dict[str, Any],
    *,
    doc_count: int,
    term_count: int,
    quote: Callable[[str], str],
) -> None:
    """Bind each term (``t<i>``, quoted for the database's full-text query), its idf in
    the session (``w<i>``) and the session's mean document length (``avg``)."""
    for i, term in enumerate(terms):
        params[f"t{i}"] = quote(prefixed(sid, term))
        params[f"w{i}"] = _idf(doc_count, frequencies.get(term, 0))
    params["avg"] = _mean_length(doc_count, term_count)


def _fts_phrase(term: str) -> str:
    return '"' + term.replace('"', '""') + '"'


def _idf(doc_count: int, df: int) -> float:
    """BM25's inverse document frequency of a term in ``df`` of ``doc_count`` documents."""
    n = max(doc_count, 1)
    return math.log(1.0 + (n - df + 0.5) / (df + 0.5))


def _mean_length(doc_count: int, term_count: int) -> float:
    """The session's mean document length in distinct terms (at least 1)."""
    return max(term_count / max(doc_count, 1), 1.0)


def _postgres_query(bound_terms: int, bounds: str) -> str:
    """The scoring query over the ``bound_terms`` terms :func:`_bind_terms` bound (and
    ``q``, any of them)."""
    weights = [
        f"(CASE WHEN f.terms @@ CAST(:t{i} AS tsquery) THEN CAST(:w{i} AS float8) ELSE 0 END)"
        for i in range(bound_terms)
    ]
    return (
        f"SELECT f.doc_id AS doc_id, ({' + '.join(weights)}) * {K1 + 1} / "
        f"(1 + {K1} * (1 - {B} + {B} * length(f.terms) / CAST(:avg AS float8))) AS score "
        f"FROM {LEXICAL_TABLE} AS f WHERE f.terms @@ CAST(:q AS tsquery)"
        f"{bounds} ORDER BY score DESC, f.doc_id DESC LIMIT :limit"
    )


def search(
    conn: Connection,
    sid: int,
    terms: Sequence[str],
    frequencies: dict[str, int],
    *,
    doc_count: int,
    term_count: int,
    limit: int,
    min_doc_id: int | None,
    before_seq: int | None,
) -> list[LexicalHit]:
    """The best ``limit`` documents of session ``sid`` for ``terms``, best first.

    Only documents from ``min_doc_id`` on and with seq below ``before_seq`` are
    searched: documents of a session are numbered in seq order, so both are bounds on
    the document id, which the full-text lookup applies as it reads. Scoring reads the
    full-text table alone, since every matching row costs; seqs are joined to the
    winners only.
    """
    if not terms:
        return []
    params: dict[str, Any] = {"limit": limit, "lo": min_doc_id, "sid": sid, "before": before_seq}
    # FTS5 applies rowid bounds while it reads postings. PostgreSQL must not use them to
    # pick the primary key over the GIN index (it would filter every row of the table).
    column = "f.rowid" if conn.dialect.name == "sqlite" else "(f.doc_id + 0)"
    bounds = ""
    if min_doc_id is not None:
        bounds += f" AND {column} >= :lo"
    if before_seq is not None:
        # Below the first document at or after before_seq (found on the (sid, seq) index).
        bounds += (
            f" AND {column} < COALESCE((SELECT b.doc_id FROM search_docs AS b "
            "WHERE b.sid = :sid AND b.seq >= :before ORDER BY b.seq LIMIT 1), "
            "9223372036854775807)"
        )
    sqlite = conn.dialect.name == "sqlite"
    _bind_terms(
        sid,
        terms,
        frequencies,
        params,
        doc_count=doc_count,
        term_count=term_count,
        quote=_fts_phrase if sqlite else _tsquery,
    )
    if sqlite:
        sql = _sqlite_query(len(terms), bounds)
    else:
        params["q"] = " | ".join(params[f"t{i}"] for i in range(len(terms)))
        sql = _postgres_query(len(terms), bounds)
    query = (
        f"SELECT d.seq, s.doc_id, s.score FROM ({sql}) AS s "
        "JOIN search_docs AS d ON d.doc_id = s.doc_id ORDER BY s.score DESC, s.doc_id DESC"
    )
    # Compiled once per shape (number of terms, bounds): a window searches every time.
    found = fastsql.statement(conn, ("lexical_search", query), lambda: text(query))
    rows = found.fetch_values(conn, params)
    return [LexicalHit(int(seq), int(doc), float(score)) for seq, doc, score in rows]


def search_session(
    conn: Connection,
    stats: SessionStats,
    terms: Sequence[str],
    *,
    limit: int,
    before_seq: int | None,
    after_seq: int | None = None,
    max_postings: int,
) -> list[LexicalHit]:
    """The best ``limit`` documents of a session for ``terms`` by BM25, among the events
    with seqs between ``after_seq`` and ``before_seq`` (both left out), reading about
    ``max_postings`` postings at most (:func:`choose_terms`)."""
    if not terms or not stats.doc_count:
        return []
    sid = stats.sid
    min_doc = None
    if after_seq is not None:
        # Documents are numbered in seq order: a bound on seqs is one on doc ids.
        first = conn.execute(
            select(func.min(search_docs.c.doc_id)).where(
                search_docs.c.sid == sid, search_docs.c.seq > after_seq
            )
        ).scalar()
        if first is None:
            return []
        min_doc = int(first)
    frequencies = document_frequencies(conn, sid, terms)
    chosen, recent_only = choose_terms(frequencies, max_postings)
    if not chosen:
        return []
    if recent_only:
        # Even the rarest term is too common to score everywhere: score the newest
        # documents that hold about max_postings of its postings.
        window = max(1, stats.doc_count * max_postings // frequencies[chosen[0]])
        query = select(search_docs.c.doc_id).where(search_docs.c.sid == sid)
        if before_seq is not None:
            query = query.where(search_docs.c.seq < before_seq)
        found = conn.execute(
            query.order_by(search_docs.c.seq.desc()).offset(window - 1).limit(1)
        ).scalar()
        if found is not None:
            min_doc = max(min_doc or 0, int(found))
    return search(
        conn,
        sid,
        chosen,
        frequencies,
        doc_count=stats.doc_count,
        term_count=stats.term_count,
        limit=limit,
        min_doc_id=min_doc,
        before_seq=before_seq,
    )
