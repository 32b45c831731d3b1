"""After an erasure: make deleted rows leave the database's files, not only its tables.

A ``DELETE`` removes rows from what queries see; the bytes can stay on disk. What each
database keeps, and what :func:`scrub_erased` does about it:

SQLite
    Deleted cells and freed pages keep their old bytes unless ``secure_delete`` is on
    (the default build has it off): every connection turns it on
    (:class:`~agentctx.storage.database.Database`), so a deletion overwrites them with
    zeros. FTS5 tables record a deletion as a marker and keep the old terms in their
    segments until a merge: the scrub runs ``optimize`` on each FTS5 table (SQLite 3.44+
    tables with ``secure-delete`` set need none). In WAL mode the pages as they were
    before the deletion stay in the ``-wal`` file until a checkpoint copies the new ones
    back and the log is reset: the scrub runs ``PRAGMA wal_checkpoint(TRUNCATE)``, which
    empties the ``-wal`` file. It waits for readers of older snapshots, in any process,
    up to ``sqlite_busy_timeout_ms``; a reader holding one longer keeps it from
    finishing, which is logged, and the next erasure's scrub or the last connection's
    close finishes it.
PostgreSQL
    A deleted row stays in its page, dead, until ``VACUUM`` removes it (autovacuum runs
    only past a threshold of dead rows, so a small deletion may wait for ever). Even
    then, a plain ``VACUUM`` compacts each page's live rows without zeroing the space
    the dead ones held, and a GIN index (the full-text tables') keeps a deleted term as
    a key with an empty posting list: measured on 83 marker strings of an erased user,
    74 were still in the table and index files after a plain ``VACUUM``, none after
    ``VACUUM FULL``. So the scrub (``rewrite=True``, the default setting
    ``erasure_scrub: rewrite``) runs ``VACUUM FULL`` on each table a deletion removes
    rows from (:data:`ERASED_TABLES` and the derived index tables): it is rewritten into
    new files, the old are removed, and the table is locked (reads and writes wait)
    while it is rewritten, which takes longer the larger it is. With ``rewrite=False``
    (``erasure_scrub: vacuum``) it runs ``VACUUM (INDEX_CLEANUP ON)``: no such lock,
    dead rows unreachable and gone from B-tree indexes, but bytes left as said. Each
    table waits at most :data:`LOCK_TIMEOUT_MS` for its lock (a transaction left open
    on it would otherwise stall the scrub and everything queued behind it); ``VACUUM
    FULL`` not granted in time falls back to a plain ``VACUUM``, and a table neither
    was granted for is skipped with a warning. Statements run on an autocommit
    connection (``VACUUM`` cannot run in a transaction).

    What stays in PostgreSQL after the scrub, and how to force it out:

    - The write-ahead log (``pg_wal``) holds the rows as they were written, until its
      segments are recycled after a checkpoint (``max_wal_size``, ``min_wal_size``,
      ``wal_keep_size``, replication slots and WAL archiving keep them longer; archived
      segments are wherever ``archive_command`` put them). ``SELECT pg_switch_wal()``
      then ``CHECKPOINT`` (superuser, or the ``pg_checkpoint`` role) ends the segment
      and lets it go at the next checkpoint, but a *recycled* segment is renamed, not
      overwritten: its old bytes stay until it is reused. With ``wal_recycle = off`` the
      server deletes such segments instead; then ``pg_switch_wal()`` and two checkpoints
      leave no copy in ``pg_wal`` (observed with PostgreSQL 16, where the default kept the
      rows in a recycled segment; tests/test_erasure_disk.py checks the former). The
      scrub does not do this itself: it needs those privileges and forces a
      checkpoint's I/O on the whole server.
    - Blocks of removed files are freed by the file system, not overwritten.
    - Replicas, backups and WAL archives hold their own copies.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

from sqlalchemy import Connection, text
from sqlalchemy.exc import OperationalError

from agentctx.storage.database import Database
from agentctx.storage.schema import (
    DERIVED_TABLE_PREFIXES,
    MEMORY_TABLES,
    USER_DATA_TABLES,
    blobs,
    metadata,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ScrubReport:
    """What a scrub did."""

    optimized: list[str] = field(default_factory=list)  # SQLite FTS5 tables merged
    checkpointed: bool = False  # SQLite: the -wal file was emptied
    vacuumed: list[str] = field(default_factory=list)  # PostgreSQL tables vacuumed


def scrub_erased(db: Database, *, rewrite: bool = True) -> ScrubReport:
    """Purge what deleted rows left in the database's files (see the module docstring).

    Call after the deleting transaction committed. ``rewrite`` (PostgreSQL only)
    rewrites the tables (``VACUUM FULL``) rather than vacuuming them in place.
    """
    if db.dialect == "sqlite":
        return _scrub_sqlite(db)
    return _scrub_postgresql(db, rewrite=rewrite)


def _fts5_tables(conn: Connection) -> list[str]:
    """The FTS5 tables whose deleted entries wait for a merge (not ``secure-delete``)."""
    rows = conn.exec_driver_sql(
        "SELECT name FROM sqlite_master WHERE type = 'table' "
        "AND sql LIKE 'CREATE VIRTUAL TABLE%' AND lower(sql) LIKE '%using fts5(%' ORDER BY name"
    )
    names = [row[0] for row in rows]
    waiting = []
    for name in names:
        secure = conn.exec_driver_sql(
            f"SELECT v FROM \"{name}_config\" WHERE k = 'secure-delete'"
        ).scalar()
        if not secure:
            waiting.append(name)
    return waiting


def _scrub_sqlite(db: Database) -> ScrubReport:
    with db.write() as conn:
        optimized = _fts5_tables(conn)
        for name in optimized:
            conn.exec_driver_sql(f'INSERT INTO "{name}"("{name}") VALUES (\'optimize\')')
    if db.path is None:  # in memory: no files
        return ScrubReport(optimized=optimized)
    with db.write_lock(), db.engine.connect() as conn:
        # Outside any transaction: a checkpoint cannot run inside one.
        busy, _frames, _copied = conn.connection.dbapi_connection.execute(  # type: ignore[union-attr]
            "PRAGMA wal_checkpoint(TRUNCATE)"
        ).fetchone()
    if busy:
        log.warning(
            "the WAL checkpoint after an erasure could not finish (a reader holds an older "
            "snapshot); the erased pages stay in %s-wal until a later checkpoint",
            db.path,
        )
    return ScrubReport(optimized=optimized, checkpointed=not busy)


ERASED_TABLES: frozenset[str] = frozenset(
    table.name for table in (*USER_DATA_TABLES, *MEMORY_TABLES, blobs)
) | {table.name for table in metadata.tables.values() if table.name.startswith("search_")}
"""The declared tables a deletion removes rows from (beside the derived ones); not the
audit log, the erasure feed, agents or API keys, which hold no content of a user."""

LOCK_TIMEOUT_MS = 2000
"""How long the scrub waits for a table's lock. A transaction left open on a table (a
slow reader, a stuck client) would otherwise hold ``VACUUM FULL`` back, and with it
every statement queued behind its lock request: the whole server's use of the table."""


