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

A lower priority does not share out the interpreter lock: a background thread running
Python (compaction's summaries and folds, indexing a tool output's words) took it half
the time while the agent's window was built, and the window took twice as long. The
agent's calls on the critical path (a window, an append) run inside :func:`foreground`;
background work calls :func:`yield_to_foreground` at safe points (before each database
transaction, and in the loops that read text) and waits there while one is under way,
at most :data:`FOREGROUND_MAX_WAIT` at a time and :data:`WAITING_SHARE` of its time, so
background work still moves under a foreground load that never pauses. A safe point is
one where the thread holds no transaction (:func:`in_transaction`): a paused thread
never holds the database's writer, nor a snapshot, that the agent's call would wait
for. The agent's window (p95) in ``bench agentstep`` went from 69 to 47 ms with
compaction on, where summaries and folds had run beside it.
"""

from __future__ import annotations

import contextlib
import functools
import os
import sys
import threading
import time
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar

_P = ParamSpec("_P")
_R = TypeVar("_R")

BACKGROUND_NICENESS = 10
"""How much lower than the process a background thread runs (nice steps, 0-19)."""

FOREGROUND_MAX_WAIT = 0.1
"""The longest a background thread waits at one :func:`yield_to_foreground` (seconds)."""

WAITING_SHARE = 0.5
"""At most this share of a background thread's time goes to waiting for foreground
calls: a server whose requests never pause still gets its summaries and vectors made
(each thread earns this many seconds of waiting per second, up to
:data:`WAITING_CREDIT`)."""

WAITING_CREDIT = 0.25
"""The most waiting a background thread has in hand (seconds): a burst of the agent's
calls is waited out whole."""

FOREGROUND_SWITCH_INTERVAL = 0.0005
"""The interpreter's thread switch interval while a foreground call is under way
(seconds; Python's default is 0.005)."""


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


class _SwitchInterval:
    """The interpreter's switch interval, lowered while anyone asks (reference counted).

    A thread that wants the interpreter lock gets it when the holder releases it (for a
    database call, a model's forward pass) or, at the latest, when the holder's switch
    interval ends and it is made to. The agent's calls release the lock often (each
    database call) and then wait, up to 5 ms by default, to get it back from a thread
    running Python; a helper thread embedding the agent's query waits as long for each
    short step it takes in Python. A shorter interval bounds each such wait."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._asked: list[float] = []
        self._saved = 0.0  # the interval before the first of the requests under way

    @contextlib.contextmanager
    def at_most(self, seconds: float) -> Iterator[None]:
        """The switch interval at most ``seconds`` until the block ends (and every other
        request with it); then what it was before the first request."""
        with self._lock:
            if not self._asked:
                self._saved = sys.getswitchinterval()
            self._asked.append(seconds)
            sys.setswitchinterval(min([self._saved, *self._asked]))
        try:
            yield
        finally:
            with self._lock:
                self._asked.remove(seconds)
                sys.setswitchinterval(min([self._saved, *self._asked]))


switch_interval = _SwitchInterval()
"""The process's one owner of the interpreter's switch interval (see
:meth:`_SwitchInterval.at_most`)."""


class _Foreground:
    """How many foreground calls are under way in the process, and an event set while
    there are none."""

    def __init__(self) -> None:
        self.calls = 0
        self.lock = threading.Lock()
        self.idle = threading.Event()
        self.idle.set()


_foreground = _Foreground()


@contextlib.contextmanager
def foreground() -> Iterator[None]:
    """Mark a call on the agent's critical path (a window, an append): background threads
    wait at their next :func:`yield_to_foreground` until it (and every other one under
    way) has returned. Re-entrant; costs two uncontended lock round trips. In a
    background thread (which may append, e.g. a summary's events) it marks nothing."""
    if is_background_thread():
        yield
        return
    state = _foreground
    with state.lock:
        state.calls += 1
        state.idle.clear()
    try:
        with switch_interval.at_most(FOREGROUND_SWITCH_INTERVAL):
            yield
    finally:
        with state.lock:
            state.calls -= 1
            if not state.calls:
                state.idle.set()


def foreground_call(call: Callable[_P, _R]) -> Callable[_P, _R]:
    """``call`` run as a :func:`foreground` call (a decorator for the agent's calls)."""

    @functools.wraps(call)
    def in_foreground(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with foreground():
            return call(*args, **kwargs)

    return in_foreground


def foreground_busy() -> bool:
    """Whether a :func:`foreground` call is under way."""
    return _foreground.calls > 0


def yield_to_foreground(max_wait: float = FOREGROUND_MAX_WAIT) -> float:
    """In a background thread outside any transaction: wait while a :func:`foreground`
    call is under way (at most ``max_wait`` seconds, and within the thread's share, see
    :data:`WAITING_SHARE`). Anywhere else, return at once. Returns the seconds waited."""
    if not _foreground.calls or not is_background_thread():
        return 0.0
    if getattr(_thread_kind, "transactions", 0):
        return 0.0
    now = time.monotonic()
    credit = min(
        WAITING_CREDIT,
        getattr(_thread_kind, "credit", WAITING_CREDIT)
        + WAITING_SHARE * (now - getattr(_thread_kind, "credited_at", now)),
    )
    _thread_kind.credited_at = now
    if credit <= 0:
        _thread_kind.credit = credit
        return 0.0
    _foreground.idle.wait(min(max_wait, credit))
    waited = time.monotonic() - now
    _thread_kind.credit = credit - waited
    return waited


@contextlib.contextmanager
def in_transaction() -> Iterator[None]:
    """Mark the calling thread as inside a database transaction (nested marks count):
    :func:`yield_to_foreground` does not pause it there."""
    _thread_kind.transactions = getattr(_thread_kind, "transactions", 0) + 1
    try:
        yield
    finally:
        _thread_kind.transactions -= 1
