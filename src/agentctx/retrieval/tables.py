"""The derived tables of the retrieval index: created on first use, per database kind.

SQLite
    ``search_fts``: an FTS5 table over the documents' terms (rowid = ``doc_id``).
    ``search_vec_<embedder_id>``: a sqlite-vec ``vec0`` table, partitioned by session,
    cosine distance (rowid = ``doc_id``). A trigger on ``search_docs`` deletes a
    document's rows from all of them, so the cascade from ``search_sessions`` reaches
    the virtual tables too.
PostgreSQL
    ``search_fts``: ``(doc_id, terms tsvector)`` with a GIN index.
    ``search_vec_<embedder_id>``: ``(doc_id, sid, seq, embedding vector(n))`` (pgvector)
    with a ``(sid, seq)`` index. Both reference ``search_docs`` ON DELETE CASCADE.

Their shape depends on the database and on the embedder's vector size, so the index
creates them (``CREATE … IF NOT EXISTS``, serialized by the writer lock on SQLite and
an advisory lock on PostgreSQL); :data:`~agentctx.storage.schema.DERIVED_TABLE_PREFIXES`
names them for schema comparisons.
"""

from __future__ import annotations

import logging

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

log = logging.getLogger(__name__)

LEXICAL_TABLE = "search_fts"
_TRIGGER = "search_docs_derived_cleanup"
_DDL_LOCK = 0x61676374_69647878  # "agctidxx": serializes the index's DDL on PostgreSQL


def vector_table(embedder_id: int) -> str:
    """The vector table of an embedder."""
    return f"search_vec_{int(embedder_id)}"


def _lock_ddl(conn: Connection) -> None:
    if conn.dialect.name == "postgresql":
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": _DDL_LOCK})


def table_exists(conn: Connection, name: str) -> bool:
    """Whether a (derived) table exists."""
    if conn.dialect.name == "sqlite":
        found = conn.exec_driver_sql(
            "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
        ).first()
    else:
        found = conn.execute(text("SELECT to_regclass(:n)"), {"n": name}).scalar()
    return bool(found)


def sqlite_vector_tables(conn: Connection, prefix: str) -> list[str]:
    """The sqlite-vec tables named ``<prefix><embedder id>``."""
    rows = conn.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE type = 'table' "
        "AND name GLOB ? AND sql LIKE 'CREATE VIRTUAL TABLE%' ORDER BY name",
        (f"{prefix}[0-9]*",),
    )
    return [row[0] for row in rows]


def refresh_cleanup_trigger(
    conn: Connection, *, trigger: str, docs_table: str, lexical_table: str, vector_prefix: str
) -> None:
    """(Re)create the SQLite trigger that removes a deleted document (``doc_id``) of
    ``docs_table`` from the lexical table and every vector table: virtual tables take
    no foreign keys, so the cascade reaches them this way."""
    statements = [f"DELETE FROM {lexical_table} WHERE rowid = OLD.doc_id;"]
    statements += [
        f'DELETE FROM "{name}" WHERE rowid = OLD.doc_id;'
        for name in sqlite_vector_tables(conn, vector_prefix)
    ]
    conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS {trigger}")
    conn.exec_driver_sql(
        f"CREATE TRIGGER {trigger} AFTER DELETE ON {docs_table} BEGIN "
        + " ".join(statements)
        + " END"
    )


def _refresh_sqlite_trigger(conn: Connection) -> None:
    refresh_cleanup_trigger(
        conn,
        trigger=_TRIGGER,
        docs_table="search_docs",
        lexical_table=LEXICAL_TABLE,
        vector_prefix="search_vec_",
    )


