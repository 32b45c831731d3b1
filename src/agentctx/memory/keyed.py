"""Keyed memories: a memory the caller names by a subject of its own and writes in place.

Consolidation treats what it is given as evidence: a duplicate merges into the memory
it repeats, a contradiction stales the older statement. A record the caller keys
itself (a LangGraph store item under its namespace and key, say) is a value, not
evidence: :func:`put_keyed` writes it under its subject as given -- created, or
replaced in place (same memory id and creation time, a new version, the change in its
history) -- and never merges it into another memory, however similar. Two writers of
one subject cannot both create it: the lookup and the write are one transaction under
the user's write lock (SQLite's writer lock; a per-user advisory lock on PostgreSQL).

Everything else is as for any memory write: the text, subject, keywords and data are
redacted first, a user who opted out of declarative memory gets ``OptedOut``, and the
memory is indexed for search. Extraction may later merge a duplicate *candidate* into
a keyed memory (its support and keywords grow; its content and data keys stay).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, select

from agentctx.errors import OptedOut
from agentctx.events import utcnow
from agentctx.memory import store
from agentctx.memory.consolidate import lock_user, redact_candidate
from agentctx.memory.inputs import (
    check_candidate,
    check_content,
    check_fields,
    check_kind,
    check_procedural,
    check_user,
)
from agentctx.memory.models import DECLARATIVE_KINDS, Memory, MemoryKind
from agentctx.memory.writes import Run
from agentctx.storage.schema import memories

if TYPE_CHECKING:
    from agentctx.memory.service import MemoryService

KEYED_VERSION = "keyed"
"""The extractor version a keyed memory records: written by its owner, not learned."""


def stored_subject(memory: MemoryService, subject: str) -> str:
    """``subject`` as it is stored (redacted, as every subject is)."""
    return str(memory.redactor.redact_text(subject).value)


def find_keyed(
    memory: MemoryService, user_id: str, subject: str, *, kind: MemoryKind | str
) -> Memory | None:
    """The user's active memory of ``kind`` kept under ``subject`` (None if there is none)."""
    check_user(user_id)
    check_fields(subject=subject)
    kind = check_kind(str(kind))
    with memory.db.read() as conn:
        return _active(conn, user_id, kind, stored_subject(memory, subject))


def put_keyed(
    memory: MemoryService,
    user_id: str,
    subject: str,
    content: str,
    *,
    kind: MemoryKind | str = MemoryKind.FACT,
    data: dict[str, Any] | None = None,
    keywords: Sequence[str] = (),
    agent_id: str | None = None,
) -> Memory:
    """Write the memory kept under ``subject``: create it, or replace its content, data
    and keywords in place. Returns it as stored (redacted)."""
    check_user(user_id)
    check_content(content)
    kind = check_kind(str(kind))
    check_procedural(kind, data)
    check_fields(subject=subject, data=data, keywords=keywords, agent_id=agent_id)
    candidate = redact_candidate(
        memory.redactor,
        check_candidate(
            kind=kind,
            content=content,
            subject=subject,
            data=data or {},
            keywords=tuple(keywords),
            confidence=1.0,
            agent_id=agent_id,
        ),
    )
    writes = memory.consolidator.writes
    run = Run(
        user_id=user_id,
        session_id=None,
        extractor_version=KEYED_VERSION,
        model=None,
        now=utcnow(),
        sink=memory.audit,
    )
    with memory.db.write() as conn:
        lock_user(conn, user_id)
        if kind in DECLARATIVE_KINDS and store.declarative_opt_out(conn, user_id):
            raise OptedOut("memory not written: the user opted out of declarative memory")
        current = _active(conn, user_id, kind, str(candidate.subject))
        if current is None:
            memory_id = writes.create(conn, run, candidate).memory_id
        else:
            memory_id = current.memory_id
            values = {
                "content": candidate.content,
                "data": dict(candidate.data),
                "keywords": list(candidate.keywords),
                "agent_id": candidate.agent_id,
                "updated_at": run.now,
                "expires_at": writes.expiry(kind, run.now),
            }
            writes.change(
                conn, run, current, values, action="update", reason="replaced under its key"
            )
        written = store.get_one(conn, user_id, memory_id)
    if memory.audit is not None:
        for record in run.records:
            memory.audit.emit(record)
    if memory.index is not None:
        memory.index.index_memories([written])
    return written


def _active(conn: Connection, user_id: str, kind: MemoryKind, subject: str) -> Memory | None:
    ids = list(
        conn.execute(
            select(memories.c.memory_id)
            .where(
                memories.c.user_id == user_id,
                memories.c.kind == kind.value,
                memories.c.subject == subject,
                memories.c.status == "active",
            )
            .order_by(memories.c.updated_at.desc())
            .limit(1)
        ).scalars()
    )
    found = store.load(conn, user_id, ids)
    return found[0] if found else None


__all__ = ["KEYED_VERSION", "find_keyed", "put_keyed", "stored_subject"]
