"""The analyzer: runs recognizers on a text and decides which findings count.

It drops findings below ``min_score`` and values on the allow-list, then resolves
overlaps: the longest span wins, then the most confident, then the earliest. What
it returns is sorted by position and non-overlapping, ready for an operator.

A recognizer may say from a text's shape (:mod:`agentctx.privacy.shape`) that it
cannot find anything in it (its ``possible`` method); it is then not run on that text.

This module also holds :class:`RegexRecognizer` (the recognizer behind custom
patterns in configuration) and the registry that lets configuration name
recognizers written in Python (:func:`register_recognizer`).
"""

from __future__ import annotations

import bisect
import importlib
import itertools
import re
import threading
from collections.abc import Callable, Iterable, Sequence

from agentctx.errors import ConfigError
from agentctx.privacy.config import CustomPattern
from agentctx.privacy.findings import EntityType, Finding, Recognizer
from agentctx.privacy.shape import TextShape, shape_of

Gate = Callable[[TextShape], bool]


class AllowList:
    """Values that are never redacted, such as the agent's own support address.

    Values match exactly; values that look like email addresses (or findings of
    type EMAIL) also match case-insensitively.
    """

    __slots__ = ("_exact", "_folded")

    def __init__(self, values: Iterable[str] = ()) -> None:
        exact = frozenset(v for v in values if v)
        self._exact = exact
        self._folded = frozenset(v.casefold() for v in exact if "@" in v)

    def __bool__(self) -> bool:
        return bool(self._exact)

    def __len__(self) -> int:
        return len(self._exact)

    def allows(self, value: str, entity_type: str) -> bool:
        """Whether ``value`` (found as ``entity_type``) stays as it is."""
        if value in self._exact:
            return True
        if self._folded and (entity_type == EntityType.EMAIL or "@" in value):
            return value.casefold() in self._folded
        return False

    def union(self, values: Iterable[str]) -> AllowList:
        """A new allow-list with ``values`` added."""
        return AllowList([*self._exact, *values])


class Analyzer:
    """Runs recognizers and resolves their findings. Thread-safe; immutable once built."""

    def __init__(
        self,
        recognizers: Sequence[Recognizer],
        *,
        min_score: float = 0.5,
        allow_list: AllowList | Iterable[str] = (),
    ) -> None:
        for recognizer in recognizers:
            if not isinstance(recognizer, Recognizer):
                raise ConfigError(f"{recognizer!r} is not a Recognizer")
        self.recognizers: tuple[Recognizer, ...] = tuple(recognizers)
        self._gated: tuple[tuple[Recognizer, Gate | None], ...] = tuple(
            (recognizer, gate_of(recognizer)) for recognizer in self.recognizers
        )
        self.min_score = min_score
        self.allow_list = allow_list if isinstance(allow_list, AllowList) else AllowList(allow_list)

    def with_allow_list(self, values: Iterable[str]) -> Analyzer:
        """The same analyzer with ``values`` added to its allow-list (recognizers shared)."""
        return Analyzer(
            self.recognizers, min_score=self.min_score, allow_list=self.allow_list.union(values)
        )

    def analyze(self, text: str) -> list[Finding]:
        """The findings that count in ``text``: sorted, non-overlapping, above the threshold."""
        if not text:
            return []
        candidates: list[Finding] = []
        shape = shape_of(text)
        for recognizer, possible in self._gated:
            if possible is not None and shape is not None and not possible(shape):
                continue
            found = recognizer.analyze(text)
            if found:
                candidates.extend(found)
        if not candidates:
            return []
        min_score, allow = self.min_score, self.allow_list
        kept = [
            f
            for f in candidates
            if f.score >= min_score
            and 0 <= f.start < f.end <= len(text)
            and not (allow and allow.allows(text[f.start : f.end], f.entity_type))
        ]
        return resolve_overlaps(kept)


def gate_of(recognizer: Recognizer) -> Gate | None:
    """The recognizer's ``possible(shape)``: whether it can find anything in a text of
    that shape. Only a ``possible`` defined by the class that defines ``analyze`` counts:
    a subclass with an ``analyze`` of its own may find what the gate rules out."""
    cls = type(recognizer)
    gate_owner = next((c for c in cls.__mro__ if "possible" in vars(c)), None)
    analyze_owner = next((c for c in cls.__mro__ if "analyze" in vars(c)), None)
    if gate_owner is None or gate_owner is not analyze_owner:
        return None
    gate: Gate = getattr(recognizer, "possible")  # noqa: B009 - checked above
    return gate


