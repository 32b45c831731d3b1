"""Extractors: what a session's stored events teach about the user and the agent's tools.

Each extractor reads a session's stored, redacted events and returns
:class:`~agentctx.memory.models.MemoryCandidate` objects citing the events they came
from; consolidation decides what becomes a memory.

* :func:`extract_declarative`: rule-based self-statements, preferences, decisions and
  dated episodes (English and Chinese), offline;
* :class:`StatementClassifier`: with an embedding model, the first-person clauses the
  rules do not read, classified by the attribute they state;
* :func:`extract_procedural`: tool-path statistics per task from tool call/result
  sequences;
* :class:`LLMExtractor`: one structured chat-model call, the rules standing in when
  the model fails;
* :func:`extraction_signals`: the event triggers of seed 003 A.1.3 (errors, low
  confidence, repeated reflection, final answers).
"""

from agentctx.memory.extract.categories import (
    CLAUSES_VERSION,
    StatementClassifier,
    classifier_for,
)
from agentctx.memory.extract.llm import (
    EXTRACTION_SCHEMA,
    LLM_VERSION,
    ExtractionReport,
    LLMExtractor,
)
from agentctx.memory.extract.procedural import PROCEDURAL_VERSION, extract_procedural
from agentctx.memory.extract.rules import (
    RULES_VERSION,
    SECRET_TYPES,
    extract_declarative,
    has_secret,
    is_user_message,
)
from agentctx.memory.extract.triggers import LOW_CONFIDENCE, SIGNALS, extraction_signals

__all__ = [
    "CLAUSES_VERSION",
    "EXTRACTION_SCHEMA",
    "LLM_VERSION",
    "LOW_CONFIDENCE",
    "PROCEDURAL_VERSION",
    "RULES_VERSION",
    "SECRET_TYPES",
    "SIGNALS",
    "StatementClassifier",
    "classifier_for",
    "ExtractionReport",
    "LLMExtractor",
    "extract_declarative",
    "extract_procedural",
    "extraction_signals",
    "has_secret",
    "is_user_message",
]
