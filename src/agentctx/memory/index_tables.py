"""The derived tables of the memory index: created on first use, per database kind.

Both databases
    ``memory_fts_docs``: one row per indexed memory: ``doc_id`` (an integer that is
    never reused, so a changed memory gets a new one), ``memory_id`` (unique, references
    ``memories`` ON DELETE CASCADE), ``user_id``, ``uid`` (the user's partition number,
    see :func:`user_partition`) and ``digest`` (of the indexed text, so re-indexing an
    unchanged memory does nothing). Indexed by ``(uid, doc_id)``.
SQLite
    ``memory_fts``: FTS5 over the terms, each prefixed with the user's partition number
    (rowid = ``doc_id``). ``memory_vec_<embedder_id>``: ``(doc_id INTEGER PRIMARY KEY,
    uid, embedding BLOB)``, float32, indexed by ``uid``, referencing ``memory_fts_docs``
    ON DELETE CASCADE (a ``vec0`` table of earlier releases, which took 1.5 MB a user
    however few memories they had, is converted on first use: see
    :func:`agentctx.retrieval.tables.ensure_sqlite_vectors`). A trigger on
    ``memory_fts_docs`` deletes a document's terms from ``memory_fts``, so deleting a
    memory (or a user's memories) cleans every derived table.
PostgreSQL
    ``memory_fts``: ``(doc_id, terms tsvector)`` with a GIN index.
    ``memory_vec_<embedder_id>``: ``(doc_id, uid, embedding vector(n))`` (pgvector)
    indexed by ``uid``. Both reference ``memory_fts_docs`` ON DELETE CASCADE.
    ``memory_fts_df``: ``(uid, term, df)``, each user's document frequencies
    (kept by :mod:`agentctx.memory.index_terms`).

The names start with :data:`~agentctx.storage.schema.DERIVED_TABLE_PREFIXES`
(``memory_fts``, ``memory_vec_``), so schema comparisons skip them. Embedder ids come
from the retrieval index's ``search_embedders`` registry.
"""

from __future__ import annotations

import hashlib

from sqlalchemy import Connection, text

from agentctx.retrieval.tables import (
    ensure_pgvector,
    ensure_sqlite_vectors,
    refresh_cleanup_trigger,
    sqlite_vector_tables,
    table_exists,
)

DOCS_TABLE = "memory_fts_docs"
LEXICAL_TABLE = "memory_fts"
_TRIGGER = "memory_fts_docs_cleanup"
_DDL_LOCK = 0x61676374_6D656D78  # "agctmemx": serializes the memory index's DDL on PostgreSQL


def vector_table(embedder_id: int) -> str:
    """The memory vector table of an embedder."""
    return f"memory_vec_{int(embedder_id)}"


def user_partition(user_id: str) -> int:
    """The user's partition number: 63 bits of a hash of the id.

    It prefixes index terms and partitions vectors, so a lookup reads one user's
    postings and vectors only. Every search also checks ``memories.user_id``, so even a
    hash collision could never return another user's memory.
    """
    digest = hashlib.blake2b(user_id.encode(), digest_size=8, person=b"agentctx-mem").digest()
    return int.from_bytes(digest, "big") >> 1


def _lock_ddl(conn: Connection) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _DDL_LOCK})


def _refresh_sqlite_trigger(conn: Connection) -> None:
    refresh_cleanup_trigger(
        conn,
        trigger=_TRIGGER,
        docs_table=DOCS_TABLE,
        lexical_table=LEXICAL_TABLE,
        vector_prefix="memory_vec_",
    )


VOCAB_TABLE = "memory_fts_vocab"
"""SQLite: an fts5vocab view of the lexical table, giving each term's document count."""


def _ensure_vocab(conn: Connection) -> None:
    conn.exec_driver_sql(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS {VOCAB_TABLE} USING fts5vocab({LEXICAL_TABLE}, 'row')"
    )


TERMS_TABLE = "memory_fts_df"
"""PostgreSQL: each user's document frequencies (the GIN index owns "memory_fts_terms")."""


