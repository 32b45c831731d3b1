"""Consolidation: candidates become new memories, merge into duplicates, or resolve
contradictions (seed 003 A.1.4, A.1.8).

For each candidate of a user:

1. **Duplicate** (a memory of the same kind whose text is at least
   ``duplicate_similarity`` similar, or a procedural memory of the same scenario and
   tool path): merge. Provenance and support (independent sessions) add up, counts
   add, so success rates become weighted averages, keywords are united, and
   confidence grows with independent evidence.
2. **Contradiction** (an active memory of the same kind and subject saying something
   else): the fresher and more confident one stays active, the other is marked
   ``stale``; both stay, with the reason in their history.
3. Otherwise a new memory.

Every candidate is redacted first (content, subject, keywords, data keys and values),
whichever path it came by (the API, the memory tools, extraction), so memories, their
history and their index hold no personal data.

Guarantees: one run (the candidates of one session's new events, for one extractor
and kind) is applied in one transaction together with its idempotency row, so a rerun
writes nothing new and a crash writes nothing half. Runs of one user are serialized
(SQLite's writer lock; a per-user advisory lock on PostgreSQL), and every update is a
compare-and-set on the memory's version: a write that loses (to an API update, say)
reloads, merges again and retries.
"""

from __future__ import annotations

import re
import zlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Connection, func, insert, select, text, update

from agentctx.errors import StaleMemory
from agentctx.events import utcnow
from agentctx.ids import new_id
from agentctx.memory import store
from agentctx.memory.config import MemoryConfig
from agentctx.memory.models import (
    DECLARATIVE_KINDS,
    Memory,
    MemoryCandidate,
    MemoryKind,
    ProceduralData,
    procedural_data,
    procedural_record,
)
from agentctx.privacy.redactor import PassThroughRedactor, Redactor
from agentctx.storage.database import Database
from agentctx.storage.schema import memories, memory_runs

SimilarFinder = Callable[[str, MemoryKind, str], Sequence[tuple[Memory, float]]]
"""(user id, kind, text) -> the user's most similar memories of that kind, with their
similarity in [0, 1]."""

# A single session's word is capped at this confidence: an extreme one-off sample must
# not outweigh repeated evidence (seed 003 A.1.7).
ONE_OFF_CONFIDENCE_CAP = 0.8
_MAX_KEYWORDS = 20
_MAX_RETRIES = 8
_WORD = re.compile(r"\w+", re.UNICODE)


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


def normalized(text_value: str) -> str:
    """Lower-cased words: what exact-duplicate checks compare."""
    return " ".join(_WORD.findall(text_value.lower()))


def word_similarity(first: str, second: str) -> float:
    """Jaccard similarity of the two texts' word sets."""
    a, b = set(_WORD.findall(first.lower())), set(_WORD.findall(second.lower()))
    if not a or not b:
        return 1.0 if a == b else 0.0
    return len(a & b) / len(a | b)


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


