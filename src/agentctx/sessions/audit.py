"""The audit log: who did what to which session, when, and how it went.

Every load, append, state update, turn end, delete and sweep writes one record
(seed 003 A.2.3 fields) to the ``audit`` table (inside the same transaction as
the change it describes, when there is one) and, as a JSON line, to the
``agentctx.audit`` logger, which the engine points at ``<home>/audit.jsonl``.
Records hold ids and outcomes, never content.
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


_handlers_lock = threading.Lock()
_file_handlers: dict[Path, logging.Handler] = {}


def attach_audit_file(path: Path) -> None:
    """Write audit records as JSON lines to ``path`` (once per path per process)."""
    path = path.resolve()
    with _handlers_lock:
        if path in _file_handlers:
            return
        path.parent.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(path, encoding="utf-8")
        handler.setFormatter(_JsonLineFormatter())
        logger = logging.getLogger(AUDIT_LOGGER)
        logger.addHandler(handler)
        logger.setLevel(logging.INFO)
        logger.propagate = False
        _file_handlers[path] = handler


class AuditLog:
    """Writes audit records to the table and the JSON-lines logger."""

    def __init__(self, db: Database) -> None:
        self._db = db
        self._logger = logging.getLogger(AUDIT_LOGGER)

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
        self._logger.info(record.action, extra={"audit": entry})

    def deny(self, record: AuditRecord, error: AgentCtxError) -> NoReturn:
        """Record a refused or failed operation, then raise ``error``."""
        record.status, record.error_code = "error", error.code
        self.record(record)
        raise error

    def record(self, record: AuditRecord) -> None:
        """Store and emit a record that is not part of another transaction (e.g. a denial)."""
        self.write(record)
        self.emit(record)
