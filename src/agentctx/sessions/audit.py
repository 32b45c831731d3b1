"""The audit log: who did what to which session, when, and how it went.

Every load, append, state update, turn end, delete and sweep writes one record
(seed 003 A.2.3 fields) to the ``audit`` table (inside the same transaction as
the change it describes, when there is one) and, as a JSON line, to the
``agentctx.audit`` logger: an engine's records go to its own ``<home>/audit.jsonl``,
and handlers added to the logger receive every engine's. Records hold ids and
outcomes, never content.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field, fields
from datetime import datetime
from pathlib import Path
from typing import Any, NoReturn

from sqlalchemy import Connection, insert

from agentctx import jsonvalue
from agentctx.errors import AgentCtxError
from agentctx.events import utcnow
from agentctx.storage import fastsql
from agentctx.storage.chain import format_ts
from agentctx.storage.database import Database
from agentctx.storage.schema import audit

AUDIT_LOGGER = "agentctx.audit"


@dataclass(slots=True)
class AuditRecord:
    """One audit entry (seed 003 A.2.3)."""

    action: str
    status: str = "ok"
    user_id: str | None = None
    session_id: str | None = None
    request_id: str | None = None
    event_id: str | None = None
    event_type: str | None = None
    state_version: int | None = None
    duration_ms: float | None = None
    error_code: str | None = None
    meta: dict[str, Any] = field(default_factory=dict)
    ts: datetime = field(default_factory=utcnow)


def _as_row(record: AuditRecord) -> dict[str, Any]:
    # Shallow on purpose: dataclasses.asdict deep-copies, and this runs on every write.
    return {f.name: getattr(record, f.name) for f in fields(record)}


_AUDIT_COLUMNS = [column.name for column in audit.columns if column.name != "audit_id"]


def _insert(conn: Connection, row: dict[str, Any]) -> None:
    fastsql.statement(conn, "insert_audit", lambda: insert(audit), _AUDIT_COLUMNS).execute(
        conn, row
    ).close()


class _JsonLineFormatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        entry = getattr(record, "audit", None)
        return jsonvalue.dumps(entry) if entry is not None else super().format(record)


class _AuditFileHandler(logging.FileHandler):
    """One engine's JSON-lines file. It takes only that engine's records (every engine
    logs through the one ``agentctx.audit`` logger), and a failure to write (a full
    disk, a home removed) is reported through logging's ``handleError``, never raised:
    the ``audit`` table holds the record already, and the change it describes is done."""

    def __init__(self, path: Path) -> None:
        super().__init__(path, encoding="utf-8")
        self.path = path
        self.users = 0
        self.setFormatter(_JsonLineFormatter())

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, AUDIT_FILE_ATTR, None) != self.path:
            return False
        return super().filter(record)

    def emit(self, record: logging.LogRecord) -> None:
        try:
            # FileHandler opens its file outside StreamHandler's own guard: a handler
            # closed by someone else's logging.config.dictConfig reopens it here.
            super().emit(record)
        except Exception:
            self.handleError(record)


AUDIT_FILE_ATTR = "audit_file"
"""The log record attribute naming the file an audit record is for."""

_handlers_lock = threading.Lock()
_file_handlers: dict[Path, _AuditFileHandler] = {}


def attach_audit_file(path: Path) -> Path:
    """Write the audit records emitted for ``path`` to it as JSON lines; returns the
    resolved path to emit with.

    One handler per path per process, shared by the engines that attach it and
    removed (its file closed) when the last of them calls :func:`detach_audit_file`.
    """
    path = path.resolve()
    with _handlers_lock:
        handler = _file_handlers.get(path)
        if handler is None:
            path.parent.mkdir(parents=True, exist_ok=True)
            handler = _AuditFileHandler(path)
            logger = logging.getLogger(AUDIT_LOGGER)
            # With redaction on, records of this logger are redacted as they are
            # created (agentctx.privacy.logging), before any handler sees them.
            logger.addHandler(handler)
            logger.setLevel(logging.INFO)
            logger.propagate = False
            _file_handlers[path] = handler
        handler.users += 1
    return path


def detach_audit_file(path: Path) -> None:
    """Undo one :func:`attach_audit_file` of ``path`` (the engine using it closed)."""
    with _handlers_lock:
        handler = _file_handlers.get(path)
        if handler is None:
            return
        handler.users -= 1
        if handler.users > 0:
            return
        del _file_handlers[path]
        logging.getLogger(AUDIT_LOGGER).removeHandler(handler)
        handler.close()


class AuditLog:
    """Writes audit records to the table and the JSON-lines logger."""

    def __init__(self, db: Database, file: Path | None = None) -> None:
        """``file``: where the records this log emits go (a path attached with
        :func:`attach_audit_file`); handlers added to ``agentctx.audit`` see them all."""
        self._db = db
        self._logger = logging.getLogger(AUDIT_LOGGER)
        self._file = file

    def write(self, record: AuditRecord, conn: Connection | None = None) -> None:
        """Store ``record``: in ``conn``'s transaction if given, else in its own."""
        row = _as_row(record)
        if conn is not None:
            _insert(conn, row)
        else:
            with self._db.write() as own:
                _insert(own, row)

    def emit(self, record: AuditRecord) -> None:
        """Send ``record`` to the JSON-lines log (call after the transaction committed)."""
        if not self._logger.isEnabledFor(logging.INFO):
            return
        entry = _as_row(record)
        entry["ts"] = format_ts(record.ts)
        entry["level"] = "INFO" if record.status == "ok" else "WARN"
        self._logger.info(record.action, extra={"audit": entry, AUDIT_FILE_ATTR: self._file})

    def deny(self, record: AuditRecord, error: AgentCtxError) -> NoReturn:
        """Record a refused or failed operation, then raise ``error``."""
        record.status, record.error_code = "error", error.code
        self.record(record)
        raise error

    def record(self, record: AuditRecord) -> None:
        """Store and emit a record that is not part of another transaction (e.g. a denial)."""
        self.write(record)
        self.emit(record)
