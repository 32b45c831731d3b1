"""Background threads yield the CPU and the database's writer to the agent's thread.

On a machine with few cores, the embedding model (PyTorch runs on every core it can),
summaries and indexing in the background compete with the thread that builds the
agent's next window. Background threads therefore lower their own scheduling priority:
on Linux a thread has a nice value of its own, and the threads it starts later (such as
PyTorch's pool, started by the first model call) inherit it. The agent's thread keeps its
priority; the background work takes what it leaves. Elsewhere the nice value stays.

SQLite has one writer at a time, and the agent's append waited behind background
writes (index rows, job bookkeeping, window records) that queued at the same moment.
A thread that marked itself (:func:`mark_background_thread`, or
:func:`lower_this_thread`, which also lowers it) is a background thread, and
:class:`ForegroundFirstLock` lets every foreground thread waiting for it go first.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

BACKGROUND_NICENESS = 10
"""How much lower than the process a background thread runs (nice steps, 0-19)."""


_thread_kind = threading.local()


def is_background_thread() -> bool:
    """Whether the calling thread marked itself as one of agentctx's background threads
    (:func:`mark_background_thread`)."""
    return bool(getattr(_thread_kind, "background", False))


def mark_background_thread() -> None:
    """Mark the calling thread as a background thread: the agent's threads take the
    database's writer before it (:class:`ForegroundFirstLock`)."""
    _thread_kind.background = True


def lower_this_thread() -> None:
    """Mark the calling thread as a background thread and lower its priority by
    :data:`BACKGROUND_NICENESS` (Linux only; never raises: a sandbox that forbids it
    leaves the priority as it is)."""
    mark_background_thread()
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        tid = threading.get_native_id()
        current = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, current + BACKGROUND_NICENESS))


class ForegroundFirstLock:
    """A mutual-exclusion lock that foreground threads get before background ones.

    The guarantee: when the lock is released, a waiting foreground thread gets it
    before any waiting background thread; a background thread takes it only while no
    foreground thread waits (under a foreground load that never pauses, background
    work waits for the pause). Among threads of one kind, the order is unspecified.
    Not reentrant.
    """

    __slots__ = ("_background_waiting", "_changed", "_foreground_waiting", "_held")

    def __init__(self) -> None:
        self._changed = threading.Condition(threading.Lock())
        self._held = False
        self._foreground_waiting = 0
        self._background_waiting = 0

    @property
    def waiting(self) -> tuple[int, int]:
        """How many (foreground, background) threads wait for the lock now."""
        with self._changed:
            return self._foreground_waiting, self._background_waiting

    def acquire(self) -> None:
        """Wait for the lock, behind every waiting foreground thread if this one is a
        background thread."""
        with self._changed:
            if is_background_thread():
                self._background_waiting += 1
                try:
                    while self._held or self._foreground_waiting:
                        self._changed.wait()
                finally:
                    self._background_waiting -= 1
            else:
                self._foreground_waiting += 1
                try:
                    while self._held:
                        self._changed.wait()
                finally:
                    self._foreground_waiting -= 1
            self._held = True

    def release(self) -> None:
        """Release the lock (held by the calling thread)."""
        with self._changed:
            if not self._held:
                raise RuntimeError("release of an unlocked ForegroundFirstLock")
            self._held = False
            self._changed.notify_all()

    def __enter__(self) -> ForegroundFirstLock:
        self.acquire()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()