def _ensure_term_counts(conn: Connection) -> None:
    """PostgreSQL: create the term counts table if missing, filled from the documents
    already indexed (see :mod:`agentctx.memory.index_terms`)."""
    if table_exists(conn, TERMS_TABLE):
        return
    _lock_ddl(conn)
    if table_exists(conn, TERMS_TABLE):  # another process made it while we waited
        return
    conn.exec_driver_sql(
        f"CREATE TABLE {TERMS_TABLE} (uid BIGINT NOT NULL, term TEXT NOT NULL, "
        "df BIGINT NOT NULL, PRIMARY KEY (uid, term))"
    )
    # Counts hold the user's words: when a user's last document goes (purging the user
    # deletes memories, which cascades past the index), its counts go too.
    conn.exec_driver_sql(
        f"CREATE OR REPLACE FUNCTION {TERMS_TABLE}_cleanup() RETURNS trigger "
        "LANGUAGE plpgsql AS $$ BEGIN "
        f"DELETE FROM {TERMS_TABLE} AS c USING (SELECT DISTINCT uid FROM gone) AS g "
        "WHERE c.uid = g.uid "
        f"AND NOT EXISTS (SELECT 1 FROM {DOCS_TABLE} AS d WHERE d.uid = g.uid); "
        "RETURN NULL; END $$"
    )
    conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {TERMS_TABLE}_cleanup ON {DOCS_TABLE}")
    conn.exec_driver_sql(
        f"CREATE TRIGGER {TERMS_TABLE}_cleanup AFTER DELETE ON {DOCS_TABLE} "
        "REFERENCING OLD TABLE AS gone FOR EACH STATEMENT "
        f"EXECUTE FUNCTION {TERMS_TABLE}_cleanup()"
    )
    # Stored terms are "<uid>x<term>"; the count is per unprefixed term.
    conn.exec_driver_sql(
        f"INSERT INTO {TERMS_TABLE} (uid, term, df) "
        "SELECT d.uid, substr(t.term, length(CAST(d.uid AS text)) + 2), count(*) "
        f"FROM {DOCS_TABLE} AS d JOIN {LEXICAL_TABLE} AS f ON f.doc_id = d.doc_id "
        "CROSS JOIN LATERAL unnest(tsvector_to_array(f.terms)) AS t(term) "
        "GROUP BY 1, 2"
    )


def ensure_lexical(conn: Connection) -> None:
    """Create the documents and lexical tables (and the SQLite trigger) if missing."""
    if table_exists(conn, LEXICAL_TABLE):
        if conn.dialect.name == "sqlite" and not table_exists(conn, VOCAB_TABLE):
            _ensure_vocab(conn)
        elif conn.dialect.name == "postgresql":
            _ensure_term_counts(conn)
        return
    _lock_ddl(conn)
    sqlite = conn.dialect.name == "sqlite"
    # AUTOINCREMENT on SQLite: a doc_id is never reused, which the code cache relies on.
    key = "INTEGER PRIMARY KEY AUTOINCREMENT" if sqlite else "BIGSERIAL PRIMARY KEY"
    conn.exec_driver_sql(
        f"CREATE TABLE IF NOT EXISTS {DOCS_TABLE} ("
        f"doc_id {key}, "
        "memory_id VARCHAR(64) NOT NULL UNIQUE "
        "REFERENCES memories (memory_id) ON DELETE CASCADE, "
        "user_id VARCHAR(255) NOT NULL, uid BIGINT NOT NULL, digest VARCHAR(32) NOT NULL)"
    )
    conn.exec_driver_sql(
        f"CREATE INDEX IF NOT EXISTS {DOCS_TABLE}_uid ON {DOCS_TABLE} (uid, doc_id)"
    )
    if sqlite:
        conn.exec_driver_sql(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {LEXICAL_TABLE} USING fts5("
            "terms, tokenize = 'unicode61 remove_diacritics 0')"
        )
        _ensure_vocab(conn)
        _refresh_sqlite_trigger(conn)
        return
    conn.exec_driver_sql(
        f"CREATE TABLE IF NOT EXISTS {LEXICAL_TABLE} ("
        f"doc_id BIGINT PRIMARY KEY REFERENCES {DOCS_TABLE} (doc_id) ON DELETE CASCADE, "
        "terms TSVECTOR NOT NULL)"
    )
    conn.exec_driver_sql(
        f"CREATE INDEX IF NOT EXISTS {LEXICAL_TABLE}_terms ON {LEXICAL_TABLE} "
        "USING gin (terms) WITH (fastupdate = off)"
    )
    _ensure_term_counts(conn)


def ensure_vectors(conn: Connection, embedder_id: int, dimensions: int) -> bool:
    """Create an embedder's memory vector table if missing. False when vectors are
    unavailable (sqlite-vec not loadable, or pgvector missing and not installable)."""
    name = vector_table(embedder_id)
    if conn.dialect.name == "sqlite":
        from agentctx.retrieval import sqlitevec  # noqa: PLC0415 - as retrieval.tables does

        if not sqlitevec.available(conn.connection.dbapi_connection):
            return False
        for table in sorted({*sqlite_vector_tables(conn, "memory_vec_"), name}):
            ensure_sqlite_vectors(
                conn, table, docs_table=DOCS_TABLE, keys=("uid",), refresh=_refresh_sqlite_trigger
            )
        return True
    if table_exists(conn, name):
        return True
    _lock_ddl(conn)
    if not ensure_pgvector(conn):
        return False
    conn.exec_driver_sql(
        f'CREATE TABLE IF NOT EXISTS "{name}" ('
        f"doc_id BIGINT PRIMARY KEY REFERENCES {DOCS_TABLE} (doc_id) ON DELETE CASCADE, "
        f"uid BIGINT NOT NULL, embedding vector({int(dimensions)}) NOT NULL)"
    )
    conn.exec_driver_sql(f'CREATE INDEX IF NOT EXISTS "{name}_uid" ON "{name}" (uid, doc_id)')
    return True
