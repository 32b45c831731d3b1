"""Long-term memory (seeds 003 §5, 8.2, A.1; 002 LongTermMemory; 001 user profile).

* :mod:`~agentctx.memory.models`: :class:`Memory`, its kinds, provenance and history.
* :mod:`~agentctx.memory.extract`: candidates from a session's redacted events: rules
  (self-statements, preferences, decisions, dates), procedural statistics from
  tool_call → tool_result sequences, or one structured model call.
* :mod:`~agentctx.memory.consolidate`: merge duplicates, resolve contradictions,
  compare-and-set with retries, idempotent runs.
* :mod:`~agentctx.memory.index`: hybrid lexical + dense search weighted by confidence
  and freshness.
* :mod:`~agentctx.memory.service`: ``engine.memory``: CRUD with history, search,
  extraction triggers, opt-out, the ``## Memory (Verified)`` source of windows.
* :mod:`~agentctx.memory.tool`: memory as a tool, in OpenAI's and Anthropic's formats.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentctx.events import Event
from agentctx.llm.chat import LLM, LLMFailureHook
from agentctx.llm.embeddings import Embedder
from agentctx.llm.query_vectors import QueryVectors
from agentctx.memory.audit import AuditSink
from agentctx.memory.config import MemoryConfig
from agentctx.memory.consolidate import ConsolidationReport, Consolidator
from agentctx.memory.extract import (
    CLAUSES_VERSION,
    PROCEDURAL_VERSION,
    RULES_VERSION,
    LLMExtractor,
    classifier_for,
    extract_declarative,
    extract_procedural,
)
from agentctx.memory.extraction import EventLoader
from agentctx.memory.index import MemoryIndex
from agentctx.memory.items import memory_item
from agentctx.memory.models import (
    DECLARATIVE_KINDS,
    Memory,
    MemoryCandidate,
    MemoryChange,
    MemoryHit,
    MemoryKind,
    ProceduralData,
    Provenance,
)
from agentctx.memory.service import MEMORY_JOB, MemoryService, MemoryTimeout
from agentctx.memory.tool import handle_memory_tool, memory_tools
from agentctx.privacy.redactor import Redactor
from agentctx.storage.database import Database


def build_memory_service(
    db: Database,
    load_events: EventLoader,
    *,
    config: MemoryConfig,
    embedder: Embedder | None,
    llm: LLM | None,
    on_llm_failure: LLMFailureHook | None = None,
    query_vectors: QueryVectors | None = None,
    redactor: Redactor | None = None,
    audit: AuditSink | None = None,
) -> MemoryService:
    """The engine's memory: the index over ``embedder``, rules (or ``llm``) for
        declarative memory and event replay for procedural memory. A model failure is
        reported to ``on_llm_failure`` (the rules stand in). ``query_vectors``, when given,
        are the event index's, so a query both indexes search is embedded once. ``redactor``
    cleans every memory before it is written; ``audit`` records every memory write and
    injection decision."""
    declarative_kinds = frozenset(DECLARATIVE_KINDS)
    if llm is not None:
        extractor = LLMExtractor(llm)

        def with_model(events: Sequence[Event]) -> list[MemoryCandidate]:
            found, report = extractor.extract(events)
            if report.failure is not None and on_llm_failure is not None and events:
                on_llm_failure(events[0].user_id, events[0].session_id, MEMORY_JOB, report.failure)
            return found

        declarative = (extractor.extractor_version, declarative_kinds, with_model)
    elif (classifier := classifier_for(embedder)) is not None:
        # The rules, and the model's reading of the first-person clauses they miss.

        def with_clauses(events: Sequence[Event]) -> list[MemoryCandidate]:
            return extract_declarative(
                events, extractor_version=CLAUSES_VERSION, classifier=classifier
            )

        declarative = (CLAUSES_VERSION, declarative_kinds, with_clauses)
    else:
        declarative = (RULES_VERSION, declarative_kinds, extract_declarative)
    return MemoryService(
        db,
        load_events,
        config=config,
        index=MemoryIndex(db, embedder, query_vectors=query_vectors),
        extractors=[
            declarative,
            (PROCEDURAL_VERSION, frozenset({MemoryKind.PROCEDURAL}), extract_procedural),
        ],
        model=llm.name if llm is not None else None,
        redactor=redactor,
        audit=audit,
    )


__all__ = [
    "DECLARATIVE_KINDS",
    "MEMORY_JOB",
    "ConsolidationReport",
    "Consolidator",
    "Memory",
    "MemoryCandidate",
    "MemoryChange",
    "MemoryConfig",
    "MemoryHit",
    "MemoryIndex",
    "MemoryKind",
    "MemoryService",
    "MemoryTimeout",
    "ProceduralData",
    "Provenance",
    "build_memory_service",
    "handle_memory_tool",
    "memory_item",
    "memory_tools",
]
