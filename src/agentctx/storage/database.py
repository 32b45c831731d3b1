"""One database URL → a configured SQLAlchemy engine and the transactions agentctx uses.

``sqlite:///path`` (the embedded default) runs in WAL mode. Write transactions
start with ``BEGIN IMMEDIATE`` so the read-modify-write of an append (read the
last seq and hash, insert the next event) is serialized. Writers of one process
queue on a lock; writers of different processes queue on an ``flock`` of a
lock file beside the database, so they wake as soon as the writer before them
commits instead of sleeping in SQLite's busy handler.

``postgresql://…`` uses psycopg 3; appends lock their session row
(``SELECT … FOR UPDATE``), which serializes writers of one session only.
"""

from __future__ import annotations

import contextlib
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, text
from sqlalchemy.engine import make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, DisconnectionError, NoSuchModuleError
from sqlalchemy.pool import StaticPool

from agentctx import jsonvalue
from agentctx.errors import ConfigError, EngineClosed, MissingExtra, StorageError
from agentctx.priority import ForegroundFirstLock, in_transaction, yield_to_foreground

try:  # POSIX: cross-process writer queue; elsewhere SQLite's busy timeout does the waiting.
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


_BLOB_GATE_KEY = 0x61676374_626C6F62  # "agctblob"
_UNTIL_ENDED = "agentctx_until_transaction_ended"  # Connection.info key (see pipeline())
_PIPELINED = "agentctx_pipelined"  # Connection.info key: pipeline() entered one
_OWN_BEGIN = "agentctx_own_begin"  # Connection.info key: pipeline() sent the BEGIN itself

_BEGIN = {mode: f"BEGIN {mode}" for mode in ("DEFERRED", "IMMEDIATE", "EXCLUSIVE")}

SQLITE_MMAP_BYTES = 1 << 30
"""How much of a SQLite database each connection reads through memory mapping rather
than read calls (address space, not memory: pages stay in the OS cache, shared by every
connection). Searches and event reads fetch a few hundred rows scattered over the file;
mapped, a read of 256 search rows at 100k events took 0.72 ms instead of 1.07."""


ALIVE_BYPASS_SECONDS = 0.5
"""A pooled PostgreSQL connection used this recently is not checked before use (the
window HikariCP, the Java connection pool, also leaves unchecked by default)."""


def _commit_in_pipeline(connection: Connection, until_ended: contextlib.ExitStack) -> None:
    """End a pipelined transaction in one round trip: its COMMIT is queued behind the
    statements still unsent and the pipeline's end sends them all with one Sync (a
    ``commit()`` inside the pipeline waits for the server, and leaving the pipeline
    then waits again). An error of any of them, the COMMIT's included, raises here,
    inside the transaction block, which then rolls back (a no-op once the server has
    ended the transaction); the driver's own commit after it finds no transaction open
    and sends nothing."""
    driver: Any = connection.connection.dbapi_connection  # psycopg's (pipelines are)
    # Not prepared: psycopg prepares a statement run often, and COMMIT needs no plan.
    driver.cursor().execute("COMMIT", prepare=False)
    until_ended.close()


def _driver_lost(connection: Connection) -> bool:
    """Whether ``connection``'s driver connection is gone or broken (psycopg's)."""
    driver: Any = connection.connection.dbapi_connection
    return driver is None or driver.closed or bool(getattr(driver, "broken", False))


def _end_own_begin(connection: Connection) -> None:
    """Take the driver connection of a write whose BEGIN :meth:`Database.pipeline` sent
    out of autocommit mode again, its transaction ended; one that cannot be (lost, or
    still in a transaction) is invalidated: a pooled connection in autocommit mode would
    commit each statement of the next transaction on its own."""
    if _driver_lost(connection):
        connection.invalidate()
        return
    try:
        connection.connection.dbapi_connection.autocommit = False  # type: ignore[union-attr]
    except connection.dialect.loaded_dbapi.Error as exc:  # still in a transaction
        connection.invalidate(exc)


