"""The redaction gate.

Everything agentctx persists (event text and payloads, session state, metadata)
passes through the engine's :class:`Redactor` first, and the event store refuses
any event that is not marked redacted. This module is the single place a real
PII redactor plugs in; :class:`PassThroughRedactor` finds nothing and changes
nothing, but still marks what it saw, so the gate is exercised on every write.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable


@dataclass(frozen=True, slots=True)
class Redacted:
    """The result of redacting one value: the cleaned value and the entity types found."""

    value: Any
    entity_types: frozenset[str] = field(default_factory=frozenset)


@runtime_checkable
class Redactor(Protocol):
    """Removes personal data from text and JSON before it is stored."""

    def redact_text(self, text: str) -> Redacted:
        """Redact one string; ``value`` is the cleaned string."""
        ...

    def redact_json(self, value: Any) -> Redacted:
        """Redact every string inside a JSON value, keeping keys and structure."""
        ...


class PassThroughRedactor:
    """A redactor that finds nothing: the default until a real one is configured."""

    def redact_text(self, text: str) -> Redacted:
        return Redacted(text)

    def redact_json(self, value: Any) -> Redacted:
        return Redacted(value)
