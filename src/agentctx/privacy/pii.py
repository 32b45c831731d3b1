"""``PIIRedactor``: the real redactor behind the redaction gate.

It finds personal data with an :class:`~agentctx.privacy.analyzer.Analyzer` and
rewrites it with the configured operators. Found values go nowhere else: they are
not logged, not kept, not put in errors; only their entity types are reported.

Text in which nothing is found comes back as the very same object, and JSON
values in which nothing is found come back unchanged and uncopied, so the common
case costs no allocation, and at most one scan per recognizer: the analyzer skips
the recognizers a text's shape rules out (:mod:`agentctx.privacy.shape`).

JSON object keys are redacted too (a key can be an address: ``{"bob@x.io":
"owner"}``), with stable tokens. Identifiers (call ids, idempotency keys, authors, tool names) are
redacted with stable tokens (:meth:`PIIRedactor.redact_identifier`), so equal inputs
stay equal and different ones stay different.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Sequence
from typing import Any

from agentctx.privacy.analyzer import AllowList, Analyzer, RegexRecognizer, resolve_recognizer
from agentctx.privacy.config import RedactionConfig
from agentctx.privacy.findings import Finding, Recognizer
from agentctx.privacy.operators import (
    EncryptOperator,
    HashOperator,
    Operator,
    OperatorSet,
    ReplaceOperator,
)
from agentctx.privacy.recognizers.fields import FieldRecognizer
from agentctx.privacy.redactor import PassThroughRedactor, Redacted, Redactor

_NOTHING: frozenset[str] = frozenset()

_REPEATED_TEXT = 64
"""JSON strings up to this long are analyzed once per value in one redaction (keys and
short values repeat across a list of records)."""
# The identifier key when none is configured: tokens stay stable and distinct, but
# without a secret a guessed value can be confirmed; configure ``hash_key`` (or
# $AGENTCTX_REDACTION_KEY) so it cannot.
_UNKEYED_IDENTIFIERS = "agentctx identifier tokens (unkeyed)"

CLEAN_IDENTIFIERS_KEPT = 4096
"""How many identifiers in which nothing was found a redactor and the redactors made from
it with allow-lists remember together (then they start over): a turn's request id, its
author, tool and model names recur in every event."""

_REMEMBERED_IDENTIFIER_CHARS = 256

CLEAN_TEXTS_KEPT = 4096
"""How many short JSON strings (keys and values up to ``_REPEATED_TEXT`` characters) in
which nothing was found a redactor and the redactors made from it remember together (then
they start over), apart from the identifiers, so a large tool result does not push a
turn's identifiers out."""

_scopes = itertools.count()


