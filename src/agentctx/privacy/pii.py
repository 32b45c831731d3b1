"""``PIIRedactor``: the real redactor behind the redaction gate.

It finds personal data with an :class:`~agentctx.privacy.analyzer.Analyzer` and
rewrites it with the configured operators. Found values go nowhere else: they are
not logged, not kept, not put in errors; only their entity types are reported.

Text in which nothing is found comes back as the very same object, and JSON
values in which nothing is found come back unchanged and uncopied, so the common
case costs one scan per recognizer and no allocation.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from agentctx.privacy.analyzer import AllowList, Analyzer, RegexRecognizer, resolve_recognizer
from agentctx.privacy.config import RedactionConfig
from agentctx.privacy.findings import Finding, Recognizer
from agentctx.privacy.operators import OperatorSet, ReplaceOperator
from agentctx.privacy.redactor import PassThroughRedactor, Redacted, Redactor

_NOTHING: frozenset[str] = frozenset()


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
    ) -> None:
        self.analyzer = Analyzer(recognizers, min_score=min_score, allow_list=allow)
        self.operators = operators or OperatorSet(ReplaceOperator())

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
        )

    def with_allow_list(self, values: Iterable[str]) -> PIIRedactor:
        """A redactor that also leaves ``values`` alone (e.g. one agent's own addresses).

        Cheap: recognizers and operators are shared, only the allow-list is new.
        """
        clone = object.__new__(PIIRedactor)
        clone.analyzer = self.analyzer.with_allow_list(values)
        clone.operators = self.operators
        return clone

    def analyze(self, text: str) -> list[Finding]:
        """The findings that would be redacted in ``text`` (positions and types only)."""
        return self.analyzer.analyze(text)

    def redact_text(self, text: str) -> Redacted:
        """``text`` with every finding rewritten, and the entity types found."""
        findings = self.analyzer.analyze(text)
        if not findings:
            return Redacted(text, _NOTHING)
        return Redacted(
            self.operators.apply(text, findings),
            frozenset(f.entity_type for f in findings),
        )

    def redact_json(self, value: Any) -> Redacted:
        """Every string value inside ``value`` redacted; keys and structure kept."""
        found: set[str] = set()
        clean = self._walk(value, found)
        return Redacted(clean, frozenset(found) if found else _NOTHING)

    def _walk(self, value: Any, found: set[str]) -> Any:
        # Containers are rebuilt only when something inside them changed.
        if isinstance(value, str):
            findings = self.analyzer.analyze(value)
            if not findings:
                return value
            found.update(f.entity_type for f in findings)
            return self.operators.apply(value, findings)
        if isinstance(value, dict):
            changed: dict[Any, Any] | None = None
            for key, item in value.items():
                clean = self._walk(item, found)
                if clean is not item:
                    if changed is None:
                        changed = dict(value)
                    changed[key] = clean
            return value if changed is None else changed
        if isinstance(value, list | tuple):
            items: list[Any] | None = None
            for index, item in enumerate(value):
                clean = self._walk(item, found)
                if clean is not item:
                    if items is None:
                        items = list(value)
                    items[index] = clean
            if items is None:
                return value
            return items if isinstance(value, list) else tuple(items)
        return value


def redactor_from_config(config: RedactionConfig | None = None) -> Redactor:
    """The redactor ``config`` asks for: a :class:`PIIRedactor`, or pass-through if disabled."""
    config = config or RedactionConfig()
    if not config.enabled:
        return PassThroughRedactor()
    return PIIRedactor.from_config(config)