def resolve_overlaps(findings: Iterable[Finding]) -> list[Finding]:
    """Non-overlapping findings sorted by start: longest first, then most confident."""
    by_start = sorted(findings, key=_position)
    # The common case (no two findings touch the same characters) needs no ranking.
    if all(a.end <= b.start for a, b in itertools.pairwise(by_start)):
        return by_start
    ranked = sorted(by_start, key=_rank)
    # Chosen spans never overlap, so sorted by start they are sorted by end as well;
    # a candidate only has to be checked against its two neighbours.
    starts: list[int] = []
    chosen: list[Finding] = []
    for finding in ranked:
        i = bisect.bisect_right(starts, finding.start)
        if i > 0 and chosen[i - 1].end > finding.start:
            continue
        if i < len(chosen) and chosen[i].start < finding.end:
            continue
        starts.insert(i, finding.start)
        chosen.insert(i, finding)
    return chosen


def _position(finding: Finding) -> tuple[int, int]:
    return finding.start, finding.end


def _rank(finding: Finding) -> tuple[int, float, int, str]:
    return finding.start - finding.end, -finding.score, finding.start, finding.recognizer


class RegexRecognizer:
    """Finds one entity type with a regular expression, optionally boosted by context words.

    A match scores ``score``; if one of ``context`` appears (case-insensitively) in
    the ``context_window`` characters before the match, ``context_boost`` is added.
    """

    def __init__(
        self,
        name: str,
        entity_type: str,
        pattern: str | re.Pattern[str],
        *,
        score: float = 0.6,
        context: Iterable[str] = (),
        context_boost: float = 0.35,
        context_window: int = 48,
        flags: int = 0,
    ) -> None:
        self.name = name
        self.entity_types: tuple[str, ...] = (entity_type,)
        self.entity_type = entity_type
        self.pattern = pattern if isinstance(pattern, re.Pattern) else re.compile(pattern, flags)
        self.score = score
        self.context = tuple(word.casefold() for word in context if word)
        self.context_boost = context_boost
        self.context_window = context_window

    @classmethod
    def from_config(cls, spec: CustomPattern) -> RegexRecognizer:
        """The recognizer a configured custom pattern describes."""
        return cls(
            spec.name,
            spec.entity_type,
            spec.pattern,
            score=spec.score,
            context=spec.context,
            context_boost=spec.context_boost,
            context_window=spec.context_window,
            flags=re.IGNORECASE if spec.ignore_case else 0,
        )

    def analyze(self, text: str) -> list[Finding]:
        """Every match in ``text``, scored."""
        found: list[Finding] = []
        for match in self.pattern.finditer(text):
            start, end = match.span()
            if start == end:
                continue
            score = self.score
            if self.context:
                before = text[max(0, start - self.context_window) : start].casefold()
                if any(word in before for word in self.context):
                    score = min(1.0, score + self.context_boost)
            found.append(Finding(self.entity_type, start, end, score, self.name))
        return found


_registry_lock = threading.Lock()
_registry: dict[str, Recognizer] = {}


def register_recognizer(recognizer: Recognizer, *, replace: bool = False) -> Recognizer:
    """Make ``recognizer`` available to configuration under its ``name``.

    Registration alone does not enable it: list its name in
    ``RedactionConfig.recognizers``. Returns the recognizer, so it can decorate a factory call.
    """
    if not isinstance(recognizer, Recognizer):
        raise ConfigError(f"{recognizer!r} is not a Recognizer")
    with _registry_lock:
        if not replace and recognizer.name in _registry:
            raise ConfigError(f"a recognizer named {recognizer.name!r} is already registered")
        _registry[recognizer.name] = recognizer
    return recognizer


def unregister_recognizer(name: str) -> None:
    """Forget a registered recognizer (no error if it is unknown)."""
    with _registry_lock:
        _registry.pop(name, None)


def registered_recognizers() -> dict[str, Recognizer]:
    """A copy of the registry: name -> recognizer."""
    with _registry_lock:
        return dict(_registry)


def resolve_recognizer(reference: str) -> Recognizer:
    """A registered name, or ``"package.module:attribute"`` (a recognizer or a factory)."""
    with _registry_lock:
        registered = _registry.get(reference)
    if registered is not None:
        return registered
    module_name, sep, attribute = reference.partition(":")
    if not sep:
        raise ConfigError(f"no recognizer registered as {reference!r}")
    try:
        target: object = getattr(importlib.import_module(module_name), attribute)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(f"cannot load recognizer {reference!r}: {exc}") from exc
    if not isinstance(target, Recognizer) and callable(target):
        target = target()
    if not isinstance(target, Recognizer):
        raise ConfigError(f"{reference!r} is not a Recognizer")
    return target