class PIIRedactor:
    """Finds personal data in text and JSON and replaces it before anything is stored.

    ``PIIRedactor(recognizers)`` replaces every finding with a typed placeholder;
    pass ``operators`` for masking, hashing or encryption, or build one from a
    :class:`RedactionConfig` with :meth:`from_config`. Thread-safe.
    """

    def __init__(
        self,
        recognizers: Sequence[Recognizer],
        *,
        operators: OperatorSet | None = None,
        min_score: float = 0.5,
        allow: AllowList | Iterable[str] = (),
        identifier_key: str | None = None,
        identifier_chars: int = 10,
    ) -> None:
        self.analyzer = Analyzer(recognizers, min_score=min_score, allow_list=allow)
        # The record fields of JSON values are read by the field recognizer's table, when
        # it is one of the recognizers.
        self._fields = next((r for r in recognizers if isinstance(r, FieldRecognizer)), None)
        self.operators = operators or OperatorSet(ReplaceOperator())
        identifier = IdentifierOperator(identifier_key or _UNKEYED_IDENTIFIERS, identifier_chars)
        self.identifiers = OperatorSet(identifier)
        self.keys = _key_operators(self.operators, identifier)
        # Identifiers an analyzer found nothing in (they hold no personal data), by the
        # analyzer: this redactor and those made from it by ``with_allow_list`` share one
        # bound, however many allow-lists a server's agents and sessions have.
        self._clean: set[tuple[int, str]] = set()
        self._clean_texts: set[tuple[int, str]] = set()
        self._scope = next(_scopes)

    @classmethod
    def from_config(
        cls,
        config: RedactionConfig | None = None,
        *,
        recognizers: Sequence[Recognizer] | None = None,
    ) -> PIIRedactor:
        """A redactor as ``config`` describes it.

        ``recognizers`` replaces the built-in set (``default_recognizers(names=…)``);
        the configured custom patterns, named recognizers and Presidio are added to either.
        """
        config = config or RedactionConfig()
        chosen: list[Recognizer]
        if recognizers is None:
            from agentctx.privacy.recognizers import default_recognizers  # noqa: PLC0415

            chosen = list(default_recognizers(names=config.names))
        else:
            chosen = list(recognizers)
        chosen.extend(RegexRecognizer.from_config(spec) for spec in config.patterns)
        chosen.extend(resolve_recognizer(ref) for ref in config.recognizers)
        if config.presidio:
            from agentctx.privacy.presidio import PresidioRecognizer  # noqa: PLC0415

            chosen.append(PresidioRecognizer(names=config.names))
        return cls(
            chosen,
            operators=OperatorSet.from_config(config),
            min_score=config.min_score,
            allow=config.allow_list,
            identifier_key=config.resolved_hash_key(),
            identifier_chars=config.hash_chars,
        )

    def with_allow_list(self, values: Iterable[str]) -> PIIRedactor:
        """A redactor that also leaves ``values`` alone (e.g. one agent's own addresses).

        Cheap: recognizers and operators are shared, only the allow-list is new.
        """
        clone = object.__new__(PIIRedactor)
        clone.analyzer = self.analyzer.with_allow_list(values)
        clone._fields = self._fields
        clone.operators = self.operators
        clone.identifiers = self.identifiers
        clone.keys = self.keys
        # Another allow-list finds other things: its own scope, in the shared memory.
        clone._clean = self._clean
        clone._clean_texts = self._clean_texts
        clone._scope = next(_scopes)
        return clone

    def analyze(self, text: str) -> list[Finding]:
        """The findings that would be redacted in ``text`` (positions and types only)."""
        return self.analyzer.analyze(text)

    def forget_texts(self) -> None:
        """Forget the identifiers and short texts found clean (see
        :meth:`redact_identifier`), this redactor's and those of the redactors made from
        it: once a user's data is
        deleted, no copy of it stays in memory."""
        self._clean.clear()
        self._clean_texts.clear()

    def redact_text(self, text: str) -> Redacted:
        """``text`` with every finding rewritten, and the entity types found."""
        findings = self.analyzer.analyze(text)
        if not findings:
            return Redacted(text, _NOTHING)
        return Redacted(
            self.operators.apply(text, findings),
            frozenset(f.entity_type for f in findings),
        )

    def redact_identifier(self, value: str) -> Redacted:
        """``value``, an identifier, with each finding replaced by a stable token.

        A token (``EMAIL-3f2a9c1b7d``) is a keyed hash of the value found, made only of
        characters identifiers allow, so a redacted ``call_id`` still pairs a tool call
        with its result, and with the built-in recognizers redacting a redacted identifier
        changes nothing (a configured pattern may match inside a token: redact an
        identifier once).

        The last :data:`CLEAN_IDENTIFIERS_KEPT` identifiers found clean are not analyzed
        again: every event of a turn carries its request id, author and tool names.
        """
        clean, key = self._clean, (self._scope, value)
        if key in clean:
            return Redacted(value, _NOTHING)
        findings = self.analyzer.analyze(value)
        if not findings:
            if len(value) <= _REMEMBERED_IDENTIFIER_CHARS:
                _remember(clean, key, CLEAN_IDENTIFIERS_KEPT)
            return Redacted(value, _NOTHING)
        return Redacted(
            self.identifiers.apply(value, findings),
            frozenset(f.entity_type for f in findings),
        )

    def redact_json(self, value: Any) -> Redacted:
        """Every string inside ``value`` redacted, object keys included; structure kept.

        Keys get stable tokens (``EMAIL-3f2a9c1b7d``, or the hash or encrypt operator's
        when configured), so different keys stay different and a later write's key
        matches an earlier one's. Keys that still become equal (a key that already was
        the token of another) are told apart with ``#2``, ``#3``… in the sorted order of
        the original keys, so no entry is lost and the same input gives the same output.
        """
        if not value:  # nothing to redact in {}, [], "", None, 0 or False
            return Redacted(value, _NOTHING)
        found: set[str] = set()
        clean = self._walk(value, found, {})
        return Redacted(clean, frozenset(found) if found else _NOTHING)

    def _analyzed(self, text: str, seen: dict[str, list[Finding]]) -> list[Finding]:
        """The analyzer's findings in ``text``, each short text analyzed once per value: a
        list of records repeats its keys and many of its values. The last
        :data:`CLEAN_TEXTS_KEPT` short texts found clean are not analyzed again in later
        values either: the keys of a tool's results, the fields of every audit log line."""
        if len(text) > _REPEATED_TEXT:
            return self.analyzer.analyze(text)
        findings = seen.get(text)
        if findings is None:
            clean, key = self._clean_texts, (self._scope, text)
            if key in clean:
                return []
            findings = seen[text] = self.analyzer.analyze(text)
            if not findings:
                _remember(clean, key, CLEAN_TEXTS_KEPT)
        return findings

    def _walk(self, value: Any, found: set[str], seen: dict[str, list[Finding]]) -> Any:
        # Containers are rebuilt only when something inside them changed.
        if isinstance(value, str):
            findings = self._analyzed(value, seen)
            if not findings:
                return value
            found.update(f.entity_type for f in findings)
            return self.operators.apply(value, findings)
        if isinstance(value, dict):
            return self._walk_object(value, found, seen)
        if isinstance(value, list | tuple):
            items: list[Any] | None = None
            for index, item in enumerate(value):
                clean = self._walk(item, found, seen)
                if clean is not item:
                    if items is None:
                        items = list(value)
                    items[index] = clean
            if items is None:
                return value
            return items if isinstance(value, list) else tuple(items)
        return value

    def _walk_object(
        self, value: dict[Any, Any], found: set[str], seen: dict[str, list[Finding]]
    ) -> dict[Any, Any]:
        renamed: dict[Any, str] = {}
        for key in value:
            if isinstance(key, str):
                findings = self._analyzed(key, seen)
                if findings:
                    found.update(f.entity_type for f in findings)
                    renamed[key] = self.keys.apply(key, findings)
        changed: dict[Any, Any] | None = None
        for key, item in value.items():
            clean = self._field(key, item, value, found)
            if clean is None:
                clean = self._walk(item, found, seen)
            if clean is not item:
                if changed is None:
                    changed = dict(value)
                changed[key] = clean
        if not renamed:
            return value if changed is None else changed
        source = changed if changed is not None else value
        names = _distinct_names(source, renamed)
        return {names.get(key, key): item for key, item in source.items()}

    def _field(self, key: Any, item: Any, record: dict[Any, Any], found: set[str]) -> str | None:
        """``item`` redacted as a whole when the member ``key: item`` of ``record`` is a
        personal field (``"dob": "1971-08-13"``: :class:`FieldRecognizer`), else None."""
        if self._fields is None or not isinstance(item, str) or not isinstance(key, str):
            return None
        entity = self._fields.entity_of(key, item, record.keys)
        if entity is None or self.analyzer.allow_list.allows(item, entity):
            return None
        found.add(entity)
        finding = Finding(entity, 0, len(item), 1.0, self._fields.name)
        return self.operators.apply(item, [finding])


