"""The audit trail of long-term memory: every write, merge, supersession, injection
decision and deletion, as ids, kinds and outcomes (never content).

Records go to the engine's audit log (the ``audit`` table and the ``agentctx.audit``
JSON lines). A consolidation writes its records in its own transaction, so a rolled back
or retried run leaves none; injection decisions are written off the window's thread.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Protocol

from sqlalchemy import Connection

from agentctx.sessions.audit import AuditRecord

ACTIONS = (
    "memory.create",
    "memory.merge",
    "memory.supersede",
    "memory.contest",
    "memory.restore",
    "memory.update",
    "memory.delete",
    "memory.inject",
)
"""The audit actions of memory."""


class AuditSink(Protocol):
    """Where audit records go (the engine's :class:`~agentctx.sessions.audit.AuditLog`)."""

    def write(self, record: AuditRecord, conn: Connection | None = None) -> None:
        """Store ``record`` in ``conn``'s transaction (or its own)."""

    def emit(self, record: AuditRecord) -> None:
        """Send ``record`` to the JSON-lines log, after its transaction committed."""


def memory_record(
    action: str,
    user_id: str,
    memory_id: str,
    *,
    kind: str,
    version: int,
    session_id: str | None = None,
    **meta: Any,
) -> AuditRecord:
    """One memory change as an audit record: ids, kind, version and outcome only."""
    return AuditRecord(
        action=action,
        user_id=user_id,
        session_id=session_id,
        meta={"memory_id": memory_id, "kind": kind, "version": version, **meta},
    )


def injection_record(
    user_id: str,
    agent_id: str | None,
    *,
    injected: Sequence[str],
    withheld: dict[str, str],
) -> AuditRecord:
    """A window's injection decision: the memories injected and, for each one found but
    withheld, why (``support``, ``confidence``, ``tainted``, ``agent``, ``limit``)."""
    return AuditRecord(
        action="memory.inject",
        user_id=user_id,
        meta={"agent_id": agent_id, "injected": list(injected), "withheld": withheld},
    )


__all__ = ["ACTIONS", "AuditSink", "injection_record", "memory_record"]
