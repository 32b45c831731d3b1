"""Consolidation: candidates become new memories, merge into duplicates, or resolve
contradictions in time (seed 003 A.1.4, A.1.8).

For each candidate of a user, one rule:

1. **Duplicate** (an active memory saying the same: for a statement of a subject, the
   same value; otherwise the same text, or an embedding at least
   ``duplicate_similarity`` similar; a procedural memory of the same scenario and tool
   path): merge. Provenance and support (independent sessions) add up, counts add (so
   success rates become weighted averages), keywords are united, confidence grows with
   independent evidence, and a procedural memory's text is made again from the merged
   counts.
2. **A statement of a subject** that no active memory says the same as: resolved in
   time against the subject's current memory (:mod:`agentctx.memory.timeline`): it
   supersedes it (which ends its validity), is kept as contested, or is stored as what
   was true before. A contested statement said again gains support and may outweigh;
   a superseded fact said again is true again, from then on.
3. Otherwise a new memory.

Every candidate is redacted first (content, subject, keywords, data keys and values),
whichever path it came by (the API, the memory tools, extraction), so memories, their
history and their index hold no personal data. Every write, merge and supersession is
in the memory's history (with the reason) and in the audit log (ids and outcomes).

Guarantees: one run (the candidates of one session's new events, for one extractor
and kind) is applied in one transaction together with its idempotency row, so a rerun
writes nothing new and a crash writes nothing half. Runs of one user are serialized
(SQLite's writer lock; a per-user advisory lock on PostgreSQL), and every update is a
compare-and-set on the memory's version: a write that loses (to an API update, say)
reloads, merges again and retries.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, func, insert, or_, select, text, update

from agentctx.errors import StaleMemory
from agentctx.events import utcnow
from agentctx.memory import store
from agentctx.memory.audit import AuditSink
from agentctx.memory.config import MemoryConfig
from agentctx.memory.models import (
    CATEGORY,
    DECLARATIVE_KINDS,
    KEY,
    REPLACES,
    RETRACTED,
    Memory,
    MemoryCandidate,
    MemoryKind,
)
from agentctx.memory.timeline import (
    attribute_subjects,
    began,
    in_time,
    normalized,
    same_statement,
    shares_words,
    verdict,
    why,
    word_similarity,
)
from agentctx.memory.writes import (
    ONE_OFF_CONFIDENCE_CAP,
    ConsolidationReport,
    MemoryWrites,
    Run,
    merge_data,
    merged_confidence,
)
from agentctx.privacy.redactor import PassThroughRedactor, Redactor
from agentctx.storage.database import Database
from agentctx.storage.schema import memories, memory_runs

SimilarFinder = Callable[[str, MemoryKind, str], Sequence[tuple[Memory, float]]]
"""(user id, kind, text) -> the user's most similar memories of that kind, with their
similarity in [0, 1]."""

_MAX_RETRIES = 8


class Consolidator:
    """Applies candidates to a user's memories."""

    def __init__(
        self,
        db: Database,
        *,
        config: MemoryConfig,
        similar: SimilarFinder | None = None,
        redactor: Redactor | None = None,
        audit: AuditSink | None = None,
    ) -> None:
        self.db = db
        self.config = config
        self._similar = similar
        self.redactor: Redactor = redactor or PassThroughRedactor()
        self.audit = audit
        self.writes = MemoryWrites(config)

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
            run = Run(
                user_id=user_id,
                session_id=session_id,
                extractor_version=extractor_version,
                model=model,
                now=now or utcnow(),
                sink=self.audit,
                report=ConsolidationReport(retries=attempt),
            )
            report = run.report
            try:
                with self.db.write() as conn:
                    lock_user(conn, user_id)
                    if run_key is not None and self._applied(conn, run_key, through_seq):
                        report.skipped = len(candidates)
                        return report
                    opted_out = store.declarative_opt_out(conn, user_id)
                    for candidate, similar in zip(unique, hints, strict=True):
                        if opted_out and candidate.kind in DECLARATIVE_KINDS:
                            report.skipped += 1
                            continue
                        self._one(conn, user_id, candidate, run, similar=similar)
                    if run_key is not None:
                        self._record_run(
                            conn,
                            run_key,
                            user_id=user_id,
                            session_id=session_id or "",
                            through_seq=through_seq,
                            memory_ids=report.touched,
                            now=run.now,
                        )
            except StaleMemory:
                continue  # reload, merge again, retry
            for record in run.records:
                if self.audit is not None:
                    self.audit.emit(record)
            return report
        raise StaleMemory("(consolidation)", expected=-1, actual=-1)

    # One candidate -------------------------------------------------------------------

    def _one(
        self,
        conn: Connection,
        user_id: str,
        candidate: MemoryCandidate,
        run: Run,
        *,
        similar: list[str],
    ) -> None:
        duplicate = self._duplicate(conn, user_id, candidate, similar)
        if duplicate is not None:
            self.writes.merge(conn, run, duplicate, candidate)
            return
        if in_time(candidate):
            self._statement(conn, user_id, candidate, run)
            return
        self.writes.create(conn, run, candidate)

    def _statement(
        self, conn: Connection, user_id: str, candidate: MemoryCandidate, run: Run
    ) -> None:
        """A statement of a subject that no active memory says the same as: resolved
        against the subject's current memory by :func:`agentctx.memory.timeline.verdict`."""
        threshold = self.config.duplicate_similarity
        said = candidate.ts or run.now
        sessions = {s.session_id for s in candidate.sources}
        of_subject = self._of_subject(conn, user_id, candidate)
        if not any(m.status == "active" for m in of_subject):
            related = self._related(conn, user_id, candidate)
            of_subject = [related, *of_subject] if related is not None else of_subject
        rival = next(
            (m for m in of_subject if m.status == "active"),
            None,
        )
        earlier = next(
            (
                m
                for m in of_subject
                if m.status == "stale" and same_statement(m, candidate, threshold)
            ),
            None,
        )
        if earlier is not None and earlier.valid_to is None:
            # A contested statement said again: it gains support, and may now outweigh.
            statement = self.writes.merge(conn, run, earlier, candidate)
            if rival is None:
                self.writes.restore(conn, run, statement, "no other statement of its subject")
                return
            again = verdict(
                said=said,
                sessions=sessions,
                support=statement.support_count,
                rival=rival,
                config=self.config,
            )
            if again == "supersede":
                statement = self.writes.restore(
                    conn, run, statement, f"now outweighs {rival.memory_id}"
                )
                self.writes.supersede(conn, run, rival, statement, said=began(statement))
            return
        # A new statement; one that restates a fact superseded earlier continues it (a new
        # period of validity, with the earlier statement's sources and support).
        inherited = earlier.sources if earlier is not None else ()
        support = len(sessions | {s.session_id for s in inherited})
        outcome = (
            verdict(said=said, sessions=sessions, support=support, rival=rival, config=self.config)
            if rival is not None
            else None
        )
        validity: dict[str, Any] = {"valid_from": said}
        reason = f"restates {earlier.memory_id}" if earlier is not None else None
        if rival is not None and outcome is not None and outcome != "supersede":
            reason = why(outcome, statement="", rival=rival, support=support, said=said)
            validity["status"] = "stale"
            if outcome == "earlier":
                validity.update(valid_to=began(rival), superseded_by=rival.memory_id)
        created = self.writes.create(
            conn, run, candidate, inherited=inherited, validity=validity, reason=reason
        )
        if outcome == "supersede" and rival is not None:
            self.writes.supersede(conn, run, rival, created, said=said)

    def _duplicate(
        self, conn: Connection, user_id: str, candidate: MemoryCandidate, similar: list[str]
    ) -> Memory | None:
        kind = candidate.kind
        if kind is MemoryKind.PROCEDURAL and candidate.subject:
            same = self._active(conn, user_id, kind, subject=candidate.subject)
            return same[0] if same else None
        threshold = self.config.duplicate_similarity
        if in_time(candidate):
            for memory in self._of_subject(conn, user_id, candidate):
                if memory.status == "active" and same_statement(memory, candidate, threshold):
                    return memory
        else:
            key = normalized(candidate.content)
            for memory in self._active(
                conn, user_id, kind, subject=None, content=candidate.content
            ):
                if normalized(memory.content) == key:
                    return memory
        for memory in store.load(conn, user_id, similar):
            if memory.status != "active" or memory.kind is not kind:
                continue
            if memory.subject != candidate.subject:
                continue
            # Near in meaning is not the same value: two values named are compared as such.
            both_valued = memory.data.get("value") and candidate.data.get("value")
            if both_valued and not same_statement(memory, candidate, threshold):
                continue
            if bool(memory.data.get(RETRACTED)) != candidate.retracted:
                continue
            return memory
        return None

    def _of_subject(
        self, conn: Connection, user_id: str, candidate: MemoryCandidate
    ) -> list[Memory]:
        """The user's active and stale memories of the candidate's kind and subject,
        the most recently believed first."""
        query = (
            select(memories.c.memory_id)
            .where(
                memories.c.user_id == user_id,
                memories.c.kind == candidate.kind.value,
                memories.c.subject == candidate.subject,
                memories.c.status.in_(("active", "stale")),
            )
            .order_by(memories.c.updated_at.desc(), memories.c.memory_id.desc())
            .limit(50)
        )
        return store.load(conn, user_id, list(conn.execute(query).scalars()))

    def _related(self, conn: Connection, user_id: str, candidate: MemoryCandidate) -> Memory | None:
        """The rival of a retraction or a replacing statement of an attribute whose own
        subject has no active memory: the latest active memory of the attribute (for a
        retraction, one that shares a word with it)."""
        category = candidate.data.get(CATEGORY)
        if not isinstance(category, str) or not (
            candidate.retracted or candidate.data.get(REPLACES)
        ):
            return None
        heads = attribute_subjects(category)
        query = (
            select(memories.c.memory_id)
            .where(
                memories.c.user_id == user_id,
                memories.c.kind.in_([k.value for k in DECLARATIVE_KINDS]),
                memories.c.status == "active",
                or_(
                    *(memories.c.subject == head for head in heads),
                    *(memories.c.subject.startswith(f"{head}:", autoescape=True) for head in heads),
                ),
            )
            .order_by(memories.c.valid_from.desc(), memories.c.updated_at.desc())
            .limit(20)
        )
        key = str(candidate.data.get(KEY) or candidate.content)
        for memory in store.load(conn, user_id, list(conn.execute(query).scalars())):
            if memory.retracted or (candidate.retracted and not shares_words(key, memory.content)):
                continue
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

    # Idempotency and locking ---------------------------------------------------------

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


def lock_user(conn: Connection, user_id: str) -> None:
    """Serialize the user's memory writes for the rest of ``conn``'s write transaction
    (SQLite's writer lock does it already; a per-user advisory lock on PostgreSQL)."""
    if conn.dialect.name == "postgresql":
        key = zlib.crc32(f"agentctx-memory:{user_id}".encode())
        conn.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": key})


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


__all__ = [
    "ONE_OFF_CONFIDENCE_CAP",
    "ConsolidationReport",
    "Consolidator",
    "SimilarFinder",
    "merge_data",
    "merged_confidence",
    "normalized",
    "lock_user",
    "redact_candidate",
    "word_similarity",
]