class Consolidator:
    """Applies candidates to a user's memories."""

    def __init__(
        self,
        db: Database,
        *,
        config: MemoryConfig,
        similar: SimilarFinder | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.db = db
        self.config = config
        self._similar = similar
        self.redactor: Redactor = redactor or PassThroughRedactor()

    def apply(
        self,
        user_id: str,
        candidates: Sequence[MemoryCandidate],
        *,
        run_key: str | None = None,
        session_id: str | None = None,
        through_seq: int = 0,
        extractor_version: str = "api",
        model: str | None = None,
        now: datetime | None = None,
    ) -> ConsolidationReport:
        """Consolidate ``candidates`` in one transaction (retried on conflicts).

        ``run_key``: the idempotency key of this extraction run; a run already applied
        with the same key up to ``through_seq`` writes nothing.
        """
        report = ConsolidationReport()
        unique = _unique([redact_candidate(self.redactor, c) for c in candidates])
        # Similar memories are looked up before the write transaction (the index reads
        # and sets itself up on connections of its own); inside it, each is reloaded at
        # its current version before it is merged.
        hints = [
            [
                m.memory_id
                for m, score in self._similar(user_id, c.kind, c.content)
                if score >= self.config.duplicate_similarity
            ]
            if self._similar is not None
            else []
            for c in unique
        ]
        for attempt in range(_MAX_RETRIES):
            report = ConsolidationReport(retries=attempt)
            try:
                with self.db.write() as conn:
                    self._lock_user(conn, user_id)
                    if run_key is not None and self._applied(conn, run_key, through_seq):
                        report.skipped = len(candidates)
                        return report
                    opted_out = store.declarative_opt_out(conn, user_id)
                    for candidate, similar in zip(unique, hints, strict=True):
                        if opted_out and candidate.kind in DECLARATIVE_KINDS:
                            report.skipped += 1
                            continue
                        self._one(
                            conn,
                            user_id,
                            candidate,
                            report,
                            similar=similar,
                            extractor_version=extractor_version,
                            model=model,
                            now=now or utcnow(),
                        )
                    if run_key is not None:
                        self._record_run(
                            conn,
                            run_key,
                            user_id=user_id,
                            session_id=session_id or "",
                            through_seq=through_seq,
                            memory_ids=report.touched,
                            now=now or utcnow(),
                        )
                return report
            except StaleMemory:
                continue  # reload, merge again, retry
        raise StaleMemory("(consolidation)", expected=-1, actual=-1)

    # One candidate -------------------------------------------------------------------

    def _one(
        self,
        conn: Connection,
        user_id: str,
        candidate: MemoryCandidate,
        report: ConsolidationReport,
        *,
        similar: list[str],
        extractor_version: str,
        model: str | None,
        now: datetime,
    ) -> None:
        duplicate = self._duplicate(conn, user_id, candidate, similar)
        if duplicate is not None:
            self._merge(conn, user_id, duplicate, candidate, now)
            report.merged.append(duplicate.memory_id)
            return
        rival = self._contradicted(conn, user_id, candidate)
        memory_id = self._create(
            conn, user_id, candidate, extractor_version=extractor_version, model=model, now=now
        )
        report.created.append(memory_id)
        if rival is None:
            return
        # The fresher and more confident memory stays; the candidate is the fresher one.
        incoming = _capped(candidate.confidence, len({s.session_id for s in candidate.sources}))
        if incoming >= rival.confidence:
            self._mark_stale(conn, user_id, rival, f"contradicted by {memory_id}", now)
            report.staled.append(rival.memory_id)
        else:
            row = store.load(conn, user_id, [memory_id])[0]
            self._mark_stale(
                conn, user_id, row, f"contradicts {rival.memory_id}, which is more confident", now
            )
            report.staled.append(memory_id)

    def _duplicate(
        self, conn: Connection, user_id: str, candidate: MemoryCandidate, similar: list[str]
    ) -> Memory | None:
        kind = candidate.kind
        if kind is MemoryKind.PROCEDURAL and candidate.subject:
            same = self._active(conn, user_id, kind, subject=candidate.subject)
            return same[0] if same else None
        key = normalized(candidate.content)
        for memory in self._active(
            conn, user_id, kind, subject=candidate.subject, content=candidate.content
        ):
            if normalized(memory.content) == key or (
                word_similarity(memory.content, candidate.content)
                >= self.config.duplicate_similarity
            ):
                return memory
        for memory in store.load(conn, user_id, similar):
            if memory.status == "active" and memory.kind is kind:
                return memory
        return None

    def _contradicted(
        self, conn: Connection, user_id: str, candidate: MemoryCandidate
    ) -> Memory | None:
        if not candidate.subject or candidate.kind is MemoryKind.PROCEDURAL:
            return None
        key = normalized(candidate.content)
        for memory in self._active(conn, user_id, candidate.kind, subject=candidate.subject):
            if normalized(memory.content) != key:
                return memory
        return None

    def _active(
        self,
        conn: Connection,
        user_id: str,
        kind: MemoryKind,
        *,
        subject: str | None,
        content: str | None = None,
    ) -> list[Memory]:
        query = select(memories.c.memory_id).where(
            memories.c.user_id == user_id,
            memories.c.kind == kind.value,
            memories.c.status == "active",
        )
        if subject is not None:
            query = query.where(memories.c.subject == subject)
        elif content is not None:
            # Without a subject: the same text (case aside) here, the rest by similarity.
            query = query.where(func.lower(memories.c.content) == content.lower())
        else:
            return []
        query = query.order_by(memories.c.updated_at.desc())
        ids = list(conn.execute(query.limit(20)).scalars())
        return store.load(conn, user_id, ids)

    # Writes --------------------------------------------------------------------------

    def _create(
        self,
        conn: Connection,
        user_id: str,
        candidate: MemoryCandidate,
        *,
        extractor_version: str,
        model: str | None,
        now: datetime,
    ) -> str:
        memory_id = "mem_" + new_id().replace("-", "")
        sessions = len({s.session_id for s in candidate.sources})
        data = dict(candidate.data)
        if candidate.kind is MemoryKind.PROCEDURAL and data:
            data = procedural_record(procedural_data(data))
        row = {
            "memory_id": memory_id,
            "user_id": user_id,
            "agent_id": candidate.agent_id,
            "session_id": candidate.session_id,
            "kind": candidate.kind.value,
            "subject": candidate.subject,
            "content": candidate.content,
            "data": data,
            "keywords": list(candidate.keywords)[:_MAX_KEYWORDS],
            "confidence": _capped(candidate.confidence, sessions),
            "support_count": 0,
            "tainted": candidate.tainted,
            "version": 1,
            "status": "active",
            "extractor_version": extractor_version,
            "model": model,
            "created_at": now,
            "updated_at": now,
            "expires_at": self._expiry(candidate.kind, now),
        }
        store.insert_memory(conn, row)
        support = store.add_sources(conn, user_id, memory_id, candidate.sources, now)
        conn.execute(
            update(memories).where(memories.c.memory_id == memory_id).values(support_count=support)
        )
        row["support_count"] = support
        store.record_change(
            conn,
            user_id,
            memory_id,
            version=1,
            action="create",
            old_value=None,
            new_value=store.value_of(row),
            reason="extracted" if candidate.sources else "added",
            source=_source_of(candidate, extractor_version, model),
            now=now,
        )
        return memory_id

    def _merge(
        self,
        conn: Connection,
        user_id: str,
        memory: Memory,
        candidate: MemoryCandidate,
        now: datetime,
    ) -> None:
        support = store.add_sources(conn, user_id, memory.memory_id, candidate.sources, now)
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
        values = {
            "data": merge_data(memory.kind, memory.data, candidate.data),
            "keywords": keywords,
            "confidence": confidence,
            "support_count": support,
            "tainted": memory.tainted or candidate.tainted,
            "updated_at": now,
            "expires_at": self._expiry(memory.kind, now),
        }
        store.cas_update(conn, user_id, memory.memory_id, memory.version, values)
        old = store.value_of(memory.model_dump())
        new = {**old, **store.value_of({**memory.model_dump(), **values})}
        store.record_change(
            conn,
            user_id,
            memory.memory_id,
            version=memory.version + 1,
            action="merge",
            old_value=old,
            new_value=new,
            reason="duplicate of a new candidate",
            source=_source_of(candidate, None, None),
            now=now,
        )

    def _mark_stale(
        self, conn: Connection, user_id: str, memory: Memory, reason: str, now: datetime
    ) -> None:
        store.cas_update(
            conn, user_id, memory.memory_id, memory.version, {"status": "stale", "updated_at": now}
        )
        old = store.value_of(memory.model_dump())
        store.record_change(
            conn,
            user_id,
            memory.memory_id,
            version=memory.version + 1,
            action="stale",
            old_value=old,
            new_value={**old, "status": "stale"},
            reason=reason,
            source={},
            now=now,
        )

    def _expiry(self, kind: MemoryKind, now: datetime) -> datetime | None:
        ttl: timedelta | None = self.config.ttl.get(kind)
        return now + ttl if ttl is not None else None

    # Idempotency and locking ---------------------------------------------------------

    @staticmethod
    def _lock_user(conn: Connection, user_id: str) -> None:
        if conn.dialect.name == "postgresql":
            key = zlib.crc32(f"agentctx-memory:{user_id}".encode())
            conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})

    @staticmethod
    def _applied(conn: Connection, run_key: str, through_seq: int) -> bool:
        done = conn.execute(
            select(memory_runs.c.through_seq).where(memory_runs.c.run_key == run_key)
        ).scalar()
        return done is not None and int(done) >= through_seq

    @staticmethod
    def _record_run(
        conn: Connection,
        run_key: str,
        *,
        user_id: str,
        session_id: str,
        through_seq: int,
        memory_ids: list[str],
        now: datetime,
    ) -> None:
        exists = conn.execute(
            select(memory_runs.c.memory_ids).where(memory_runs.c.run_key == run_key)
        ).first()
        if exists is None:
            conn.execute(
                insert(memory_runs),
                [
                    {
                        "run_key": run_key,
                        "user_id": user_id,
                        "session_id": session_id,
                        "through_seq": through_seq,
                        "memory_ids": memory_ids,
                        "created_at": now,
                    }
                ],
            )
        else:
            ids = list(dict.fromkeys([*(exists[0] or []), *memory_ids]))
            conn.execute(
                update(memory_runs)
                .where(memory_runs.c.run_key == run_key)
                .values(through_seq=through_seq, memory_ids=ids, created_at=now)
            )