def ensure_lexical(conn: Connection) -> None:
    """Create the lexical table (and on SQLite the cleanup trigger) if missing."""
    if table_exists(conn, LEXICAL_TABLE):
        return
    _lock_ddl(conn)
    if conn.dialect.name == "sqlite":
        conn.exec_driver_sql(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS {LEXICAL_TABLE} USING fts5("
            "terms, tokenize = 'unicode61 remove_diacritics 0')"
        )
        try:
            # SQLite >= 3.44: deleted rows leave the index at once, not at the next merge.
            conn.exec_driver_sql(
                f"INSERT INTO {LEXICAL_TABLE}({LEXICAL_TABLE}, rank) VALUES ('secure-delete', 1)"
            )
        except DBAPIError:
            log.debug("FTS5 secure-delete unavailable; deletions are purged by 'optimize'")
        _refresh_sqlite_trigger(conn)
        return
    conn.exec_driver_sql(
        f"CREATE TABLE IF NOT EXISTS {LEXICAL_TABLE} ("
        "doc_id BIGINT PRIMARY KEY REFERENCES search_docs (doc_id) ON DELETE CASCADE, "
        "terms TSVECTOR NOT NULL)"
    )
    # fastupdate off: no pending list for searches to scan; inserts are small and frequent.
    conn.exec_driver_sql(
        f"CREATE INDEX IF NOT EXISTS {LEXICAL_TABLE}_terms ON {LEXICAL_TABLE} "
        "USING gin (terms) WITH (fastupdate = off)"
    )


def ensure_vectors(conn: Connection, embedder_id: int, dimensions: int) -> bool:
    """Create an embedder's vector table if missing. False when vectors are unavailable
    (sqlite-vec not loadable, or the pgvector extension missing and not installable)."""
    name = vector_table(embedder_id)
    if conn.dialect.name == "sqlite":
        from agentctx.retrieval import sqlitevec  # noqa: PLC0415 - tiny; avoids an import cycle

        if not sqlitevec.available(conn.connection.dbapi_connection):
            return False
        if table_exists(conn, name):
            return True
        conn.exec_driver_sql(
            f'CREATE VIRTUAL TABLE IF NOT EXISTS "{name}" USING vec0('
            f"sid integer partition key, embedding float[{int(dimensions)}] "
            "distance_metric=cosine, seq integer)"
        )
        _refresh_sqlite_trigger(conn)
        return True
    if table_exists(conn, name):
        return True
    _lock_ddl(conn)
    if not ensure_pgvector(conn):
        return False
    conn.exec_driver_sql(
        f'CREATE TABLE IF NOT EXISTS "{name}" ('
        "doc_id BIGINT PRIMARY KEY REFERENCES search_docs (doc_id) ON DELETE CASCADE, "
        "sid BIGINT NOT NULL, seq BIGINT NOT NULL, "
        f"embedding vector({int(dimensions)}) NOT NULL)"
    )
    conn.exec_driver_sql(f'CREATE INDEX IF NOT EXISTS "{name}_sid_seq" ON "{name}" (sid, seq)')
    return True


def ensure_pgvector(conn: Connection) -> bool:
    """Install pgvector in the database if it is not yet; False (with a warning) when it
    cannot be, so the caller goes without vector search."""
    try:
        with conn.begin_nested():
            conn.exec_driver_sql("CREATE EXTENSION IF NOT EXISTS vector")
    except DBAPIError as exc:
        log.warning("pgvector is not available, so no vector search: %s", exc.orig)
        return False
    return True


def purge_deleted(conn: Connection) -> None:
    """Make deleted documents' terms leave the SQLite full-text index's pages now.

    FTS5 records a deletion as a marker and drops the old entries at a later merge;
    ``optimize`` merges at once (its cost grows with the whole index). Not needed with
    secure-delete (SQLite 3.44+) nor on PostgreSQL, whose deleted rows go as any row does.
    """
    if conn.dialect.name != "sqlite" or not table_exists(conn, LEXICAL_TABLE):
        return
    secure = conn.exec_driver_sql(
        f"SELECT v FROM {LEXICAL_TABLE}_config WHERE k = 'secure-delete'"
    ).scalar()
    if not secure:
        conn.exec_driver_sql(f"INSERT INTO {LEXICAL_TABLE}({LEXICAL_TABLE}) VALUES ('optimize')")
