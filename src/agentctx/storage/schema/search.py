"""The retrieval index's bookkeeping tables (agentctx.retrieval)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKeyConstraint,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    String,
    Table,
    UniqueConstraint,
)

from agentctx.storage.schema.columns import ID, BigId, UTCDateTime, metadata, session_foreign_key

# The retrieval index (agentctx.retrieval). Its bookkeeping lives in these tables; the
# lexical and vector indexes themselves are derived tables the index creates on first use,
# because their form depends on the database (FTS5 and sqlite-vec, or tsvector and
# pgvector) and on the embedder's vector size: ``search_fts`` and ``search_vec_<id>``
# (see DERIVED_TABLE_PREFIXES). Everything hangs off ``search_sessions`` by ``sid`` with
# ON DELETE CASCADE, so deleting a session's ``search_sessions`` row removes every index
# row of the session, derived tables included (SQLite's virtual tables by a trigger).

search_sessions = Table(
    "search_sessions",
    metadata,
    Column("sid", BigId, primary_key=True, autoincrement=True),  # never reused
    Column("user_id", String(ID), nullable=False),
    Column("session_id", String(ID), nullable=False),
    Column("indexed_seq", BigInteger, nullable=False),  # every event up to it is indexed
    Column("doc_count", BigInteger, nullable=False),
    Column("term_count", BigInteger, nullable=False),  # distinct terms summed over documents
    Column("updated_at", UTCDateTime, nullable=False),
    UniqueConstraint("user_id", "session_id"),
    session_foreign_key(),
    sqlite_autoincrement=True,
)

search_docs = Table(
    "search_docs",
    metadata,
    Column("doc_id", BigId, primary_key=True, autoincrement=True),  # rowid of derived rows
    Column("sid", BigInteger, nullable=False),
    Column("seq", BigInteger, nullable=False),
    # Distinct terms of the document: its length for BM25 (null when indexed before 0014).
    Column("term_count", Integer, nullable=True),
    UniqueConstraint("sid", "seq"),
    ForeignKeyConstraint(["sid"], ["search_sessions.sid"], ondelete="CASCADE"),
    sqlite_autoincrement=True,
)

search_terms = Table(
    "search_terms",
    metadata,
    Column("sid", BigInteger, nullable=False),
    Column("term", String(64), nullable=False),
    Column("df", BigInteger, nullable=False),  # documents of the session holding the term
    PrimaryKeyConstraint("sid", "term"),
    ForeignKeyConstraint(["sid"], ["search_sessions.sid"], ondelete="CASCADE"),
    sqlite_with_rowid=False,
)

search_embedders = Table(
    "search_embedders",
    metadata,
    Column("embedder_id", Integer, primary_key=True, autoincrement=True),
    Column("name", String(256), nullable=False),
    Column("dimensions", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    UniqueConstraint("name"),
)

search_dense = Table(
    "search_dense",
    metadata,
    Column("sid", BigInteger, nullable=False),
    Column("embedder_id", Integer, nullable=False),
    Column("embedded_seq", BigInteger, nullable=False),  # every document up to it has a vector
    Column("vector_count", BigInteger, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    PrimaryKeyConstraint("sid", "embedder_id"),
    ForeignKeyConstraint(["sid"], ["search_sessions.sid"], ondelete="CASCADE"),
    ForeignKeyConstraint(["embedder_id"], ["search_embedders.embedder_id"], ondelete="CASCADE"),
)

search_codes = Table(
    "search_codes",
    metadata,
    Column("sid", BigInteger, nullable=False),
    Column("embedder_id", Integer, nullable=False),
    Column("seq", BigInteger, nullable=False),
    Column("doc_id", BigInteger, nullable=False),
    Column("code", LargeBinary, nullable=False),  # the vector's sign bits: a fast first pass
    Column("quantized", LargeBinary, nullable=False),  # the vector as int8: the second pass
    PrimaryKeyConstraint("sid", "embedder_id", "seq"),
    ForeignKeyConstraint(["sid"], ["search_sessions.sid"], ondelete="CASCADE"),
    sqlite_with_rowid=False,
)
