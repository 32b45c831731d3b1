"""Hot-path statements: SQLAlchemy Core, compiled once, executed on the DBAPI cursor.

An append runs five statements and a read of the newest events one; through
``Connection.execute`` each costs ~45 µs of Python (cache key, execution
context, result wrapping) against ~8 µs for the driver itself. For those few
statements, :class:`FastStatement` compiles the Core statement once per dialect
and keeps SQLAlchemy's own bind and result processors for each column type, so
values are converted exactly as everywhere else (JSON, UTC timestamps,
booleans); only the per-call machinery is skipped. Everything else uses Core
as usual.

Statements run inside the caller's SQLAlchemy transaction, on its connection.
"""

from __future__ import annotations

import operator
import threading
import weakref
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Generic, TypeVar, cast

from sqlalchemy import JSON, Connection, Dialect
from sqlalchemy.sql import ClauseElement
from sqlalchemy.sql.compiler import SQLCompiler
from sqlalchemy.types import TypeEngine

from agentctx import jsonvalue

Processor = Callable[[Any], Any] | None
_T = TypeVar("_T")


def _bind_processor(type_: TypeEngine[Any], dialect: Dialect) -> Processor:
    """SQLAlchemy's bind processor for a type, collapsed to one call where it is known."""
    fast = getattr(type_, "fast_bind_processor", None)
    if fast is not None:
        return cast(Processor, fast(dialect))
    processor = type_.dialect_impl(dialect).bind_processor(dialect)
    if processor is not None and isinstance(type_, JSON) and dialect.name == "sqlite":
        return jsonvalue.dumps  # SQLite stores JSON as the serializer's text
    return processor


def _result_processor(type_: TypeEngine[Any], dialect: Dialect) -> Processor:
    """SQLAlchemy's result processor for a type, collapsed to one call where it is known.

    JSON columns arriving as text go straight to the engine's deserializer, and types
    that offer ``fast_result_processor`` (UTCDateTime) use it; the values are the same
    as SQLAlchemy's own processors give (tests compare both paths).
    """
    fast = getattr(type_, "fast_result_processor", None)
    if fast is not None:
        return cast(Processor, fast(dialect))
    processor = type_.dialect_impl(dialect).result_processor(dialect, None)
    if processor is not None and isinstance(type_, JSON):
        return jsonvalue.loads
    return processor


