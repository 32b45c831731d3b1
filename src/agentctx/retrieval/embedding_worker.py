"""Embedding off the agent's call path: a worker thread fed by a bounded queue of sessions.

An agent builds a window before every model call, right after its tools answered; the
events it just wrote (tool results of tens of kilobytes) have no vectors yet. Embedding
them inside the window's search put the model's seconds on every step. Instead, every
write asks this worker to embed its session (:meth:`EmbeddingWorker.request`, which
never blocks), and the worker embeds on a thread of its own: a session's backlog in
steps of at most ``batch`` documents (and a bounded amount of text, so that a step of
long tool results is short too), sessions taking turns, so one long backlog cannot
starve the others. Each step first indexes the words written since the last, so a
window rarely finds words it must index itself. A window built before an event's vector
exists ranks that event lexically and by recency (it is among the newest anyway) and its
report says how many events wait.

The queue holds session keys, not work: what is left to embed is recorded durably by the
index itself (each session's embedded and indexed seqs). So the queue is bounded
(``queue_size`` sessions) and, when full, a request is shed rather than blocking the
writer: the session is asked for again by the next search that finds it behind, or by
its turn-end job, which survives a crash. Nothing is lost by shedding, and an agent never
waits for the worker.

While the model loads in the background (:mod:`agentctx.llm.warmup`) the worker
indexes each requested session's words at once and parks the session; once the model is
ready the parked sessions are queued again for their vectors (after a failed load, words
only). A failed embedding (an endpoint down) drops the session from the queue after a
pause, and the next request brings it back.
"""

from __future__ import annotations

import logging
import threading
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass

from agentctx.errors import EngineClosed
from agentctx.llm.embeddings import EmbeddingError
from agentctx.llm.warmup import ModelWarmup
from agentctx.priority import lower_this_thread

log = logging.getLogger(__name__)

SessionKey = tuple[str, str]
EmbedStep = Callable[[str, str, int], bool]
"""Embeds at most ``n`` documents of (user, session); True when more are left."""
EmbedQuery = Callable[[str], object]
"""Computes a query's vector into the shared query cache (what it returns is unused)."""

QUERY_QUEUE = 64
"""Queries waiting for their vectors, at most (the newest are kept)."""


@dataclass(slots=True)
class EmbeddingStats:
    """What the worker has done since it started."""

    requested: int = 0  # requests that queued a session
    shed: int = 0  # requests refused because the queue was full
    steps: int = 0  # batches embedded
    failures: int = 0  # batches that failed (the session left the queue)


