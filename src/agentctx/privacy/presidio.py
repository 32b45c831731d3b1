"""Presidio as an optional recognizer backend (``pip install 'agentctx[presidio]'``).

:class:`PresidioRecognizer` adapts ``presidio_analyzer.AnalyzerEngine`` to the
:class:`~agentctx.privacy.findings.Recognizer` protocol and maps Presidio's entity
names onto agentctx's. Presidio loads a spaCy model from local disk; it must be
installed beforehand, since nothing is downloaded at run time.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Mapping
from typing import Any

from agentctx.errors import MissingExtra
from agentctx.privacy.findings import EntityType, Finding

# Presidio's names -> agentctx's; types not listed keep Presidio's name.
PRESIDIO_TYPES: Mapping[str, str] = {
    "EMAIL_ADDRESS": EntityType.EMAIL,
    "PHONE_NUMBER": EntityType.PHONE,
    "CREDIT_CARD": EntityType.CREDIT_CARD,
    "IP_ADDRESS": EntityType.IP_ADDRESS,
    "PERSON": EntityType.PERSON,
}


def _load_presidio() -> Any:
    try:
        return importlib.import_module("presidio_analyzer")
    except ImportError as exc:
        raise MissingExtra("presidio", "presidio-analyzer") from exc


class PresidioRecognizer:
    """Runs Presidio's analyzer and reports its results as findings.

    ``entities`` limits which Presidio entities are asked for (default: those in
    :data:`PRESIDIO_TYPES`, without PERSON unless ``names`` is true). ``engine`` may
    be a ready ``AnalyzerEngine`` (to choose models or languages).
    """

    name = "presidio"

    def __init__(
        self,
        *,
        names: bool = False,
        entities: Iterable[str] | None = None,
        language: str = "en",
        engine: Any = None,
    ) -> None:
        module = _load_presidio()
        if entities is None:
            entities = [e for e in PRESIDIO_TYPES if names or e != "PERSON"]
        self._entities = list(entities)
        self.entity_types: tuple[str, ...] = tuple(
            sorted({PRESIDIO_TYPES.get(e, e) for e in self._entities})
        )
        self._language = language
        self._engine = engine if engine is not None else module.AnalyzerEngine()

    def analyze(self, text: str) -> list[Finding]:
        """Presidio's results for ``text`` as findings."""
        results = self._engine.analyze(text=text, language=self._language, entities=self._entities)
        return [
            Finding(
                PRESIDIO_TYPES.get(r.entity_type, r.entity_type),
                int(r.start),
                int(r.end),
                float(r.score),
                self.name,
            )
            for r in results
        ]