def redact_candidate(redactor: Redactor, candidate: MemoryCandidate) -> MemoryCandidate:
    """``candidate`` with its text, subject, keywords and data (keys too) redacted."""
    content = str(redactor.redact_text(candidate.content).value)
    subject = (
        str(redactor.redact_text(candidate.subject).value)
        if candidate.subject is not None
        else None
    )
    keywords = tuple(str(redactor.redact_text(k).value) for k in candidate.keywords)
    data = redactor.redact_json(candidate.data).value
    if (
        content is candidate.content
        and subject is candidate.subject
        and keywords == candidate.keywords
        and data is candidate.data
    ):
        return candidate
    return candidate.model_copy(
        update={"content": content, "subject": subject, "keywords": keywords, "data": data}
    )


def _capped(confidence: float, sessions: int) -> float:
    return min(confidence, ONE_OFF_CONFIDENCE_CAP) if sessions <= 1 else confidence


def _unique(candidates: Sequence[MemoryCandidate]) -> list[MemoryCandidate]:
    """Candidates of one run that say the same thing are one candidate (sources united)."""
    by_key: dict[tuple[str, str], MemoryCandidate] = {}
    for candidate in candidates:
        key = (
            candidate.kind.value,
            candidate.subject or ""
            if candidate.kind is MemoryKind.PROCEDURAL
            else normalized(candidate.content),
        )
        seen = by_key.get(key)
        if seen is None:
            by_key[key] = candidate
            continue
        by_key[key] = seen.model_copy(
            update={
                "sources": (*seen.sources, *candidate.sources),
                "confidence": max(seen.confidence, candidate.confidence),
                "data": merge_data(seen.kind, seen.data, candidate.data)
                if seen.kind is MemoryKind.PROCEDURAL
                else seen.data,
            }
        )
    return list(by_key.values())


def _source_of(
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
    "Consolidator",
    "SimilarFinder",
    "merge_data",
    "merged_confidence",
    "normalized",
    "redact_candidate",
    "word_similarity",
]
