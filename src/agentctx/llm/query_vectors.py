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
import threading
from collections import OrderedDict
from concurrent.futures import CancelledError, Future
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


HELPER_IDLE = 10.0
"""Seconds the helper thread waits for a query to embed before it ends."""

PREFETCH_WAITING = 4
"""Prefetched queries waiting for the helper, at most (the newest are kept)."""


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
        self._lock = threading.Condition(threading.Lock())
        self._pending: dict[str, _Pending] = {}
        # Prefetched queries the helper has not started, oldest first (at most
        # PREFETCH_WAITING), with the generation each was asked in.
        self._waiting: OrderedDict[str, tuple[_Pending, int]] = OrderedDict()
        self._helper: threading.Thread | None = None  # serves _waiting (prefetch)
        self._helper_pid = 0
        self._generation = 0  # moved on by clear(): a prefetch started before it keeps nothing
        self._closed = False

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
            vector = self._prefetched(query)
        if vector is None:
            generation = self._generation
            vector = self.embedder.embed([query])[0]
            self._keep(query, vector, generation)
        return vector if any(vector) else None

    def _prefetched(self, query: str) -> list[float] | None:
        """What a prefetch of ``query`` under way gives (waiting for what is left of it;
        its error if it failed), or None when none is under way or it was dropped.

        With none under way the held vectors are looked at again, under the lock: a
        prefetch that ended since the caller's first look kept its vector before it
        stopped being under way, and embedding the query again would cost the window
        a forward pass."""
        with self._lock:
            pending = self._under_way_locked(query)
            if pending is None:
                return self._vectors.get(query)
        try:
            return pending.result.result()
        except CancelledError:  # dropped from the helper's backlog, or closed
            return None

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
        call tries again.

        At most :data:`PREFETCH_WAITING` queries wait for the helper: a newer one drops
        the oldest, whose window (if one still comes) embeds its query itself. A burst of
        user texts with no window between them (an import, a replay) would otherwise
        queue an embedding for each, most of them never asked for, and keep the helper
        busy long after the writes ended."""
        if not query.strip() or self.model_state != "ready" or self._vectors.get(query):
            return
        if is_background_thread():
            return
        with self._lock:
            if self._closed or self._under_way_locked(query) is not None:
                return
            pending = _Pending(Future(), os.getpid())
            self._pending[query] = pending
            self._start_helper_locked()
            self._waiting[query] = (pending, self._generation)
            while len(self._waiting) > PREFETCH_WAITING:
                self._drop_locked(*self._waiting.popitem(last=False))
            self._lock.notify()

    def _drop_locked(self, query: str, request: tuple[_Pending, int]) -> None:
        """Forget a prefetch the helper has not started (the lock held); one waiting for
        it embeds the query itself."""
        pending = request[0]
        if self._pending.get(query) is pending:
            del self._pending[query]
        pending.result.cancel()

    def _start_helper_locked(self) -> None:
        """Start the helper thread unless it runs in this process (the lock held).

        One helper serves the queries one after another and ends after
        :data:`HELPER_IDLE` seconds without one. A thread started for each query cost a
        window about 1.7 ms: ``Thread.start`` waits until the new thread has run, and
        that thread needs the interpreter lock first."""
        if self._helper_pid != os.getpid():  # none yet, or the parent's (before a fork)
            self._waiting = OrderedDict()
            self._helper_pid = os.getpid()
            self._helper = None
        if self._helper is None or not self._helper.is_alive():  # never started, or died
            self._helper = threading.Thread(
                target=self._serve,
                name="agentctx-query",
                # A query's vector is a cache entry: nothing to finish at exit. close()
                # joins it all the same, so that no forward pass runs while the
                # interpreter finalizes (the process would abort).
                daemon=True,
            )
            self._helper.start()

    def _serve(self) -> None:
        """The helper thread: embed the waiting queries, oldest first, until none comes
        for :data:`HELPER_IDLE` seconds or :meth:`close` is called."""
        me = threading.current_thread()
        while True:
            with self._lock:
                if not self._waiting and not self._closed:
                    self._lock.wait(HELPER_IDLE)
                if self._closed or not self._waiting or self._helper is not me:
                    if self._helper is me:
                        self._helper = None  # the next prefetch starts another
                    return
                query, (pending, generation) = self._waiting.popitem(last=False)
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
        """Wait (at most ``timeout`` seconds in all) for the prefetches under way to end."""
        with self._lock:
            pending = [p.result for p in self._pending.values() if p.pid == os.getpid()]
        wait_for_futures(pending, timeout=timeout)

    def close(self, timeout: float | None = None) -> None:
        """Stop prefetching: the queries waiting for the helper are dropped, and the one
        it is embedding has ``timeout`` seconds to end before this returns (for shutdown,
        so that no forward pass runs on while the interpreter finalizes). :meth:`vector`
        still embeds on the caller's thread. Closing twice is harmless."""
        with self._lock:
            self._closed = True
            for query, request in list(self._waiting.items()):
                self._drop_locked(query, request)
            self._waiting.clear()
            helper = self._helper if self._helper_pid == os.getpid() else None
            self._lock.notify_all()
        if helper is not None and helper is not threading.current_thread():
            helper.join(timeout)

    def clear(self) -> None:
        """Forget every query held; an embedding under way keeps nothing, and the ones
        waiting for the helper are dropped (they may be the text of a deleted user)."""
        with self._lock:
            self._generation += 1
            self._vectors.clear()
            for query, request in list(self._waiting.items()):
                self._drop_locked(query, request)
            self._waiting.clear()
            self._pending.clear()