def _remember(clean: set[tuple[int, str]], key: tuple[int, str], bound: int) -> None:
    """Add ``key`` to ``clean``, starting over when it holds ``bound`` keys."""
    if len(clean) >= bound:
        clean.clear()
    clean.add(key)


def _key_operators(operators: OperatorSet, identifier: Operator) -> OperatorSet:
    """How keys are rewritten: like values where that gives each value its own token
    (hash, encrypt), else with identifier tokens. A placeholder would make every address
    the same key ("[EMAIL]"), and a later write's key would overwrite an earlier one's."""

    def distinct(operator: Operator) -> Operator:
        return operator if isinstance(operator, HashOperator | EncryptOperator) else identifier

    return OperatorSet(
        distinct(operators.default),
        {etype: distinct(op) for etype, op in operators.per_type.items()},
    )


def _distinct_names(source: dict[Any, Any], renamed: dict[Any, str]) -> dict[Any, str]:
    """New names for the ``renamed`` keys of ``source`` that collide with no other key.

    Keys left as they were keep their names; renamed ones are suffixed ``#2``, ``#3``…
    where needed, in the sorted order of their original text (not insertion order, so
    a retried write with the same keys in another order stores the same object).
    """
    taken = {key for key in source if key not in renamed}
    names: dict[Any, str] = {}
    for key in sorted(renamed):
        base = renamed[key]
        name, n = base, 1
        while name in taken:
            n += 1
            name = f"{base}#{n}"
        taken.add(name)
        names[key] = name
    return names


class IdentifierOperator(HashOperator):
    """The hash operator's keyed token, in characters identifiers allow: ``EMAIL-3f2a9c1b7d``."""

    name = "identifier"

    def apply(self, value: str, entity_type: str) -> str:
        token = super().apply(value, entity_type)  # "[TYPE:hex]"
        return token[1:-1].replace(":", "-", 1)


def redactor_from_config(config: RedactionConfig | None = None) -> Redactor:
    """The redactor ``config`` asks for: a :class:`PIIRedactor`, or pass-through if disabled."""
    config = config or RedactionConfig()
    if not config.enabled:
        return PassThroughRedactor()
    return PIIRedactor.from_config(config)