class EmbeddingWorker:
    """Embeds the sessions it is asked to, on a daemon thread, once the model is loaded.

    ``embed_step(user_id, session_id, n)`` does the work (the search index's
    :meth:`~agentctx.retrieval.index.SearchIndex.embed_step`). Thread-safe.
    """

    def __init__(
        self,
        embed_step: EmbedStep,
        warmup: ModelWarmup,
        *,
        queue_size: int = 1024,
        batch: int = 64,
        failure_pause: float = 1.0,
        settle: float = 0.05,
        embed_query: EmbedQuery | None = None,
    ) -> None:
        self._embed_step = embed_step
        self._embed_query = embed_query
        # Queries a window asked about before their vector existed: computed first, so
        # that the agent's next call ranks by vectors.
        self._queries: OrderedDict[str, None] = OrderedDict()
        self.warmup = warmup
        self.queue_size = queue_size
        self.batch = batch
        self._failure_pause = failure_pause
        # An agent writes in bursts (a tool call, its result, a screenshot): waiting this
        # long after the first request embeds the burst in one batch, one write, instead
        # of one write transaction (each a disk sync) per event competing with the
        # agent's own writes.
        self._settle = settle
        self._queue: OrderedDict[SessionKey, None] = OrderedDict()
        self._busy: SessionKey | None = None  # the session being embedded now
        self._parked: set[SessionKey] = set()  # words indexed, vectors wait for the model
        self._lock = threading.Condition()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.stats = EmbeddingStats()

    def start(self) -> None:
        """Start the thread (and the model's load, if not started yet)."""
        if self._thread is not None:
            return
        self.warmup.start()
        self._thread = threading.Thread(target=self._run, name="agentctx-embedding", daemon=True)
        self._thread.start()

    def request(self, user_id: str, session_id: str) -> bool:
        """Ask for the session's new events to be embedded; never blocks. False when the
        queue was full and the request was shed (the session is asked for again later:
        see the module's docstring). A session already queued keeps its place."""
        key = (user_id, session_id)
        with self._lock:
            if key in self._queue:
                return True
            if len(self._queue) >= self.queue_size:
                self.stats.shed += 1
                return False
            self._queue[key] = None
            self.stats.requested += 1
            self._lock.notify()
        return True

    def request_query(self, text: str) -> None:
        """Ask for ``text``'s vector as a query (never blocks; the oldest of more than
        :data:`QUERY_QUEUE` waiting queries is dropped)."""
        if self._embed_query is None:
            return
        with self._lock:
            self._queries[text] = None
            self._queries.move_to_end(text)
            while len(self._queries) > QUERY_QUEUE:
                self._queries.popitem(last=False)
            self._lock.notify()

    @property
    def pending(self) -> int:
        """Sessions queued or being embedded."""
        with self._lock:
            return len(self._queue) + len(self._queries) + (self._busy is not None)

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Block until nothing is queued or being embedded (for scripts, benchmarks and
        tests; a window never waits); True when idle before ``timeout``."""
        with self._lock:
            return self._lock.wait_for(
                lambda: (
                    not self._queue
                    and not self._queries
                    and self._busy is None
                    and not (self._parked and self.warmup.state == "ready")
                ),
                timeout=timeout,
            )

    def forget(self, user_id: str | None, session_id: str | None = None) -> None:
        """Drop queued requests of a deleted user (every user's when None) or session."""
        with self._lock:
            for key in [*self._queue, *self._parked]:
                if user_id is None or (key[0] == user_id and session_id in (None, key[1])):
                    self._queue.pop(key, None)
                    self._parked.discard(key)
            self._lock.notify_all()

    def close(self, timeout: float = 10.0) -> None:
        """Stop taking work; the batch in progress has ``timeout`` seconds to end (its
        session stays behind in the index and is embedded by the next engine)."""
        self._stop.set()
        with self._lock:
            self._queue.clear()
            self._parked.clear()
            self._queries.clear()
            self._lock.notify_all()
        if self._thread is not None:
            self._thread.join(timeout)

    # The thread -------------------------------------------------------------------------

    def _run(self) -> None:
        lower_this_thread()
        while not self._stop.is_set():
            self._unpark()
            self._answer_queries()
            key = self._next()
            if key is None:
                continue
            ready = self.warmup.ready
            more = False
            try:
                # Words at once; vectors once the model is ready.
                more = self._embed_step(key[0], key[1], self.batch if ready else 0)
                self.stats.steps += 1
            except EngineClosed:
                return
            except EmbeddingError as exc:
                self.stats.failures += 1
                log.warning("background embedding failed; retried on the next request: %s", exc)
                self._stop.wait(self._failure_pause)
            except Exception:  # a worker thread must not die of one session's error
                self.stats.failures += 1
                log.exception("background embedding failed")
                self._stop.wait(self._failure_pause)
            finally:
                self._done(key, more and ready, park=more and self.warmup.state == "loading")

    def _answer_queries(self) -> None:
        """Compute the waiting queries' vectors (once the model is ready), newest first."""
        while self._embed_query is not None and self.warmup.ready and not self._stop.is_set():
            with self._lock:
                if not self._queries:
                    return
                text, _ = self._queries.popitem(last=True)
                self._busy = ("", "")
            try:
                self._embed_query(text)
            except EmbeddingError as exc:
                log.warning("embedding a query in the background failed: %s", exc)
            except EngineClosed:
                return
            finally:
                with self._lock:
                    self._busy = None
                    self._lock.notify_all()

    def _unpark(self) -> None:
        """Once the model's load ended: queue the parked sessions for their vectors (or,
        after a failed load, forget them: their words are indexed)."""
        state = self.warmup.state
        if state == "loading":
            return
        with self._lock:
            if not self._parked:
                return
            if state == "ready":
                for key in self._parked:
                    self._queue.setdefault(key, None)
            self._parked.clear()
            self._lock.notify_all()

    def _next(self) -> SessionKey | None:
        with self._lock:
            idle = not self._queue
            self._lock.wait_for(
                lambda: self._queue or self._queries or self._stop.is_set(), timeout=0.5
            )
            if self._stop.is_set() or not self._queue:
                return None  # (queries are answered at the top of the loop)
        # A burst that wakes an idle worker is gathered; a backlog is worked through.
        if self._settle > 0 and idle:
            self._stop.wait(self._settle)
        self._answer_queries()  # one asked for while settling goes first
        with self._lock:
            if self._stop.is_set() or not self._queue:
                return None
            key, _ = self._queue.popitem(last=False)
            self._busy = key
            return key

    def _done(self, key: SessionKey, more: bool, *, park: bool = False) -> None:
        with self._lock:
            self._busy = None
            if not self._stop.is_set():
                if park:
                    self._parked.add(key)
                elif more and key not in self._queue:
                    self._queue[key] = None  # to the back: sessions take turns
            self._lock.notify_all()