class FastStatement:
    """One statement compiled for one dialect."""

    def __init__(
        self, statement: ClauseElement, dialect: Dialect, column_keys: list[str] | None = None
    ) -> None:
        compiled = cast(SQLCompiler, statement.compile(dialect=dialect, column_keys=column_keys))
        self.sql = compiled.string
        self._positional = bool(dialect.positional)
        names = list(compiled.positiontup or ()) if self._positional else list(compiled.binds)
        # (driver name, key in the caller's values or None for a literal, processor, literal)
        self._binds: list[tuple[str, str | None, Processor, Any]] = []
        for name in names:
            bind = compiled.binds[name]
            processor = _bind_processor(bind.type, dialect)
            if bind.required:
                self._binds.append((name, str(bind.key), processor, None))
            else:  # a value SQLAlchemy rendered itself, such as SQLite's OFFSET 0 after LIMIT ?
                self._binds.append((name, None, processor, bind.effective_value))
        self.columns: list[str] = []
        self._results: list[Processor] = []
        for column in getattr(statement, "selected_columns", ()):
            self.columns.append(column.key)
            self._results.append(_result_processor(column.type, dialect))
        # The parameters in driver order, taken from the caller's values in one C call
        # (statements with a rendered literal, rare, take them one by one); only the
        # columns with a processor are then converted.
        self._names = [name for name, *_ in self._binds]
        keys = [key for _, key, _, _ in self._binds]
        self._take: Callable[[Mapping[str, Any]], Any]
        if None in keys:
            self._take = lambda values: [
                values[key] if key is not None else literal for _, key, _, literal in self._binds
            ]
        elif len(keys) == 1:
            only = str(keys[0])
            self._take = lambda values: (values[only],)
        else:
            self._take = operator.itemgetter(*keys) if keys else lambda _values: ()
        self._converters = [
            (i, processor)
            for i, (_, _, processor, _) in enumerate(self._binds)
            if processor is not None
        ]

    def params(self, values: Mapping[str, Any]) -> Sequence[Any] | dict[str, Any]:
        """Driver parameters for ``values`` (keyed by bind name), converted per column type."""
        converted = list(self._take(values))
        for index, processor in self._converters:
            converted[index] = processor(converted[index])
        if self._positional:
            return converted
        return dict(zip(self._names, converted, strict=True))

    def execute(self, conn: Connection, values: Mapping[str, Any]) -> Any:
        """Run once; returns the DBAPI cursor."""
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        cursor.execute(self.sql, self.params(values))
        return cursor

    def execute_many(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Run once per row, in one driver call."""
        cursor = conn.connection.dbapi_connection.cursor()  # type: ignore[union-attr]
        params: Any = [self.params(row) for row in rows]
        cursor.executemany(self.sql, params)
        cursor.close()

    def fetch_values(self, conn: Connection, values: Mapping[str, Any]) -> list[list[Any]]:
        """Run a SELECT; each row as a list of converted values in select order."""
        return self.send(conn, values).fetch_values()

    def fetch_mappings(self, conn: Connection, values: Mapping[str, Any]) -> list[dict[str, Any]]:
        """Run a SELECT; each row as a dict of column key -> converted value."""
        columns = self.columns
        return [dict(zip(columns, row, strict=True)) for row in self.fetch_values(conn, values)]

    def send(self, conn: Connection, values: Mapping[str, Any]) -> SentRead:
        """Run a SELECT whose rows are read later (:class:`SentRead`)."""
        return SentRead(self.execute(conn, values), self._results)


class SentRead:
    """A SELECT sent, its rows not read yet. In a PostgreSQL pipeline
    (:meth:`~agentctx.storage.database.Database.pipeline`) reading a result waits for
    the server with every statement sent before it: two reads sent one after the other
    and then read cost one round trip, where reading each as it is sent costs two."""

    __slots__ = ("_cursor", "_results")

    def __init__(self, cursor: Any, results: list[Processor]) -> None:
        self._cursor = cursor
        self._results = results

    def answer(self, make: Callable[[list[list[Any]]], _T]) -> Sent[_T]:
        """What ``make`` makes of the rows, when they are read (:meth:`Sent.result`)."""
        return Sent(self, make)

    def fetch_values(self) -> list[list[Any]]:
        """Each row as a list of converted values in select order (read once)."""
        raw = self._cursor.fetchall()
        self._cursor.close()
        converters = [(i, p) for i, p in enumerate(self._results) if p is not None]
        rows = []
        for raw_row in raw:
            row = list(raw_row)
            for index, processor in converters:
                value = row[index]
                if value is not None:
                    row[index] = processor(value)
            rows.append(row)
        return rows


class Sent(Generic[_T]):
    """A read sent (:class:`SentRead`) and what its rows answer, made when read."""

    __slots__ = ("_make", "_sent")

    def __init__(self, sent: SentRead, make: Callable[[list[list[Any]]], _T]) -> None:
        self._sent = sent
        self._make = make

    def result(self) -> _T:
        """Read the rows (once) and make the answer."""
        return self._make(self._sent.fetch_values())


# Compiled statements per dialect instance (bind processors depend on the engine's JSON
# serializer, which lives on its dialect), built on first use.
_caches: weakref.WeakKeyDictionary[Dialect, dict[Any, FastStatement]] = weakref.WeakKeyDictionary()
_lock = threading.Lock()


def statement(
    conn: Connection,
    key: Any,
    build: Callable[[], ClauseElement],
    column_keys: list[str] | None = None,
) -> FastStatement:
    """The compiled statement for ``key`` on ``conn``'s dialect, compiling ``build()`` once."""
    cache = _caches.get(conn.dialect)
    if cache is None:
        with _lock:
            cache = _caches.setdefault(conn.dialect, {})
    found = cache.get(key)
    if found is None:
        found = cache[key] = FastStatement(build(), conn.dialect, column_keys)
    return found


_PLAIN = (str, int, float, type(None))


def insert_plain_rows(conn: Connection, table: Any, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert ``rows`` (each with the same keys) into ``table``.

    On SQLite, rows whose values are all plain (text, integers, floats, None) go in one
    statement, passed as JSON. The driver's executemany releases the interpreter lock
    around every row and takes it back after; from a background thread beside the
    agent's, each of those returns waited for the agent's Python, and the write (with
    the agent's next append queued behind it for SQLite's one writer) stretched to tens
    of milliseconds. Elsewhere, or with other values, Core's executemany.
    """
    if not rows:
        return
    columns = list(rows[0])
    plain = conn.dialect.name == "sqlite" and all(
        type(value) in _PLAIN for row in rows for value in row.values()
    )
    if not plain:
        conn.execute(table.insert(), list(rows))
        return
    names = ", ".join(f'"{c}"' for c in columns)
    values = ", ".join(f"json_extract(value, '$[{i}]')" for i in range(len(columns)))
    conn.exec_driver_sql(
        f'INSERT INTO "{table.name}" ({names}) SELECT {values} FROM json_each(?)',
        (jsonvalue.dumps([[row[c] for c in columns] for row in rows]),),
    )
