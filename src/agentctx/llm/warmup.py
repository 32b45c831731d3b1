"""Loading an embedding model in the background, so that no caller waits for it.

The local model takes seconds to load (tens of seconds on a busy 2-core machine). Loaded
lazily, that time lands inside whichever call first needs a vector: an agent's first
window. :class:`ModelWarmup` loads it on a thread of its own as the engine starts; until
it is ready, searches rank without vectors (lexically and by recency) and say so in the
window's report, and background embedding waits for it off every caller's path.

An embedder loads in the background when it has a ``load()`` method (the local model);
one without it (feature hashing, a remote endpoint) is ready at once.
"""

from __future__ import annotations

import gc
import logging
import threading
import time
from typing import Literal

from agentctx.llm.embeddings import Embedder
from agentctx.priority import lower_this_thread, switch_interval

log = logging.getLogger(__name__)

ModelState = Literal["loading", "ready", "failed"]

LOAD_SWITCH_INTERVAL = 0.0005
"""The interpreter's thread switch interval while a model loads (seconds; 0.005 is
Python's default), restored once it is loaded."""


class ModelWarmup:
    """The load of ``embedder``'s model, started by :meth:`start`, waited for by nobody
    on the call path: callers ask :attr:`ready` and go on without vectors until it is."""

    def __init__(self, embedder: Embedder) -> None:
        self.embedder = embedder
        self._loads = callable(getattr(embedder, "load", None))
        self._done = threading.Event()
        self._failed = False
        self._thread: threading.Thread | None = None
        self._started_at: float | None = None
        self.load_seconds: float | None = None  # how long the load took, once done
        if not self._loads:
            self._done.set()
            self.load_seconds = 0.0

    def start(self) -> None:
        """Begin loading on a daemon thread (once; a second call does nothing)."""
        if self._done.is_set() or self._thread is not None:
            return
        self._started_at = time.perf_counter()
        self._thread = threading.Thread(target=self._load, name="agentctx-model-load", daemon=True)
        self._thread.start()

    def _load(self) -> None:
        # The model's thread pool starts here and inherits the lowered priority.
        lower_this_thread()
        # Loading creates half a million objects, which set off full collections of the
        # whole process, each a stall of every thread (50-200 ms on 2 cores) that lands
        # on the agent's calls; the collector rests until the model is in, and the load
        # then freezes what it made (agentctx.gc_freeze).
        collecting = gc.isenabled()
        gc.disable()
        # Importing and building the model is pure Python for seconds: a thread waiting for
        # the interpreter lock gets it only when the loader's switch interval ends, so
        # each of the agent's database calls (which release the lock) waited up to 5 ms to
        # resume. A shorter interval for the load's duration shortens each such wait.
        try:
            with switch_interval.at_most(LOAD_SWITCH_INTERVAL):
                self.embedder.load()  # type: ignore[attr-defined]  # checked in __init__
        except Exception as exc:
            self._failed = True
            log.warning("the embedding model failed to load; ranking stays lexical: %s", exc)
        finally:
            if collecting:
                gc.enable()
            assert self._started_at is not None
            self.load_seconds = time.perf_counter() - self._started_at
            self._done.set()

    @property
    def state(self) -> ModelState:
        """``loading`` until the load ends, then ``ready`` or ``failed``."""
        if not self._done.is_set():
            return "loading"
        return "failed" if self._failed else "ready"

    @property
    def ready(self) -> bool:
        """Whether vectors can be computed now without waiting for a load."""
        return self._done.is_set() and not self._failed

    def settle(self, timeout: float | None = None) -> None:
        """Wait (at most ``timeout`` seconds) for a load in progress to end; a load never
        started is not started. For shutdown."""
        thread = self._thread
        if thread is not None:
            thread.join(timeout)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the load ends (for background work and tests, never a window);
        True when the model is ready. A load never started is started first."""
        self.start()
        self._done.wait(timeout)
        return self.ready
