"""The memory tables: reading and writing memories with compare-and-set and history.

Every write names the version it read and fails with ``StaleMemory`` when another
writer got there first (seed 003 A.1.8: optimistic lock); every write appends to
``memory_history`` in the same transaction, so no change is ever silently lost.
Deleting is a status (``deleted``) with a history entry; ``purge_user`` removes a
user's memories for real (``delete_user_data``).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, delete, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert

from agentctx.errors import MemoryNotFound, StaleMemory
from agentctx.memory.models import Memory, MemoryChange, MemoryKind, Provenance
from agentctx.storage.schema import (
    MEMORY_TABLES,
    memories,
    memory_history,
    memory_settings,
    memory_sources,
)

# What the history keeps of a memory's value (old and new).
_VALUE_FIELDS = (
    "content",
    "subject",
    "data",
    "keywords",
    "confidence",
    "support_count",
    "tainted",
    "status",
    "expires_at",
    "valid_from",
    "valid_to",
    "superseded_by",
)
_TIMES = ("expires_at", "valid_from", "valid_to")


def value_of(row: Any) -> dict[str, Any]:
    """The history form of a memory row (JSON-ready)."""
    value = {name: row.get(name) for name in _VALUE_FIELDS}
    for name in _TIMES:
        if value[name] is not None:
            value[name] = value[name].isoformat()
    value["keywords"] = list(value["keywords"])
    return value


def memory_from_row(row: Any, sources: Sequence[Provenance] = ()) -> Memory:
    """A Memory from a ``memories`` row (and its provenance rows)."""
    return Memory(
        memory_id=row["memory_id"],
        user_id=row["user_id"],
        agent_id=row["agent_id"],
        session_id=row["session_id"],
        kind=MemoryKind(row["kind"]),
        subject=row["subject"],
        content=row["content"],
        data=dict(row["data"] or {}),
        keywords=tuple(row["keywords"] or ()),
        confidence=float(row["confidence"]),
        support_count=int(row["support_count"]),
        tainted=bool(row["tainted"]),
        version=int(row["version"]),
        status=row["status"],
        extractor_version=row["extractor_version"],
        model=row["model"],
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        expires_at=row["expires_at"],
        sources=tuple(sources),
        valid_from=row["valid_from"],
        valid_to=row["valid_to"],
        superseded_by=row["superseded_by"],
    )


def load_rows(conn: Connection, user_id: str, memory_ids: Sequence[str]) -> dict[str, Any]:
    """``memories`` rows by id (only the user's)."""
    if not memory_ids:
        return {}
    # By primary key alone, the user checked here: with the user in the WHERE clause
    # SQLite's planner prefers the (user_id, status, kind) index and scans the user.
    rows = conn.execute(
        select(memories).where(memories.c.memory_id.in_(list(memory_ids)))
    ).mappings()
    return {row["memory_id"]: row for row in rows if row["user_id"] == user_id}


def load_sources(conn: Connection, memory_ids: Sequence[str]) -> dict[str, list[Provenance]]:
    """Provenance of memories, by memory id, oldest first."""
    found: dict[str, list[Provenance]] = {memory_id: [] for memory_id in memory_ids}
    if not memory_ids:
        return found
    rows = conn.execute(
        select(memory_sources)
        .where(memory_sources.c.memory_id.in_(list(memory_ids)))
        .order_by(memory_sources.c.created_at, memory_sources.c.seq)
    ).mappings()
    for row in rows:
        found[row["memory_id"]].append(
            Provenance(
                session_id=row["session_id"],
                event_id=row["event_id"],
                seq=row["seq"],
                extractor_version=row["extractor_version"],
                model=row["model"],
            )
        )
    return found


def load(conn: Connection, user_id: str, memory_ids: Sequence[str]) -> list[Memory]:
    """Memories by id with their provenance, in the order asked (missing ids skipped)."""
    rows = load_rows(conn, user_id, memory_ids)
    sources = load_sources(conn, list(rows))
    return [memory_from_row(rows[m], sources[m]) for m in memory_ids if m in rows]


def get_one(conn: Connection, user_id: str, memory_id: str) -> Memory:
    """One memory of the user (MemoryNotFound for another user's or a missing one)."""
    found = load(conn, user_id, [memory_id])
    if not found:
        raise MemoryNotFound(memory_id)
    return found[0]


def insert_memory(conn: Connection, row: dict[str, Any]) -> None:
    """Insert a new memory row (version 1)."""
    conn.execute(insert(memories), [row])


def add_sources(
    conn: Connection, user_id: str, memory_id: str, sources: Sequence[Provenance], now: datetime
) -> int:
    """Record provenance (each event once); returns the distinct sessions it now has."""
    if sources:
        rows = [
            {
                "memory_id": memory_id,
                "user_id": user_id,
                "session_id": source.session_id,
                "event_id": source.event_id,
                "seq": source.seq,
                "extractor_version": source.extractor_version,
                "model": source.model,
                "created_at": now,
            }
            for source in {(s.session_id, s.event_id): s for s in sources}.values()
        ]
        dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
        conn.execute(
            dialect_insert(memory_sources).on_conflict_do_nothing(
                index_elements=["memory_id", "session_id", "event_id"]
            ),
            rows,
        )
    return int(
        conn.execute(
            select(func.count(func.distinct(memory_sources.c.session_id))).where(
                memory_sources.c.memory_id == memory_id
            )
        ).scalar_one()
    )


def cas_update(
    conn: Connection,
    user_id: str,
    memory_id: str,
    expected_version: int,
    values: dict[str, Any],
) -> None:
    """Write ``values`` and bump the version, if the memory is still at
    ``expected_version``; else StaleMemory (MemoryNotFound if it is gone)."""
    result = conn.execute(
        update(memories)
        .where(
            memories.c.user_id == user_id,
            memories.c.memory_id == memory_id,
            memories.c.version == expected_version,
        )
        .values(**values, version=expected_version + 1)
    )
    if result.rowcount != 1:
        actual = conn.execute(
            select(memories.c.version).where(
                memories.c.user_id == user_id, memories.c.memory_id == memory_id
            )
        ).scalar()
        if actual is None:
            raise MemoryNotFound(memory_id)
        raise StaleMemory(memory_id, expected=expected_version, actual=int(actual))


def change(
    conn: Connection,
    memory: Memory,
    values: dict[str, Any],
    *,
    version: int,
    action: str,
    reason: str,
    source: dict[str, Any],
    now: datetime,
) -> None:
    """Write ``values`` over ``memory`` if it is still at ``version`` (:func:`cas_update`)
    and append the change to its history, old and new value: one way to change a memory,
    whoever changes it (consolidation, the API)."""
    cas_update(conn, memory.user_id, memory.memory_id, version, values)
    old = value_of(memory.model_dump())
    record_change(
        conn,
        memory.user_id,
        memory.memory_id,
        version=version + 1,
        action=action,
        old_value=old,
        new_value={**old, **value_of({**memory.model_dump(), **values})},
        reason=reason,
        source=source,
        now=now,
    )


def record_change(
    conn: Connection,
    user_id: str,
    memory_id: str,
    *,
    version: int,
    action: str,
    old_value: dict[str, Any] | None,
    new_value: dict[str, Any] | None,
    reason: str,
    source: dict[str, Any],
    now: datetime,
) -> None:
    """Append one entry to a memory's history."""
    conn.execute(
        insert(memory_history),
        [
            {
                "memory_id": memory_id,
                "user_id": user_id,
                "version": version,
                "action": action,
                "old_value": old_value,
                "new_value": new_value,
                "reason": reason,
                "source": source,
                "ts": now,
            }
        ],
    )


def history(conn: Connection, user_id: str, memory_id: str) -> list[MemoryChange]:
    """A memory's changes, oldest first."""
    rows = conn.execute(
        select(memory_history)
        .where(memory_history.c.user_id == user_id, memory_history.c.memory_id == memory_id)
        .order_by(memory_history.c.history_id)
    ).mappings()
    return [
        MemoryChange(
            memory_id=row["memory_id"],
            version=row["version"],
            action=row["action"],
            old_value=row["old_value"],
            new_value=row["new_value"],
            reason=row["reason"],
            source=dict(row["source"] or {}),
            ts=row["ts"],
        )
        for row in rows
    ]


def declarative_opt_out(conn: Connection, user_id: str) -> bool:
    """Whether the user opted out of declarative memory."""
    value = conn.execute(
        select(memory_settings.c.declarative_opt_out).where(memory_settings.c.user_id == user_id)
    ).scalar()
    return bool(value)


def set_declarative_opt_out(conn: Connection, user_id: str, value: bool, now: datetime) -> None:
    """Record the user's choice (upsert)."""
    dialect_insert = pg_insert if conn.dialect.name == "postgresql" else sqlite_insert
    statement = dialect_insert(memory_settings).values(
        user_id=user_id, declarative_opt_out=value, updated_at=now
    )
    conn.execute(
        statement.on_conflict_do_update(
            index_elements=["user_id"],
            set_={"declarative_opt_out": value, "updated_at": now},
        )
    )


def purge_user(conn: Connection, user_id: str) -> dict[str, int]:
    """Delete every memory row of a user (memories, provenance, history, runs, settings)."""
    return {
        table.name: int(conn.execute(delete(table).where(table.c.user_id == user_id)).rowcount or 0)
        for table in MEMORY_TABLES
    }


def purge_memories(conn: Connection, memory_ids: Sequence[str]) -> None:
    """Delete memories with their provenance and history."""
    ids = list(memory_ids)
    conn.execute(delete(memory_sources).where(memory_sources.c.memory_id.in_(ids)))
    conn.execute(delete(memory_history).where(memory_history.c.memory_id.in_(ids)))
    conn.execute(delete(memories).where(memories.c.memory_id.in_(ids)))
