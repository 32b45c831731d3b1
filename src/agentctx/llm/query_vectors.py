"""Query embeddings, remembered by query text.

A window build asks its query of the event index and, with memory on, of long-term
memory; agents also repeat queries between builds (a retried call, the same question
at several budgets). Embedding a query takes several milliseconds with the local
model and a network round trip with an endpoint, so one :class:`QueryVectors` per
engine embeds each distinct query once while it is among the ``size`` most recently
used, for every index that shares it. The entries hold users' text: deletions clear
them all (:meth:`clear`), since they are kept by text rather than by user.
"""

from __future__ import annotations

from agentctx.cache.bounded import Lru
from agentctx.llm.embeddings import Embedder
from agentctx.llm.warmup import ModelState, ModelWarmup


class QueryVectors:
    """``embedder``'s vectors of queries, the ``size`` most recently used kept
    (``size=0`` keeps none). Thread-safe; two threads asking a new query at once may
    both embed it."""

    def __init__(
        self, embedder: Embedder, size: int = 256, *, warmup: ModelWarmup | None = None
    ) -> None:
        self.embedder = embedder
        self.size = size
        self._vectors: Lru[str, list[float]] = Lru(size)  # refuses a negative size
        # The model's background load, when the engine started one: until it is done the
        # indexes rank without vectors rather than wait for it.
        self.warmup = warmup

    @property
    def model_state(self) -> ModelState:
        """``ready`` when a query can be embedded without waiting for the model to load
        (always, without a background load), else ``loading`` or ``failed``."""
        return "ready" if self.warmup is None else self.warmup.state

    def vector(self, query: str) -> list[float] | None:
        """The vector of ``query``, or None when the embedder gives the zero vector
        (nothing to compare by). Raises :class:`~agentctx.llm.embeddings.EmbeddingError`
        as the embedder does; a failure is not remembered."""
        vector = self._vectors.get(query)
        if vector is None:
            vector = self.embedder.embed([query])[0]
            self._vectors.put(query, vector)
        return vector if any(vector) else None

    def cached(self, query: str) -> tuple[bool, list[float] | None]:
        """(whether ``query``'s vector is held, the vector or None for the zero vector),
        never embedding: for a window that does not wait for the model."""
        vector = self._vectors.get(query)
        if vector is None:
            return False, None
        return True, vector if any(vector) else None

    def queries(self) -> list[str]:
        """The queries held, least recently used first."""
        return self._vectors.keys()

    def clear(self) -> None:
        """Forget every query held."""
        self._vectors.clear()
