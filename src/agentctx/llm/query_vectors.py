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

import os
import queue
import threading
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_futures
from dataclasses import dataclass

from agentctx.cache.bounded import Lru
from agentctx.llm.embeddings import Embedder
from agentctx.llm.warmup import ModelState, ModelWarmup
from agentctx.priority import is_background_thread


@dataclass(frozen=True, slots=True)
class _Pending:
    """A query's embedding under way on a helper thread (:meth:`QueryVectors.prefetch`)."""

    result: Future[list[float]]
    pid: int  # a fork's child has no such thread: it embeds the query itself


_Request = tuple[str, _Pending, int]  # a query, its result, the generation it started in

HELPER_IDLE = 10.0
"""Seconds the helper thread waits for a query to embed before it ends."""


class QueryVectors:
    """``embedder``'s vectors of queries, the ``size`` most recently used kept
    (``size=0`` keeps none). Thread-safe; two threads asking a new query at once may
    both embed it (unless it was prefetched)."""

    def __init__(
        self, embedder: Embedder, size: int = 256, *, warmup: ModelWarmup | None = None
    ) -> None:
        self.embedder = embedder
        self.size = size
        self._vectors: Lru[str, list[float]] = Lru(size)  # refuses a negative size
        # The model's background load, when the engine started one: until it is done the
        # indexes rank without vectors rather than wait for it.
        self.warmup = warmup
        self._lock = threading.Lock()
        self._pending: dict[str, _Pending] = {}
        self._requests: queue.SimpleQueue[_Request] = queue.SimpleQueue()
        self._helper: threading.Thread | None = None  # serves _requests (prefetch)
        self._helper_pid = 0
        self._generation = 0  # moved on by clear(): a prefetch started before it keeps nothing

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
            pending = self._under_way(query)
            if pending is not None:
                vector = pending.result.result()  # what is left of it; its error if it failed
            else:
                generation = self._generation
                vector = self.embedder.embed([query])[0]
                self._keep(query, vector, generation)
        return vector if any(vector) else None

    def prefetch(self, query: str) -> None:
        """Start embedding ``query`` on the helper thread and return at once, when the model
        is ready and the vector is neither held nor under way: a window asks at its start,
        so the embedding runs beside the window's other work, and :meth:`vector` then
        waits only for what is left of it.

        The helper thread is started by the caller (the agent's thread), so it runs at
        the caller's priority, above the background threads; a background thread's
        window (whose thread runs at a lower priority, which a thread it starts would
        keep) does not prefetch. A failure is not kept: the one waiting for the vector
        gets the embedder's error, as if it had embedded the query itself, and the next
        call tries again."""
        if not query.strip() or self.model_state != "ready" or self._vectors.get(query):
            return
        if is_background_thread():
            return
        with self._lock:
            if self._under_way_locked(query) is not None:
                return
            pending = _Pending(Future(), os.getpid())
            self._pending[query] = pending
            # Queued under the lock the helper decides to end under: a query is never
            # queued for a helper that has just ended.
            self._helper_locked().put((query, pending, self._generation))

    def _helper_locked(self) -> queue.SimpleQueue[_Request]:
        """The helper thread's queue, the helper started first if none runs in this
        process (the lock held).

        One helper serves the queries one after another and ends after
        :data:`HELPER_IDLE` seconds without one. A thread started for each query cost a
        window about 1.7 ms: ``Thread.start`` waits until the new thread has run, and
        that thread needs the interpreter lock first."""
        if self._helper_pid != os.getpid():  # none yet, or the parent's (before a fork)
            self._requests = queue.SimpleQueue()
            self._helper_pid = os.getpid()
            self._helper = None
        if self._helper is None or not self._helper.is_alive():  # never started, or died
            self._helper = threading.Thread(
                target=self._serve,
                args=(self._requests,),
                name="agentctx-query",
                daemon=True,  # a query's vector is a cache entry: nothing to finish at exit
            )
            self._helper.start()
        return self._requests

    def _serve(self, requests: queue.SimpleQueue[_Request]) -> None:
        """The helper thread: embed queued queries until none comes for a while."""
        while True:
            try:
                query, pending, generation = requests.get(timeout=HELPER_IDLE)
            except queue.Empty:
                with self._lock:
                    if requests.empty():
                        if self._requests is requests:
                            self._helper = None
                        return
                continue
            self._embed_pending(query, pending, generation)

    def _embed_pending(self, query: str, pending: _Pending, generation: int) -> None:
        try:
            vector = self.embedder.embed([query])[0]
            self._keep(query, vector, generation)
        except BaseException as exc:  # handed to the waiter, whatever it is
            pending.result.set_exception(exc)
        else:
            pending.result.set_result(vector)
        finally:
            with self._lock:
                if self._pending.get(query) is pending:
                    del self._pending[query]

    def _under_way(self, query: str) -> _Pending | None:
        with self._lock:
            return self._under_way_locked(query)

    def _under_way_locked(self, query: str) -> _Pending | None:
        pending = self._pending.get(query)
        if pending is not None and pending.pid != os.getpid():
            del self._pending[query]  # started before a fork, in the parent
            return None
        return pending

    def _keep(self, query: str, vector: list[float], generation: int) -> None:
        """Keep ``vector`` unless :meth:`clear` ran since its embedding started (it may be
        the text of a user whose data was just deleted)."""
        with self._lock:
            if generation == self._generation:
                self._vectors.put(query, vector)

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

    def settle(self, timeout: float | None = None) -> None:
        """Wait (at most ``timeout`` seconds in all) for the embeddings under way on
        helper threads to end: for shutdown, so that no forward pass runs on while the
        interpreter finalizes."""
        with self._lock:
            pending = [p.result for p in self._pending.values() if p.pid == os.getpid()]
        wait_for_futures(pending, timeout=timeout)

    def clear(self) -> None:
        """Forget every query held; an embedding under way keeps nothing."""
        with self._lock:
            self._generation += 1
            self._vectors.clear()
            self._pending.clear()