def erased_tables(conn: Connection) -> list[str]:
    """The tables in the connection's schema a deletion removes rows from: those of
    :data:`ERASED_TABLES` and the derived ones (full-text and vector indexes) that exist."""
    rows = conn.execute(
        text("SELECT tablename FROM pg_tables WHERE schemaname = current_schema()")
    ).scalars()
    return sorted(
        name for name in rows if name in ERASED_TABLES or name.startswith(DERIVED_TABLE_PREFIXES)
    )


def _scrub_postgresql(db: Database, *, rewrite: bool) -> ScrubReport:
    vacuumed: list[str] = []
    with db.engine.connect() as plain:
        conn = plain.execution_options(isolation_level="AUTOCOMMIT")
        conn.exec_driver_sql(f"SET lock_timeout = {LOCK_TIMEOUT_MS}")
        try:
            # INDEX_CLEANUP ON: by default VACUUM may skip the indexes when few rows
            # died, which would leave the deleted keys (terms, idempotency keys) in them.
            # One table at a time: a table whose lock is not granted in time is left
            # (with a warning) rather than holding back the others.
            options = ["FULL", "INDEX_CLEANUP ON"] if rewrite else ["INDEX_CLEANUP ON"]
            for table in erased_tables(conn):
                if _vacuum(conn, table, options):
                    vacuumed.append(table)
        finally:
            conn.exec_driver_sql("RESET lock_timeout")
    return ScrubReport(vacuumed=vacuumed)


def _vacuum(conn: Connection, table: str, options: list[str]) -> bool:
    """``VACUUM`` ``table`` with the first of ``options`` whose lock is granted in time
    (``FULL`` needs an exclusive lock; a plain ``VACUUM`` conflicts with schema changes
    and other vacuums only); False, with a warning, when none was."""
    for option in options:
        try:
            conn.exec_driver_sql(f'VACUUM ({option}) "{table}"')
            return True
        except OperationalError as exc:
            if getattr(exc.orig, "sqlstate", None) != _LOCK_NOT_AVAILABLE:
                raise
            log.warning(
                "VACUUM (%s) %s after an erasure waited over %d ms for its lock (a "
                "transaction holds the table) and was skipped; the deleted rows' bytes "
                "stay in its files until a later scrub or VACUUM",
                option,
                table,
                LOCK_TIMEOUT_MS,
            )
    return False


_LOCK_NOT_AVAILABLE = "55P03"
