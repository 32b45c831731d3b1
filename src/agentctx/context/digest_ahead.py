"""The digest of the history's next slide, made ahead on a background thread.

An agent loop's history slides a turn or two at a time (:mod:`~agentctx.context.history`),
and the window that slides makes the digest of the turns that just left it
(:mod:`~agentctx.context.digest`). In ``bench agentstep`` that was one window in five,
each spending 14 ms more on the agent's thread than the others (p50 40 ms of CPU
against 22). Where the history will start after its next slide is known in advance most
of the time: the next slide point past its start (86% of that session's slides). After
a window that shows a digest, :class:`DigestsAhead` makes that slide's digest on a
background thread into the builder's kept blocks, and the window that slides finds it
there: a digest depends only on the events before the history and its room, so the
block is the same one the window would make. A wrong guess costs background time only.

The thread is one per builder, runs at a background thread's priority and pauses while
the agent's calls are under way (:mod:`agentctx.priority`); it serves the newest guess of
each session, at most :data:`PENDING_SESSIONS` of them waiting.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable

from agentctx.cache.bounded import Lru
from agentctx.priority import lower_this_thread

log = logging.getLogger(__name__)

PENDING_SESSIONS = 64
"""Sessions whose guessed digest may wait at once; past that, new guesses are dropped
(their windows make the digest themselves)."""

MADE_SESSIONS = 4096
"""Sessions whose last guess is remembered, so that the windows between two slides do not
ask for it again."""

IDLE_SECONDS = 30.0
"""How long the thread waits for a guess before it ends (the next guess starts another)."""

SessionKey = tuple[str, str]
Guess = tuple[int, int]  # where the history will start, the digest's room


class DigestsAhead:
    """A background thread making guessed digests, the newest guess per session.
    Thread-safe."""

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._pending: dict[SessionKey, Callable[[], None]] = {}
        self._asked: Lru[SessionKey, Guess] = Lru(MADE_SESSIONS)
        self._thread: threading.Thread | None = None
        self._pid = 0
        self._running = False  # a guess is being made
        self._closed = False

    def submit(self, session: SessionKey, guess: Guess, make: Callable[[], None]) -> bool:
        """Queue ``make`` (the digest of ``guess``) for ``session`` unless that guess was
        asked for already; whether it was queued."""
        with self._changed:
            if self._closed or self._asked.get(session) == guess:
                return False
            if session not in self._pending and len(self._pending) >= PENDING_SESSIONS:
                return False
            self._asked.put(session, guess)
            self._pending[session] = make  # a newer guess replaces one still waiting
            self._start_locked()
            self._changed.notify()
            return True

    def forget(self) -> None:
        """Drop the guesses waiting and those remembered (after an erasure)."""
        with self._changed:
            self._pending.clear()
            self._asked.clear()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait until no guess waits nor is being made; whether that happened in time."""
        with self._changed:
            return self._changed.wait_for(
                lambda: not self._pending and not self._running, timeout=timeout
            )

    def close(self, timeout: float = 10.0) -> None:
        """Drop what waits, and wait (at most ``timeout`` seconds) for the guess being made."""
        with self._changed:
            self._closed = True
            self._pending.clear()
            self._changed.notify_all()
            thread = self._thread if self._pid == os.getpid() else None
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _start_locked(self) -> None:
        if self._pid != os.getpid():  # none yet, or the parent's (before a fork)
            self._thread, self._pid, self._running = None, os.getpid(), False
        if self._thread is None or not self._thread.is_alive():
            self._thread = threading.Thread(target=self._serve, name="agentctx-digest", daemon=True)
            self._thread.start()

    def _serve(self) -> None:
        lower_this_thread()  # the agent's thread first: this is work ahead
        while True:
            with self._changed:
                self._running = False
                self._changed.notify_all()
                if not self._changed.wait_for(
                    lambda: self._pending or self._closed, timeout=IDLE_SECONDS
                ):
                    self._thread = None
                    return
                if self._closed:
                    return
                session = next(iter(self._pending))
                make = self._pending.pop(session)
                self._running = True
            try:
                make()
            except Exception:  # the sliding window makes it itself
                log.debug("a digest made ahead failed", exc_info=True)
