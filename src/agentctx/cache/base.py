"""What the engine asks of a hot cache, the no-op cache, counters and the circuit breaker.

The cache is never the source of truth. It holds two kinds of entries, each under a
key that a fresh database read validates:

* events, by (user, session, incarnation, seq): an event never changes once written,
  and the incarnation (the session row's ``created_at``) tells a session recreated
  with the same id from the one deleted before it;
* a user's memory reads, by a generation that the database owns (a fingerprint of
  the user's memory rows, their history and their index documents).

So a cache that lost a write, missed a drop or holds an older replica's fill can
make a read slower, never wrong.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, NamedTuple, Protocol, runtime_checkable

from agentctx.events import Event

BreakerState = Literal["closed", "open", "half_open"]


class SessionScope(NamedTuple):
    """One incarnation of one session: the part of an event key besides its seq.

    A named tuple, not a dataclass: a window looks up hundreds of (scope, seq) keys,
    and a tuple hashes and compares in C where a dataclass runs its generated
    ``__hash__`` and ``__eq__`` in Python for each."""

    user_id: str
    session_id: str
    incarnation: str


@dataclass(frozen=True, slots=True)
class CacheStats:
    """Counters since the cache was built (per process)."""

    event_hits: int = 0
    """Events served from the cache."""
    event_misses: int = 0
    """Events the cache lacked, read from the database (and filled)."""
    memory_hits: int = 0
    memory_misses: int = 0
    errors: int = 0
    """Redis calls that failed or timed out; the database answered instead."""
    skipped: int = 0
    """Calls not made because the breaker was open."""
    drop_failures: int = 0
    """Drops (after a deletion) that did not reach Redis; the key checks still hold."""
    breaker: BreakerState = "closed"

    def plus(self, **deltas: int) -> CacheStats:
        """These counters with ``deltas`` added (counter name -> amount)."""
        return replace(self, **{k: getattr(self, k) + v for k, v in deltas.items() if v})


@runtime_checkable
class HotCache(Protocol):
    """A best-effort store of immutable events and generation-keyed memory reads.

    Every method swallows its backend's errors: a get that fails is a miss, a put or
    drop that fails is a no-op (and is counted).
    """

    @property
    def enabled(self) -> bool:
        """False for the no-op cache: callers skip their validation reads."""
        ...

    @property
    def max_events(self) -> int:
        """Reads of more events than this bypass the cache."""
        ...

    def get_events(
        self, scope: SessionScope, seqs: Sequence[int], *, shared: bool = False
    ) -> dict[int, Event]:
        """The cached events of ``scope`` among ``seqs`` (absent ones are left out).

        ``shared``: the caller never changes the events (their payload and JSON are
        plain dicts), so the cache may hand out the same objects again; otherwise each
        read gets objects of its own."""
        ...

    def put_events(self, scope: SessionScope, events: Sequence[Event]) -> None:
        """Cache events of ``scope`` (they must have been read from the database)."""
        ...

    def get_entry(self, user_id: str, generation: str, name: str) -> str | None:
        """A user's cached read ``name`` made at ``generation``, or None."""
        ...

    def put_entry(self, user_id: str, generation: str, name: str, value: str) -> None:
        """Cache a user's read ``name`` computed at (or after) ``generation``."""
        ...

    def drop_session(self, user_id: str, session_id: str) -> None:
        """Forget every cached event of the session (all incarnations)."""
        ...

    def drop_memories(self, user_id: str) -> None:
        """Forget the user's cached memory reads."""
        ...

    def drop_user(self, user_id: str) -> None:
        """Forget everything cached for the user."""
        ...

    def drop_local(self) -> None:
        """Forget everything this process holds in its own memory (a shared cache keeps
        its entries: every deletion drops the deleted user's keys there itself)."""
        ...

    def stats(self) -> CacheStats:
        """The counters."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


class NullCache:
    """The cache when none is configured: stores nothing, every read misses."""

    @property
    def enabled(self) -> bool:
        return False

    @property
    def max_events(self) -> int:
        return 0

    def get_events(
        self, scope: SessionScope, seqs: Sequence[int], *, shared: bool = False
    ) -> dict[int, Event]:
        return {}

    def put_events(self, scope: SessionScope, events: Sequence[Event]) -> None:
        return None

    def get_entry(self, user_id: str, generation: str, name: str) -> str | None:
        return None

    def put_entry(self, user_id: str, generation: str, name: str, value: str) -> None:
        return None

    def drop_session(self, user_id: str, session_id: str) -> None:
        return None

    def drop_memories(self, user_id: str) -> None:
        return None

    def drop_user(self, user_id: str) -> None:
        return None

    def drop_local(self) -> None:
        return None

    def stats(self) -> CacheStats:
        return CacheStats()

    def close(self) -> None:
        return None


class CircuitBreaker:
    """Closed: calls go through. ``failures`` consecutive failures open it: calls are
    refused for ``reset_after`` seconds, then one trial call is let through (half
    open); its success closes the breaker, its failure opens it again. Thread-safe."""

    def __init__(
        self,
        failures: int,
        reset_after: float,
        *,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.failures = failures
        self.reset_after = reset_after
        self._clock = clock
        self._lock = threading.Lock()
        self._count = 0
        self._opened_at: float | None = None
        self._trial = False

    @property
    def state(self) -> BreakerState:
        with self._lock:
            if self._opened_at is None:
                return "closed"
            if self._trial or self._clock() - self._opened_at >= self.reset_after:
                return "half_open"
            return "open"

    def allow(self) -> bool:
        """Whether a call may go to the backend now."""
        with self._lock:
            if self._opened_at is None:
                return True
            if self._trial or self._clock() - self._opened_at < self.reset_after:
                return False
            self._trial = True  # this caller is the one trial; others keep skipping
            return True

    def success(self) -> None:
        with self._lock:
            self._count, self._opened_at, self._trial = 0, None, False

    def failure(self) -> None:
        with self._lock:
            self._count += 1
            if self._trial or self._count >= self.failures:
                self._opened_at, self._trial = self._clock(), False