def _refused(error: BaseException | None) -> StorageError:
    """The server refused a transaction at its COMMIT (nothing of it was stored)."""
    reason = str(error).strip().splitlines()[0] if error is not None and str(error).strip() else ""
    return StorageError(
        "the database refused the transaction at its commit; nothing of it was stored"
        + (f": {reason}" if reason else "")
    )


@contextlib.contextmanager
def _lost_connection_as_storage_error() -> Iterator[None]:
    """A connection the server dropped (a restart, a failover, a proxy's idle timeout)
    surfaces as ``StorageError``, which callers may retry, not as a driver error."""
    try:
        yield
    except DBAPIError as exc:
        if exc.connection_invalidated:
            raise _lost_connection() from exc
        raise


def _lost_connection() -> StorageError:
    return StorageError(
        "the database connection was lost (the server restarted or closed it); "
        "retry (an append with an idempotency key is stored once)"
    )


def normalize_url(url: str) -> str:
    """Map the URLs users write to the driver agentctx uses (psycopg 3 for PostgreSQL)."""
    if url.startswith(("postgresql://", "postgres://")):
        return "postgresql+psycopg://" + url.split("://", 1)[1]
    return url


class Database:
    """A SQLAlchemy engine plus agentctx's transaction discipline for one database."""

    def __init__(
        self,
        url: str,
        *,
        synchronous: str = "FULL",
        busy_timeout_ms: int = 30_000,
        pool_size: int = 8,
    ) -> None:
        self.url = normalize_url(url)
        try:
            parsed = make_url(self.url)
        except ArgumentError as exc:
            raise ConfigError(f"not a database URL: {url!r}") from exc
        self.dialect = parsed.get_backend_name()
        if self.dialect not in ("sqlite", "postgresql"):
            raise ConfigError(
                f"unsupported database {self.dialect!r}: use sqlite:// or postgresql://"
            )
        # The agent's writes go before background writes waiting at the same time.
        self._thread_lock = ForegroundFirstLock()
        self._lock_fd: int | None = None
        # Closing: no transaction starts once closed; close() waits for those under way.
        self._closed = False
        self._active = 0
        # A plain lock (Condition's default is re-entrant, which costs more): it is
        # taken twice per transaction, and nothing holding it takes it again.
        self._idle = threading.Condition(threading.Lock())
        kwargs: dict[str, Any] = {
            "json_serializer": jsonvalue.dumps,
            "json_deserializer": jsonvalue.loads,
        }
        if self.dialect == "sqlite":
            database = parsed.database or ""
            self.path: Path | None = None if database in ("", ":memory:") else Path(database)
            if self.path is None:
                kwargs["poolclass"] = StaticPool
                kwargs["connect_args"] = {"check_same_thread": False}
            else:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                kwargs["pool_size"] = pool_size
                kwargs["max_overflow"] = pool_size
                if fcntl is not None:
                    self._lock_fd = os.open(
                        f"{self.path}-writer.lock", os.O_RDWR | os.O_CREAT, 0o600
                    )
        else:
            self.path = None
            kwargs["pool_size"] = pool_size
            kwargs["max_overflow"] = pool_size
        try:
            self.engine: Engine = create_engine(self.url, **kwargs)
        except (NoSuchModuleError, ModuleNotFoundError) as exc:
            raise MissingExtra("postgres", "psycopg") from exc
        # Derived data (the search index, a window kept for diagnosis) may be written
        # without a disk sync where the log itself is synced: see write(durable=False).
        self._synchronous = synchronous.upper()
        if self.dialect == "sqlite":
            self._configure_sqlite(synchronous, busy_timeout_ms)
        else:
            self._ping_idle_connections()

    def _ping_idle_connections(self) -> None:
        """Check a pooled PostgreSQL connection before use when it has been idle for more
        than :data:`ALIVE_BYPASS_SECONDS`; a dead one is replaced before the caller sees
        it (a server restart, a failover, a proxy closing idle connections).

        ``pool_pre_ping`` checks every checkout: a round trip of about 0.1 ms before each
        transaction, a tenth of a newest-100 read. A connection handed back moments ago
        is alive but for a server that went away in those moments; then the statement
        fails, the pool is invalidated, and the next transaction reconnects.
        """
        dialect = self.engine.dialect

        @event.listens_for(self.engine, "checkin")
        def _on_checkin(_dbapi_connection: Any, record: Any) -> None:
            record.info["returned"] = time.monotonic()

        @event.listens_for(self.engine, "checkout")
        def _on_checkout(dbapi_connection: Any, record: Any, _proxy: Any) -> None:
            returned = record.info.get("returned")
            if returned is None or time.monotonic() - returned <= ALIVE_BYPASS_SECONDS:
                return
            try:
                dialect.do_ping(dbapi_connection)
            except Exception as exc:
                # The pool drops this connection and checks out another (or a new one).
                raise DisconnectionError(f"a pooled connection is dead: {exc}") from exc

    def _configure_sqlite(self, synchronous: str, busy_timeout_ms: int) -> None:
        # sqlite-vec (the retrieval index's vectors), when installed: registered before the
        # first connection opens, loaded into each. Imported here: retrieval imports storage.
        from agentctx.retrieval import sqlitevec  # noqa: PLC0415

        sqlitevec.prepare()

        @event.listens_for(self.engine, "connect")
        def _on_connect(dbapi_connection: Any, _record: Any) -> None:
            # Let SQLAlchemy's "begin" event below issue BEGIN, so we choose its mode.
            dbapi_connection.isolation_level = None
            cursor = dbapi_connection.cursor()
            cursor.execute(f"PRAGMA busy_timeout = {int(busy_timeout_ms)}")
            cursor.execute("PRAGMA journal_mode = WAL")
            cursor.execute(f"PRAGMA synchronous = {synchronous}")
            cursor.execute("PRAGMA foreign_keys = ON")
            # Deleted content is overwritten with zeros rather than left in free space
            # (the default build leaves it): an erasure must reach the file, not only the
            # tables (agentctx.storage.scrub).
            cursor.execute("PRAGMA secure_delete = ON")
            cursor.execute(f"PRAGMA mmap_size = {SQLITE_MMAP_BYTES}")
            cursor.close()
            sqlitevec.load(dbapi_connection)

        @event.listens_for(self.engine, "begin")
        def _on_begin(connection: Connection) -> None:
            mode = connection.get_execution_options().get("sqlite_begin", "DEFERRED")
            # On the driver's connection: SQLAlchemy's statement machinery (events,
            # compiled caches, result objects) costs more than BEGIN itself, and every
            # transaction runs this.
            connection.connection.dbapi_connection.execute(_BEGIN[mode])  # type: ignore[union-attr]

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    @contextlib.contextmanager
    def _open(self) -> Iterator[None]:
        """Count a transaction under way; ``EngineClosed`` once closed. A background
        thread first lets a foreground call under way finish (``yield_to_foreground``)."""
        yield_to_foreground()
        with self._idle:
            if self._closed:
                raise EngineClosed()
            self._active += 1
        try:
            with in_transaction():
                yield
        finally:
            with self._idle:
                self._active -= 1
                if not self._active:
                    self._idle.notify_all()
                    if self._closed:  # the last of those close() did not wait for
                        self._close_lock_file()

    @contextlib.contextmanager
    def write(self, *, durable: bool = True) -> Iterator[Connection]:
        """A write transaction; commits on success, rolls back on any exception. A lost
        connection raises ``StorageError`` (the pool reconnects for the next one);
        ``EngineClosed`` after :meth:`close`.

        ``durable=False`` is for data derived from the log and rebuilt from it (the
        search index's rows and progress, written in one transaction): on SQLite its
        commit does not wait for a disk sync (``synchronous=NORMAL`` for this one
        transaction; the next synced commit syncs it too). A power cut may lose such a
        transaction whole, never part of one, and the index then catches up again. The
        agent's own writes, which wait behind this one for SQLite's single writer, no
        longer wait for its sync as well. PostgreSQL: no difference.
        """
        if not durable and self.dialect == "sqlite" and self._synchronous in ("FULL", "EXTRA"):
            with self._unsynced_write() as connection:
                yield connection
            return
        with self._open():
            if self.dialect != "sqlite":
                with self._server_write() as connection:
                    yield connection
                return
            with self._writer_queue(), self.engine.connect() as connection:
                connection.execution_options(sqlite_begin="IMMEDIATE")
                with connection.begin():
                    yield connection

    @contextlib.contextmanager
    def _server_write(self) -> Iterator[Connection]:
        """:meth:`write` on a database server. The server refusing the COMMIT (a deferred
        constraint, a serialization failure) raises ``StorageError``, the transaction
        rolled back; errors of the block's own statements pass as they are."""
        with (
            _lost_connection_as_storage_error(),
            self.engine.connect() as connection,
            contextlib.ExitStack() as until_ended,
        ):
            # What pipeline() enters ends here, after the COMMIT (or ROLLBACK).
            connection.info[_UNTIL_ENDED] = until_ended
            committing = False
            try:
                with connection.begin():
                    yield connection
                    committing = True
                    if connection.info.get(_PIPELINED):
                        _commit_in_pipeline(connection, until_ended)
            except DBAPIError as exc:
                if committing and not exc.connection_invalidated:
                    raise _refused(exc.orig) from exc
                raise
            except connection.dialect.loaded_dbapi.Error as exc:  # the pipeline's end
                if not committing:
                    raise
                if _driver_lost(connection):
                    connection.invalidate(exc)  # never back to the pool
                    raise _lost_connection() from exc
                raise _refused(exc) from exc
            finally:
                # A lost connection's info went with it: nothing to remove then.
                connection.info.pop(_UNTIL_ENDED, None)
                connection.info.pop(_PIPELINED, None)
                if not connection.invalidated and connection.info.pop(_OWN_BEGIN, False):
                    try:
                        until_ended.close()  # the pipeline: its transaction has ended
                    finally:
                        _end_own_begin(connection)

    @contextlib.contextmanager
    def _unsynced_write(self) -> Iterator[Connection]:
        """A SQLite write transaction committed with ``synchronous=NORMAL``; the
        connection gets the configured level back before it returns to the pool."""
        with self._open(), self._writer_queue(), self.engine.connect() as connection:
            driver = connection.connection.dbapi_connection
            assert driver is not None
            driver.execute("PRAGMA synchronous = NORMAL")
            try:
                connection.execution_options(sqlite_begin="IMMEDIATE")
                with connection.begin():
                    yield connection
            finally:
                try:
                    driver.execute(f"PRAGMA synchronous = {self._synchronous}")
                except Exception:
                    # Never let a connection that does not sync go back to the pool.
                    connection.invalidate()
                    raise

    @contextlib.contextmanager
    def read(self) -> Iterator[Connection]:
        """A read transaction: a consistent snapshot. A lost connection raises
        ``StorageError``; ``EngineClosed`` after :meth:`close`.

        SQLite rolls it back. PostgreSQL commits it when the block ends without an error
        (it wrote nothing, so that is the same): psycopg forgets every prepared statement
        of a connection on ROLLBACK and then deallocates them on the server, a round trip
        of its own, so a rolled-back read made the next statement of each kind be parsed
        and planned again.
        """
        with self._open(), _lost_connection_as_storage_error(), self.engine.connect() as connection:
            yield connection
            if self.dialect == "postgresql":
                # On the driver's connection: statements of agentctx.storage.fastsql begin
                # its transaction without SQLAlchemy knowing (no transaction: a no-op).
                connection.connection.dbapi_connection.commit()  # type: ignore[union-attr]

    @contextlib.contextmanager
    def read_one(self) -> Iterator[Connection]:
        """A read of one statement. PostgreSQL runs it outside a transaction block: one
        round trip instead of three (BEGIN, the statement, COMMIT), and a statement
        reads one snapshot either way. SQLite: :meth:`read`."""
        if self.dialect != "postgresql":
            with self.read() as connection:
                yield connection
            return
        with self._open(), _lost_connection_as_storage_error(), self.engine.connect() as connection:
            yield connection.execution_options(isolation_level="AUTOCOMMIT")

    def pipeline(self, conn: Connection) -> None:
        """PostgreSQL: from here to the end of ``conn``'s write transaction (its COMMIT
        included), statements go to the server together, each batch when a result is
        read, instead of one round trip each; the statements after the last read go with
        the COMMIT, in one round trip. SQLite: nothing.

        After it, the transaction may only run statements whose results it reads through
        :mod:`agentctx.storage.fastsql` or that return no rows: SQLAlchemy reads the
        result of a statement as soon as it has sent it, which a pipeline has not got yet.
        """
        if self.dialect != "postgresql":
            return
        until_ended: contextlib.ExitStack | None = conn.info.get(_UNTIL_ENDED)
        if until_ended is None:
            raise StorageError("pipeline() needs a connection of Database.write()")
        if conn.info.get(_PIPELINED):
            return
        driver: Any = conn.connection.dbapi_connection
        # psycopg opens a transaction with a BEGIN it waits for, even in a pipeline (it
        # must see the transaction begun before it sends the next statement); in
        # autocommit mode it sends none. Before the transaction's first statement, the
        # BEGIN is sent here instead, in the pipeline's first batch with the reads: one
        # round trip fewer per write. The write ends by restoring the mode
        # (_end_own_begin) before the connection goes back to the pool.
        from psycopg.pq import TransactionStatus  # noqa: PLC0415 - the [postgres] extra

        own_begin = driver.info.transaction_status == TransactionStatus.IDLE
        if own_begin:
            driver.autocommit = True
            conn.info[_OWN_BEGIN] = True
        until_ended.enter_context(driver.pipeline())
        conn.info[_PIPELINED] = True
        if own_begin:
            driver.cursor().execute("BEGIN", prepare=False)

    @contextlib.contextmanager
    def write_lock(self) -> Iterator[None]:
        """SQLite: hold the writer queue (this process's writers and, through the lock
        file, other processes') without opening a transaction, e.g. for a checkpoint."""
        with self._open(), self._writer_queue():
            yield

    @contextlib.contextmanager
    def _writer_queue(self) -> Iterator[None]:
        with self._thread_lock:
            if self._lock_fd is None:
                yield
                return
            fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(self._lock_fd, fcntl.LOCK_UN)

    @contextlib.contextmanager
    def exclusive(self, name: str) -> Iterator[None]:
        """A lock across every process using this database (used around migrations)."""
        if self._closed:
            raise EngineClosed()
        if self.dialect == "sqlite":
            with self._writer_queue():
                yield
            return
        key = int.from_bytes(name.encode()[:8].ljust(8, b"\0"), "big", signed=True)
        with self.engine.connect() as connection:
            connection.execute(text("SELECT pg_advisory_lock(:k)"), {"k": key})
            connection.commit()
            try:
                yield
            finally:
                connection.execute(text("SELECT pg_advisory_unlock(:k)"), {"k": key})
                connection.commit()

    def blob_gate(self, conn: Connection, *, exclusive: bool) -> None:
        """Order blob-reference writes (shared) against blob collection (exclusive).

        Held until ``conn``'s transaction ends. On SQLite every write transaction is
        already exclusive, so this is a no-op there.
        """
        if self.dialect == "postgresql":
            function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
            conn.execute(text(f"SELECT {function}(:k)"), {"k": _BLOB_GATE_KEY})

    def close(self, timeout: float = 10.0) -> bool:
        """Refuse new transactions from now on (``EngineClosed``), wait up to ``timeout``
        seconds for those under way, then close every connection. Returns whether they
        all ended in time (one still under way is left to finish on its connection)."""
        with self._idle:
            self._closed = True
            ended = self._idle.wait_for(lambda: self._active == 0, timeout)
            # Pooled connections close now; one checked out closes when returned.
            self.engine.dispose()
            if ended:  # else the transaction still under way holds the lock file
                self._close_lock_file()
        return ended

    def dispose(self) -> None:
        """Close every pooled connection and the lock file."""
        self.engine.dispose()
        self._close_lock_file()

    def _close_lock_file(self) -> None:
        if self._lock_fd is not None:
            os.close(self._lock_fd)
            self._lock_fd = None
