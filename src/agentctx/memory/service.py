"""``engine.memory``: long-term memory of users, learned from their sessions.

Extraction (after each turn, on request, or in a batch over a time range;
:mod:`agentctx.memory.extraction`) proposes candidates from stored, redacted events;
consolidation merges them into the user's memories; search ranks them; windows inject
the verified ones. Users can opt out of declarative memory, list, update, delete and
read the history of every memory.

Every write passes the engine's redactor first (added, updated, extracted and merged
memories alike): no personal data reaches a memory, its history or its index.
"""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import Connection, func, select

from agentctx.cache.base import HotCache, NullCache
from agentctx.cache.memories import MemoryReads
from agentctx.context.sources import MemoryItem
from agentctx.errors import InvalidInput, OptedOut, StaleMemory
from agentctx.events import utcnow
from agentctx.ids import check_optional_id
from agentctx.inputs import check_text
from agentctx.jobs import Job
from agentctx.jsonvalue import check_json
from agentctx.memory import store
from agentctx.memory.audit import AuditSink, memory_record
from agentctx.memory.config import MemoryConfig
from agentctx.memory.consolidate import ConsolidationReport, Consolidator
from agentctx.memory.extraction import EventLoader, Extraction, Extractor
from agentctx.memory.injection import Injection, MemoryTimeout
from agentctx.memory.inputs import (
    MAX_SUBJECT,
    check_as_of,
    check_candidate,
    check_content,
    check_fields,
    check_flag,
    check_kind,
    check_kinds,
    check_memory_ref,
    check_page,
    check_procedural,
    check_query,
    check_user,
    check_version,
)
from agentctx.memory.models import (
    Memory,
    MemoryChange,
    MemoryHit,
    MemoryKind,
    MemoryStatus,
    Provenance,
    procedural_data,
    procedural_record,
)
from agentctx.privacy.redactor import PassThroughRedactor, Redactor
from agentctx.storage.database import Database
from agentctx.storage.schema import memories

if TYPE_CHECKING:
    from agentctx.memory.index import MemoryIndex

Memories = list[Memory]
Hits = list[MemoryHit]
Changes = list[MemoryChange]

MEMORY_JOB = "memory"
"""The name of the turn-end extraction job."""


