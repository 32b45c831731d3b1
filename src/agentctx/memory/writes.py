"""The writes of consolidation: a new memory, a merge, a supersession, a restored
statement; each a compare-and-set on the memory's version, with its history entry and
its audit record in the same transaction (:mod:`agentctx.memory.consolidate` decides
which)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, update

from agentctx.ids import new_id
from agentctx.memory import store
from agentctx.memory.audit import AuditSink, memory_record
from agentctx.memory.config import MemoryConfig
from agentctx.memory.models import (
    Memory,
    MemoryCandidate,
    MemoryKind,
    ProceduralData,
    Provenance,
    procedural_data,
    procedural_record,
)
from agentctx.memory.timeline import began, why
from agentctx.sessions.audit import AuditRecord
from agentctx.storage.schema import memories

# A single session's word is capped at this confidence: an extreme one-off sample must
# not outweigh repeated evidence (seed 003 A.1.7).
ONE_OFF_CONFIDENCE_CAP = 0.8
_MAX_KEYWORDS = 20


@dataclass
class ConsolidationReport:
    """What one consolidation did, by memory id."""

    created: list[str] = field(default_factory=list)
    merged: list[str] = field(default_factory=list)
    staled: list[str] = field(default_factory=list)
    skipped: int = 0  # candidates dropped (opt-out, or the run was already applied)
    retries: int = 0  # compare-and-set conflicts reloaded and retried

    @property
    def touched(self) -> list[str]:
        """Every memory written, once."""
        return list(dict.fromkeys(self.created + self.merged + self.staled))


@dataclass
class Run:
    """One attempt at applying a run: what it writes, and its audit records (written in
    its transaction, emitted once it committed)."""

    user_id: str
    session_id: str | None
    extractor_version: str
    model: str | None
    now: datetime
    sink: AuditSink | None
    report: ConsolidationReport = field(default_factory=ConsolidationReport)
    records: list[AuditRecord] = field(default_factory=list)

    def audit(self, conn: Connection, action: str, memory_id: str, **meta: Any) -> None:
        if self.sink is None:
            return
        record = memory_record(
            action,
            self.user_id,
            memory_id,
            session_id=self.session_id,
            extractor=self.extractor_version,
            **meta,
        )
        self.sink.write(record, conn)
        self.records.append(record)


def merged_confidence(existing: float, incoming: float) -> float:
    """Independent evidence: 1 - (1 - a)(1 - b), capped below 1."""
    return min(0.99, 1.0 - (1.0 - existing) * (1.0 - incoming))


def merge_data(kind: MemoryKind, old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """Structured data merged: procedural counts add (success rate becomes the weighted
    average), failure reasons add, the best iteration count is the lowest; other kinds
    keep their keys and gain the new ones."""
    if kind is not MemoryKind.PROCEDURAL:
        return {**new, **old}
    a, b = procedural_data(old), procedural_data(new)
    reasons = dict(a.failure_reasons)
    for reason, count in b.failure_reasons.items():
        reasons[reason] = reasons.get(reason, 0) + count
    best = [n for n in (a.best_iterations, b.best_iterations) if n is not None]
    merged = ProceduralData(
        scenario=a.scenario,
        tools=a.tools,
        successes=a.successes + b.successes,
        failures=a.failures + b.failures,
        failure_reasons=reasons,
        best_iterations=min(best) if best else None,
    )
    return procedural_record(merged)


class MemoryWrites:
    """The writes consolidation makes, for one memory configuration (its time to live
    per kind)."""

    def __init__(self, config: MemoryConfig) -> None:
        self.config = config

    def create(
        self,
        conn: Connection,
        run: Run,
        candidate: MemoryCandidate,
        *,
        inherited: Sequence[Provenance] = (),
        validity: dict[str, Any] | None = None,
        reason: str | None = None,
    ) -> Memory:
        memory_id = "mem_" + new_id().replace("-", "")
        sessions = len({s.session_id for s in (*candidate.sources, *inherited)})
        data = dict(candidate.data)
        content = candidate.content
        if candidate.kind is MemoryKind.PROCEDURAL and data:
            stats = procedural_data(data)
            data, content = procedural_record(stats), stats.render()
        now = run.now
        row: dict[str, Any] = {
            "memory_id": memory_id,
            "user_id": run.user_id,
            "agent_id": candidate.agent_id,
            "session_id": candidate.session_id,
            "kind": candidate.kind.value,
            "subject": candidate.subject,
            "content": content,
            "data": data,
            "keywords": list(candidate.keywords)[:_MAX_KEYWORDS],
            "confidence": _capped(candidate.confidence, sessions),
            "support_count": 0,
            "tainted": candidate.tainted,
            "version": 1,
            "status": "active",
            "extractor_version": run.extractor_version,
            "model": run.model,
            "created_at": now,
            "updated_at": now,
            "expires_at": self.expiry(candidate.kind, now),
            "valid_from": candidate.ts or now,
            "valid_to": None,
            "superseded_by": None,
            **(validity or {}),
        }
        store.insert_memory(conn, row)
        support = store.add_sources(
            conn, run.user_id, memory_id, (*inherited, *candidate.sources), now
        )
        conn.execute(
            update(memories).where(memories.c.memory_id == memory_id).values(support_count=support)
        )
        row["support_count"] = support
        store.record_change(
            conn,
            run.user_id,
            memory_id,
            version=1,
            action="create",
            old_value=None,
            new_value=store.value_of(row),
            reason=reason or ("extracted" if candidate.sources else "added"),
            source=source_of(candidate, run.extractor_version, run.model),
            now=now,
        )
        contested = row["status"] != "active"
        run.report.created.append(memory_id)
        if contested:
            run.report.staled.append(memory_id)
        run.audit(
            conn,
            "memory.contest" if contested else "memory.create",
            memory_id,
            kind=candidate.kind.value,
            version=1,
            support=support,
        )
        return store.load(conn, run.user_id, [memory_id])[0]

    def merge(
        self, conn: Connection, run: Run, memory: Memory, candidate: MemoryCandidate
    ) -> Memory:
        now = run.now
        support = store.add_sources(conn, run.user_id, memory.memory_id, candidate.sources, now)
        new_sessions = support - memory.support_count
        incoming = _capped(
            candidate.confidence, max(1, len({s.session_id for s in candidate.sources}))
        )
        confidence = (
            merged_confidence(memory.confidence, incoming)
            if new_sessions > 0
            else max(memory.confidence, incoming)
        )
        keywords = list(dict.fromkeys([*memory.keywords, *candidate.keywords]))[:_MAX_KEYWORDS]
        data = merge_data(memory.kind, memory.data, candidate.data)
        values: dict[str, Any] = {
            "data": data,
            "keywords": keywords,
            "confidence": confidence,
            "support_count": support,
            "tainted": memory.tainted or candidate.tainted,
            "updated_at": now,
            "expires_at": self.expiry(memory.kind, now),
        }
        if memory.kind is MemoryKind.PROCEDURAL and data:
            # The text says what the merged counts say, never what the first run said.
            values["content"] = procedural_data(data).render()
        store.cas_update(conn, run.user_id, memory.memory_id, memory.version, values)
        old = store.value_of(memory.model_dump())
        new = {**old, **store.value_of({**memory.model_dump(), **values})}
        store.record_change(
            conn,
            run.user_id,
            memory.memory_id,
            version=memory.version + 1,
            action="merge",
            old_value=old,
            new_value=new,
            reason="duplicate of a new candidate",
            source=source_of(candidate, None, None),
            now=now,
        )
        run.report.merged.append(memory.memory_id)
        run.audit(
            conn,
            "memory.merge",
            memory.memory_id,
            kind=memory.kind.value,
            version=memory.version + 1,
            support=support,
        )
        return memory.model_copy(
            update={**values, "keywords": tuple(keywords), "version": memory.version + 1}
        )

    def supersede(
        self, conn: Connection, run: Run, rival: Memory, statement: Memory, *, said: datetime
    ) -> None:
        """End ``rival``'s validity when ``statement`` was first said."""
        reason = why(
            "supersede",
            statement=statement.memory_id,
            rival=rival,
            support=statement.support_count,
            said=said,
        )
        values = {
            "status": "stale",
            "valid_to": max(said, began(rival)),
            "superseded_by": statement.memory_id,
            "updated_at": run.now,
        }
        self.change(conn, run, rival, values, action="supersede", reason=reason)
        run.report.staled.append(rival.memory_id)

    def restore(self, conn: Connection, run: Run, memory: Memory, reason: str) -> Memory:
        """Make a contested statement the believed one."""
        values = {
            "status": "active",
            "valid_to": None,
            "superseded_by": None,
            "updated_at": run.now,
        }
        self.change(conn, run, memory, values, action="restore", reason=reason)
        run.report.staled = [i for i in run.report.staled if i != memory.memory_id]
        return memory.model_copy(update={**values, "version": memory.version + 1})

    def change(
        self,
        conn: Connection,
        run: Run,
        memory: Memory,
        values: dict[str, Any],
        *,
        action: str,
        reason: str,
    ) -> None:
        store.change(
            conn,
            memory,
            values,
            version=memory.version,
            action=action,
            reason=reason,
            source={},
            now=run.now,
        )
        run.audit(
            conn,
            f"memory.{action}",
            memory.memory_id,
            kind=memory.kind.value,
            version=memory.version + 1,
        )

    def expiry(self, kind: MemoryKind, now: datetime) -> datetime | None:
        ttl: timedelta | None = self.config.ttl.get(kind)
        return now + ttl if ttl is not None else None


def _capped(confidence: float, sessions: int) -> float:
    return min(confidence, ONE_OFF_CONFIDENCE_CAP) if sessions <= 1 else confidence


def source_of(
    candidate: MemoryCandidate, extractor_version: str | None, model: str | None
) -> dict[str, Any]:
    return {
        "sessions": sorted({s.session_id for s in candidate.sources}),
        "events": [s.event_id for s in candidate.sources][:20],
        "extractor_version": extractor_version
        or (candidate.sources[0].extractor_version if candidate.sources else None),
        "model": model,
    }


__all__ = [
    "ONE_OFF_CONFIDENCE_CAP",
    "ConsolidationReport",
    "MemoryWrites",
    "Run",
    "merge_data",
    "merged_confidence",
]
