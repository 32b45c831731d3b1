"""The redaction gate.

Everything agentctx persists (event text and payloads, session state, metadata)
passes through the engine's :class:`Redactor` first, and the event store refuses
any event that is not marked redacted. This module is the single place a real
PII redactor plugs in; :class:`PassThroughRedactor` finds nothing and changes
nothing, but still marks what it saw, so the gate is exercised on every write.
"""

from __future__ import annotations

from collections.abc import Iterable
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
        """Redact every string inside a JSON value, object keys included, keeping structure."""
        ...


@runtime_checkable
class AllowListRedactor(Redactor, Protocol):
    """A redactor that can leave given values alone (per-agent and per-session allow-lists)."""

    def with_allow_list(self, values: Iterable[str]) -> Redactor:
        """The same redactor, also leaving ``values`` as they are."""
        ...


def redact_identifier(redactor: Redactor, value: str) -> Redacted:
    """``value``, an identifier (call id, idempotency key, author, tool name), redacted.

    With a redactor that has ``redact_identifier`` (``PIIRedactor``), findings become
    stable tokens, so equal identifiers stay equal; any other redactor redacts it as text.
    """
    method = getattr(redactor, "redact_identifier", None)
    if method is not None:
        result: Redacted = method(value)
        return result
    return redactor.redact_text(value)


def forget_texts(redactor: object) -> None:
    """Drop what ``redactor`` remembers of the texts it saw, as once a user's data is
    deleted: a ``PIIRedactor`` remembers identifiers it found nothing in (its
    ``forget_texts``); a redactor without that method keeps nothing."""
    method = getattr(redactor, "forget_texts", None)
    if method is not None:
        method()


class PassThroughRedactor:
    """A redactor that finds nothing: what runs when redaction is switched off."""

    def redact_text(self, text: str) -> Redacted:
        return Redacted(text)

    def redact_identifier(self, value: str) -> Redacted:
        return Redacted(value)

    def redact_json(self, value: Any) -> Redacted:
        return Redacted(value)

    def with_allow_list(self, values: Iterable[str]) -> Redactor:
        """Itself: nothing is redacted, so nothing needs allowing."""
        return self