class MemoryService:
    """The long-term memory of every user of one engine."""

    def __init__(
        self,
        db: Database,
        load_events: EventLoader,
        *,
        config: MemoryConfig,
        index: MemoryIndex | None,
        extractors: Sequence[tuple[str, frozenset[MemoryKind], Extractor]] = (),
        model: str | None = None,
        cache: HotCache | None = None,
        redactor: Redactor | None = None,
        audit: AuditSink | None = None,
    ) -> None:
        self.db = db
        self.audit = audit
        self.redactor: Redactor = redactor or PassThroughRedactor()
        self.config = config
        self.index = index
        self.use_cache(cache or NullCache())
        self.consolidator = Consolidator(
            db,
            config=config,
            similar=self._similar if index is not None else None,
            redactor=self.redactor,
            audit=audit,
        )
        self.extraction = Extraction(
            db,
            load_events,
            self.consolidator,
            config=config,
            extractors=extractors,
            model=model,
            reindex=self._reindex,
        )
        self.injection = Injection(config, self.search, audit)

    def use_cache(self, cache: HotCache) -> None:
        """Serve list and search reads through ``cache`` (agentctx.cache), keyed by the
        user's memory generation read fresh from the database."""
        self.cache = cache
        self._hot = MemoryReads(cache, self.db, self.index)

    @property
    def max_tokens(self) -> int | None:
        """The token budget of the ``## Memory (Verified)`` block."""
        return self.config.inject_tokens

    # CRUD -----------------------------------------------------------------------------

    def add(
        self,
        user_id: str,
        content: str,
        *,
        kind: MemoryKind | str = MemoryKind.FACT,
        subject: str | None = None,
        data: dict[str, Any] | None = None,
        keywords: Sequence[str] = (),
        confidence: float = 0.9,
        agent_id: str | None = None,
        session_id: str | None = None,
        sources: Sequence[Provenance] = (),
    ) -> Memory:
        """Add a memory (consolidated like an extracted one: a duplicate merges)."""
        check_user(user_id)
        check_content(content)
        check_procedural(check_kind(str(kind)), data)
        check_fields(
            subject=subject,
            data=data,
            keywords=keywords,
            confidence=confidence,
            agent_id=agent_id,
            session_id=session_id,
        )
        candidate = check_candidate(
            kind=kind,
            content=content,
            subject=subject,
            data=data or {},
            keywords=tuple(keywords),
            confidence=confidence,
            agent_id=agent_id,
            session_id=session_id,
            sources=tuple(sources),
        )
        report = self.consolidator.apply(user_id, [candidate], extractor_version="api")
        if not report.touched:
            if report.skipped:
                raise OptedOut("memory not added: the user opted out of declarative memory")
            raise InvalidInput("memory not added")
        self._reindex(user_id, report.touched)
        return self.get(user_id, (report.created or report.merged)[0])

    def get(self, user_id: str, memory_id: str) -> Memory:
        """One memory of the user, with its provenance (MemoryNotFound otherwise)."""
        check_memory_ref(user_id, memory_id)
        with self.db.read() as conn:
            return store.get_one(conn, user_id, memory_id)

    def list(
        self,
        user_id: str,
        *,
        kinds: Sequence[MemoryKind | str] | None = None,
        status: MemoryStatus | None = "active",
        agent_id: str | None = None,
        limit: int = 100,
        offset: int = 0,
    ) -> Memories:
        """The user's memories, newest update first."""
        check_user(user_id)
        check_optional_id("agent_id", agent_id)
        check_page(limit, offset)
        kinds = check_kinds(kinds)
        query = select(memories.c.memory_id).where(memories.c.user_id == user_id)
        if kinds:
            query = query.where(memories.c.kind.in_([MemoryKind(k).value for k in kinds]))
        if status is not None:
            query = query.where(memories.c.status == status)
        if agent_id is not None:
            query = query.where(memories.c.agent_id == agent_id)
        query = query.order_by(memories.c.updated_at.desc(), memories.c.memory_id)

        def read() -> Memories:
            with self.db.read() as conn:
                ids = builtins.list(conn.execute(query.limit(limit).offset(offset)).scalars())
                return store.load(conn, user_id, ids)

        args = {"kinds": sorted(map(str, kinds or ())), "status": status, "agent_id": agent_id}
        return self._hot.cached_list(user_id, {**args, "limit": limit, "offset": offset}, read)

    def update(
        self,
        user_id: str,
        memory_id: str,
        *,
        content: str | None = None,
        data: dict[str, Any] | None = None,
        keywords: Sequence[str] | None = None,
        confidence: float | None = None,
        tainted: bool | None = None,
        expected_version: int | None = None,
        reason: str = "updated",
    ) -> Memory:
        """Change a memory. With ``expected_version`` a compare-and-set (StaleMemory when
        it moved on); without, the current version is read and the write retried."""
        check_memory_ref(user_id, memory_id)
        check_fields(content=content, data=data, keywords=keywords, confidence=confidence)
        check_version(expected_version)
        check_text(reason, "reason", max_chars=MAX_SUBJECT)
        if tainted is not None:
            check_flag(tainted, "tainted")
        values: dict[str, Any] = {}
        if content is not None:
            if not content.strip():
                raise InvalidInput("memory content must not be empty")
            values["content"] = content
        if data is not None:
            kind = self.get(user_id, memory_id).kind
            check_procedural(kind, data)
            values["data"] = data
            if kind is MemoryKind.PROCEDURAL:
                if content is not None:
                    raise InvalidInput(
                        "a procedural memory's text is made from its data: update the data"
                    )
                # Its text says what its statistics say (the redactor runs after).
                values["data"] = procedural_record(procedural_data(data))
                values["content"] = procedural_data(data).render()
        if keywords is not None:
            values["keywords"] = builtins.list(keywords)
        if confidence is not None:
            if not 0.0 <= confidence <= 1.0:
                raise InvalidInput(f"confidence must be in [0, 1], got {confidence}")
            values["confidence"] = confidence
        if tainted is not None:
            values["tainted"] = tainted
        if not values:
            raise InvalidInput("nothing to update")
        check_json({**values, "reason": reason}, where="memory")
        values, reason = self._redacted(values), str(self.redactor.redact_text(reason).value)
        self._write(
            user_id,
            memory_id,
            values,
            action="update",
            reason=reason,
            expected_version=expected_version,
        )
        self._reindex(user_id, [memory_id])
        return self.get(user_id, memory_id)

    def _redacted(self, values: dict[str, Any]) -> dict[str, Any]:
        """An update's values with their text redacted (content, keywords, data)."""
        clean = dict(values)
        if "content" in clean:
            clean["content"] = str(self.redactor.redact_text(clean["content"]).value)
        if "keywords" in clean:
            clean["keywords"] = [str(self.redactor.redact_text(k).value) for k in clean["keywords"]]
        if "data" in clean:
            clean["data"] = self.redactor.redact_json(clean["data"]).value
        return clean

    def delete(
        self, user_id: str, memory_id: str, *, expected_version: int | None = None
    ) -> Memory:
        """Mark a memory deleted (kept in history; never searched or injected again)."""
        check_memory_ref(user_id, memory_id)
        check_version(expected_version)
        self._write(
            user_id,
            memory_id,
            {"status": "deleted"},
            action="delete",
            reason="deleted",
            expected_version=expected_version,
        )
        if self.index is not None:
            self.index.remove([memory_id])
        self.cache.drop_memories(user_id)  # the generation moved anyway; free the space
        return self.get(user_id, memory_id)

    def history(self, user_id: str, memory_id: str) -> Changes:
        """Every change of a memory, oldest first."""
        check_memory_ref(user_id, memory_id)
        with self.db.read() as conn:
            store.get_one(conn, user_id, memory_id)
            return store.history(conn, user_id, memory_id)

    def _write(
        self,
        user_id: str,
        memory_id: str,
        values: dict[str, Any],
        *,
        action: str,
        reason: str,
        expected_version: int | None,
    ) -> None:
        for _ in range(8):
            now = utcnow()
            try:
                with self.db.write() as conn:
                    current = store.get_one(conn, user_id, memory_id)
                    version = expected_version if expected_version is not None else current.version
                    store.change(
                        conn,
                        current,
                        {**values, "updated_at": now},
                        version=version,
                        action=action,
                        reason=reason,
                        source={"api": True},
                        now=now,
                    )
                    record = memory_record(
                        f"memory.{action}",
                        user_id,
                        memory_id,
                        kind=current.kind.value,
                        version=version + 1,
                        fields=sorted(values),
                    )
                    if self.audit is not None:
                        self.audit.write(record, conn)
                if self.audit is not None:
                    self.audit.emit(record)
                return
            except StaleMemory:
                if expected_version is not None:
                    raise
        raise StaleMemory(memory_id, expected=-1, actual=-1)

    # Control ---------------------------------------------------------------------------

    def set_opt_out(self, user_id: str, *, declarative: bool) -> None:
        """Opt the user out of (or back into) declarative memory; procedural statistics
        are kept either way (seed 003 A.1.10). Opting out does not delete what exists:
        ``engine.delete_user_data`` or ``delete`` does."""
        check_user(user_id)
        check_flag(declarative, "declarative")
        with self.db.write() as conn:
            store.set_declarative_opt_out(conn, user_id, declarative, utcnow())

    def opted_out(self, user_id: str) -> bool:
        """Whether the user opted out of declarative memory."""
        with self.db.read() as conn:
            return store.declarative_opt_out(conn, user_id)

    def ready(self) -> None:
        """Make the memory index's tables now if they are not yet (otherwise done on
        first use), so that :meth:`purge_user` can run inside a write transaction."""
        if self.index is not None:
            self.index.ready()

    def purge_user(self, conn: Connection, user_id: str) -> dict[str, int]:
        """Delete every memory of a user, with history, provenance and index documents,
        in the caller's write transaction ``conn`` (begun after :meth:`ready`); counts
        by table. What this process holds of them in memory is the caller's to drop once
        it committed (:meth:`forget_user`)."""
        if self.index is not None:
            ids = builtins.list(
                conn.execute(
                    select(memories.c.memory_id).where(memories.c.user_id == user_id)
                ).scalars()
            )
            if ids:  # first: the term counts to take off are read from the documents
                self.index.remove(ids, conn=conn)
        return store.purge_user(conn, user_id)

    def forget_user(self, user_id: str) -> None:
        """Drop what this process holds in memory of the user's memories: cached reads
        and the index's vector codes (stale ones could not be served; free them)."""
        self.cache.drop_memories(user_id)
        if self.index is not None:
            self.index.forget_user(user_id)

    def purge_expired(self, now: datetime | None = None) -> int:
        """Delete memories past their time to live (``ttl`` per kind); returns how many."""
        now = now or utcnow()
        if self.index is not None:
            self.index.ready()  # its tables are made in a write of their own, not inside ours
        with self.db.write() as conn:
            ids = builtins.list(
                conn.execute(
                    select(memories.c.memory_id).where(
                        memories.c.expires_at.is_not(None), memories.c.expires_at <= now
                    )
                ).scalars()
            )
            if ids:
                if self.index is not None:
                    # First, in the same transaction: deleting a memory deletes its index
                    # documents too, and the term counts to take off are read from them.
                    self.index.remove(ids, conn=conn)
                store.purge_memories(conn, ids)
        return len(ids)

    # Search and injection --------------------------------------------------------------

    def search(
        self,
        user_id: str,
        query: str | None = None,
        *,
        kinds: Sequence[MemoryKind | str] | None = None,
        agent_id: str | None = None,
        filters: dict[str, Any] | None = None,
        limit: int = 10,
        as_of: datetime | None = None,
    ) -> Hits:
        """The user's memories best matching ``query`` (hybrid lexical + dense, weighted
        by confidence and freshness): those believed true now, or with ``as_of`` (an
        aware datetime) those that were true then (superseded ones included, as they
        stood; contested and deleted ones never)."""
        check_user(user_id)
        check_optional_id("agent_id", agent_id)
        check_query(query, filters)
        check_page(limit)
        check_as_of(as_of)
        kinds = check_kinds(kinds)
        if self.index is None:
            raise InvalidInput("memory search needs the memory index")
        kind_values = [MemoryKind(k) for k in kinds] if kinds else None
        index = self.index
        args = {"query": query, "kinds": kind_values, "agent_id": agent_id, "filters": filters}
        if as_of is not None:
            args["as_of"] = as_of.isoformat()
        return self._hot.cached_search(
            user_id,
            {**args, "limit": limit},
            lambda: index.search(
                user_id,
                query,
                kinds=kind_values,
                agent_id=agent_id,
                filters=filters,
                limit=limit,
                as_of=as_of,
            ),
            index=index,
        )

    def verified(
        self, user_id: str, agent_id: str | None, query: str | None, *, limit: int
    ) -> Hits:
        """Memories fit to inject: active, untainted, unexpired, supported by at least
        ``min_support_sessions`` sessions and at least ``min_confidence`` confident."""
        return self.injection.decide(user_id, agent_id, query, limit=limit)[0]

    def memories(
        self, user_id: str, agent_id: str, query: str | None, *, limit: int
    ) -> Sequence[MemoryItem]:
        """The window's memory source: verified memories, within the retrieval timeout
        (MemoryTimeout past it). The decision is audited off the window's thread."""
        return self.injection.memories(user_id, agent_id, query, limit=limit)

    def flush_audit(self, timeout: float = 10.0) -> None:
        """Wait until the injection decisions made so far are in the audit log."""
        self.injection.flush_audit(timeout)

    # Extraction ------------------------------------------------------------------------

    @property
    def model(self) -> str | None:
        """The model that extraction names in the memories it writes (None: rules)."""
        return self.extraction.model

    @property
    def extractors(self) -> builtins.list[tuple[str, frozenset[MemoryKind], Extractor]]:
        """The extractors, run in this order: (version, kinds it proposes, function).
        The list may be changed in place or replaced."""
        return self.extraction.extractors

    @extractors.setter
    def extractors(self, value: Sequence[tuple[str, frozenset[MemoryKind], Extractor]]) -> None:
        self.extraction.extractors = builtins.list(value)

    def extract_session(self, user_id: str, session_id: str) -> ConsolidationReport:
        """Extract from the session's events not yet extracted, and consolidate.

        Idempotent: each (session, extractor version, kind) run records how far it got,
        in the transaction that writes its memories, so a rerun writes nothing new.
        """
        return self.extraction.session(user_id, session_id)

    def extract_since(
        self, since: datetime, until: datetime | None = None, *, user_id: str | None = None
    ) -> dict[tuple[str, str], ConsolidationReport]:
        """The scheduled batch (seed 003's time-based trigger): extract every session
        with events in [since, until)."""
        return self.extraction.since(since, until, user_id=user_id)

    def on_turn_end(self, job: Job) -> None:
        """The turn-end job: extract from the session's new events (every turn, or only
        turns with a signal when ``extract_after_each_turn`` is off)."""
        self.extraction.on_turn_end(job)

    def counts(self, user_id: str) -> dict[str, int]:
        """Memories of the user by status."""
        with self.db.read() as conn:
            rows = conn.execute(
                select(memories.c.status, func.count())
                .where(memories.c.user_id == user_id)
                .group_by(memories.c.status)
            )
            return {row[0]: int(row[1]) for row in rows}

    # Index -----------------------------------------------------------------------------

    def _similar(
        self, user_id: str, kind: MemoryKind, content: str
    ) -> builtins.list[tuple[Memory, float]]:
        assert self.index is not None
        return builtins.list(self.index.similar(user_id, kind, content, limit=5))

    def _reindex(self, user_id: str, memory_ids: Sequence[str]) -> None:
        if self.index is None or not memory_ids:
            return
        with self.db.read() as conn:
            found = store.load(conn, user_id, builtins.list(memory_ids))
        self.index.index_memories(found)


__all__ = ["MEMORY_JOB", "MemoryService", "MemoryTimeout"]
