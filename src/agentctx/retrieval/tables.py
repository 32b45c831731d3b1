"""The derived tables of the retrieval index: created on first use, per database kind.

SQLite
    ``search_fts``: an FTS5 table over the documents' terms (rowid = ``doc_id``).
    ``search_vec_<embedder_id>``: ``(doc_id INTEGER PRIMARY KEY, sid, seq, embedding
    BLOB)``, the vector as little-endian float32, with a ``(sid, seq)`` index; it
    references ``search_docs`` ON DELETE CASCADE. A trigger on ``search_docs`` deletes
    a document's row from the full-text table, a virtual table, which takes no
    foreign key, so the cascade from ``search_sessions`` reaches it too.
PostgreSQL
    ``search_fts``: ``(doc_id, terms tsvector)`` with a GIN index.
    ``search_vec_<embedder_id>``: ``(doc_id, sid, seq, embedding vector(n))`` (pgvector)
    with a ``(sid, seq)`` index. Both reference ``search_docs`` ON DELETE CASCADE.

Earlier releases made the SQLite vector tables sqlite-vec ``vec0`` tables, partitioned
by session. ``vec0`` stores a partition's vectors in chunks of 1,024 allocated whole, so
each session took 1.5 MB a table for 384 dimensions however few vectors it had: a
database of many short sessions was almost all empty chunks. A plain table grows with
the rows it holds; its vectors are searched in memory (numpy) or with sqlite-vec's
``vec_distance_cosine`` (:mod:`agentctx.retrieval.dense`). :func:`ensure_vectors`
copies an old ``vec0`` table's vectors into the plain form the first time it meets one
(:func:`ensure_sqlite_vectors`); the file keeps the freed pages for later rows until a
``VACUUM``.

Their shape depends on the database and on the embedder's vector size, so the index
creates them (``CREATE … IF NOT EXISTS``, serialized by the writer lock on SQLite and
an advisory lock on PostgreSQL); :data:`~agentctx.storage.schema.DERIVED_TABLE_PREFIXES`
names them for schema comparisons.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

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
    """The sqlite-vec (``vec0``) tables named ``<prefix><embedder id>``: those of earlier
    releases not converted yet (see :func:`ensure_sqlite_vectors`)."""
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
    ``docs_table`` from the lexical table and any ``vec0`` vector table left: virtual
    tables take no foreign keys, so the cascade reaches them this way."""
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
    """Create an embedder's vector table if missing (on SQLite, or convert one of the
    old ``vec0`` form). False when vectors are unavailable (sqlite-vec not loadable, or
    the pgvector extension missing and not installable)."""
    name = vector_table(embedder_id)
    if conn.dialect.name == "sqlite":
        from agentctx.retrieval import sqlitevec  # noqa: PLC0415 - tiny; avoids an import cycle

        if not sqlitevec.available(conn.connection.dbapi_connection):
            return False
        # Every vec0 table left, not only this embedder's: an old one's chunks weigh as much.
        for table in sorted({*sqlite_vector_tables(conn, "search_vec_"), name}):
            ensure_sqlite_vectors(
                conn,
                table,
                docs_table="search_docs",
                keys=("sid", "seq"),
                refresh=_refresh_sqlite_trigger,
            )
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


def _is_virtual(conn: Connection, name: str) -> bool:
    found = conn.exec_driver_sql(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (name,)
    ).scalar()
    return bool(found) and str(found).upper().startswith("CREATE VIRTUAL TABLE")


def ensure_sqlite_vectors(
    conn: Connection,
    name: str,
    *,
    docs_table: str,
    keys: Sequence[str],
    refresh: Callable[[Connection], None],
) -> None:
    """Create the SQLite vector table ``name`` if missing: ``(doc_id INTEGER PRIMARY KEY
    REFERENCES docs_table ON DELETE CASCADE, <keys> INTEGER, embedding BLOB)``, indexed
    by ``keys`` (then ``doc_id``, the rowid, which every index ends with).

    A ``vec0`` table of that name (the form earlier releases made, rowid = ``doc_id``,
    the same columns) is converted: its vectors are copied into the new table and it is
    dropped, in the caller's transaction (sqlite-vec must be loaded to read it).
    ``refresh`` re-creates the cleanup trigger, which named the old table, before the
    new one takes its name."""
    old = table_exists(conn, name)
    if old and not _is_virtual(conn, name):
        return
    target = f"{name}_plain" if old else name
    columns = ", ".join(f"{key} INTEGER NOT NULL" for key in keys)
    conn.exec_driver_sql(
        f'CREATE TABLE "{target}" (doc_id INTEGER PRIMARY KEY '
        f"REFERENCES {docs_table} (doc_id) ON DELETE CASCADE, {columns}, "
        "embedding BLOB NOT NULL)"
    )
    if old:
        listed = ", ".join(f"v.{key}" for key in keys)
        # Joined to the documents: a vector whose document is gone is not carried over
        # (the foreign key would refuse it).
        moved = conn.exec_driver_sql(
            f'INSERT INTO "{target}" (doc_id, {", ".join(keys)}, embedding) '
            f'SELECT v.rowid, {listed}, v.embedding FROM "{name}" AS v '
            f"JOIN {docs_table} AS d ON d.doc_id = v.rowid"
        ).rowcount
        conn.exec_driver_sql(f'DROP TABLE "{name}"')
        refresh(conn)  # RENAME checks every trigger, and this one named the dropped table
        conn.exec_driver_sql(f'ALTER TABLE "{target}" RENAME TO "{name}"')
        log.info("vector table %s converted from vec0 (%d vectors)", name, moved)
    conn.exec_driver_sql(
        f'CREATE INDEX IF NOT EXISTS "{name}_{"_".join(keys)}" ON "{name}" ({", ".join(keys)})'
    )
    refresh(conn)


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
