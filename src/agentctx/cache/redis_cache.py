"""``RedisCache``: the hot cache on one redis-server, shared by every engine process.

Layout (``p`` is the configured prefix, ids are hashed so any id is a safe key part):

* ``p ev:<user>:<session>:<incarnation>``: a hash, seq -> the event as JSON;
* ``p mem:<user>``: a hash, ``<generation>|<read>`` -> the read as JSON, and ``gen``
  -> the generation last filled (a hint for clearing older generations' fields);
* ``p u:<user>``: a set naming the user's event hashes, so drops need no SCAN.

Every key expires ``ttl`` after its last fill. Every call has the configured timeout
and no retries; errors are counted and answered as a miss, and the circuit breaker
stops calling a Redis that keeps failing.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypeVar

from agentctx.cache.base import CacheStats, CircuitBreaker, SessionScope
from agentctx.cache.config import CacheConfig
from agentctx.errors import MissingExtra
from agentctx.events import Event

if TYPE_CHECKING:
    import redis

log = logging.getLogger(__name__)

T = TypeVar("T")


def _digest(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:32]


def connect(config: CacheConfig) -> redis.Redis:
    """A redis-py client with the cache's timeouts and no retries (the breaker decides
    when to try again, so a dead server costs at most one timeout per reset period)."""
    try:
        import redis  # noqa: PLC0415 - optional dependency
        from redis.backoff import NoBackoff  # noqa: PLC0415
        from redis.retry import Retry  # noqa: PLC0415
    except ImportError as exc:
        raise MissingExtra("redis", "redis") from exc
    assert config.url is not None
    timeout = config.timeout_ms / 1000
    return redis.Redis.from_url(
        config.url,
        socket_timeout=timeout,
        socket_connect_timeout=timeout,
        retry=Retry(NoBackoff(), 0),
        health_check_interval=0,
    )


class RedisCache:
    """The hot cache on Redis (see the module docstring). Thread-safe."""

    def __init__(self, config: CacheConfig, client: redis.Redis | None = None) -> None:
        self.config = config
        self.client = client if client is not None else connect(config)
        self._errors_types = _error_types()
        self.breaker = CircuitBreaker(
            config.breaker.failures, config.breaker.reset_after.total_seconds()
        )
        self._ttl_ms = max(1, int(config.ttl.total_seconds() * 1000))
        self._lock = threading.Lock()
        self._stats = CacheStats()

    @property
    def enabled(self) -> bool:
        return True

    @property
    def max_events(self) -> int:
        return self.config.max_events

    # Keys -------------------------------------------------------------------------------

    def _user_key(self, user_id: str) -> str:
        return f"{self.config.prefix}u:{_digest(user_id)}"

    def _memory_key(self, user_id: str) -> str:
        return f"{self.config.prefix}mem:{_digest(user_id)}"

    def _session_prefix(self, user_id: str, session_id: str) -> str:
        return f"{self.config.prefix}ev:{_digest(user_id)}:{_digest(session_id)}:"

    def _events_key(self, scope: SessionScope) -> str:
        prefix = self._session_prefix(scope.user_id, scope.session_id)
        return prefix + _digest(scope.incarnation)

    # Calls ------------------------------------------------------------------------------

    def _call(self, action: Callable[[], T], default: T, *, drop: bool = False) -> T:
        """Run one Redis action under the breaker; any backend error gives ``default``."""
        if not self.breaker.allow():
            self._count(skipped=1, drop_failures=int(drop))
            return default
        try:
            result = action()
        except self._errors_types as exc:
            self.breaker.failure()
            self._count(errors=1, drop_failures=int(drop))
            log.debug("redis cache call failed: %s", exc)
            return default
        self.breaker.success()
        return result

    def _count(self, **deltas: int) -> None:
        with self._lock:
            self._stats = self._stats.plus(**deltas)

    def stats(self) -> CacheStats:
        with self._lock:
            return replace(self._stats, breaker=self.breaker.state)

    # Events -----------------------------------------------------------------------------

    def get_events(
        self, scope: SessionScope, seqs: Sequence[int], *, shared: bool = False
    ) -> dict[int, Event]:
        if not seqs:
            return {}
        key = self._events_key(scope)
        values: list[Any] = self._call(lambda: self.client.hmget(key, list(seqs)), [])
        found: dict[int, Event] = {}
        for seq, raw in zip(seqs, values, strict=False):
            if raw is None:
                continue
            try:
                event = Event.model_validate_json(raw)
            except ValueError:  # a damaged entry is a miss; the fill overwrites it
                continue
            if event.seq == seq and event.session_id == scope.session_id:
                found[seq] = event
        self._count(event_hits=len(found), event_misses=len(seqs) - len(found))
        return found

    def put_events(self, scope: SessionScope, events: Sequence[Event]) -> None:
        if not events:
            return
        key = self._events_key(scope)
        user_key = self._user_key(scope.user_id)
        mapping: dict[Any, Any] = {str(event.seq): event.model_dump_json() for event in events}

        def fill() -> None:
            pipe = self.client.pipeline(transaction=False)
            pipe.hset(key, mapping=mapping)
            pipe.pexpire(key, self._ttl_ms)
            pipe.sadd(user_key, key)
            pipe.pexpire(user_key, self._ttl_ms)
            pipe.execute()

        self._call(fill, None)

    # Generation-keyed entries -----------------------------------------------------------

    def get_entry(self, user_id: str, generation: str, name: str) -> str | None:
        key = self._memory_key(user_id)
        raw = self._call(lambda: self.client.hget(key, f"{generation}|{name}"), None)
        self._count(memory_hits=int(raw is not None), memory_misses=int(raw is None))
        if raw is None:
            return None
        return raw.decode() if isinstance(raw, bytes) else str(raw)

    def put_entry(self, user_id: str, generation: str, name: str, value: str) -> None:
        key = self._memory_key(user_id)

        def fill() -> None:
            # Fields of older generations can never be read again: clear them when the
            # generation moves (a racing filler of an older one only costs a refill).
            if self.client.hget(key, "gen") not in (generation, generation.encode()):
                pipe = self.client.pipeline(transaction=True)
                pipe.delete(key)
                pipe.hset(key, mapping={"gen": generation, f"{generation}|{name}": value})
            else:
                pipe = self.client.pipeline(transaction=True)
                pipe.hset(key, f"{generation}|{name}", value)
            pipe.pexpire(key, self._ttl_ms)
            pipe.execute()

        self._call(fill, None)

    # Drops ------------------------------------------------------------------------------

    def drop_session(self, user_id: str, session_id: str) -> None:
        user_key = self._user_key(user_id)
        prefix = self._session_prefix(user_id, session_id)

        def drop() -> None:
            members = [
                m.decode() if isinstance(m, bytes) else str(m)
                for m in self.client.smembers(user_key)
            ]
            keys = [m for m in members if m.startswith(prefix)]
            if keys:
                pipe = self.client.pipeline(transaction=True)
                pipe.delete(*keys)
                pipe.srem(user_key, *keys)
                pipe.execute()

        self._call(drop, None, drop=True)

    def drop_memories(self, user_id: str) -> None:
        key = self._memory_key(user_id)
        self._call(lambda: self.client.delete(key), None, drop=True)

    def drop_user(self, user_id: str) -> None:
        user_key = self._user_key(user_id)

        def drop() -> None:
            members = list(self.client.smembers(user_key))
            self.client.delete(*members, self._memory_key(user_id), user_key)

        self._call(drop, None, drop=True)

    def drop_local(self) -> None:
        return None  # nothing is held in this process; deletions drop their keys here

    def close(self) -> None:
        self._call(self.client.close, None)


def _error_types() -> tuple[type[BaseException], ...]:
    import redis  # noqa: PLC0415 - optional dependency, present once connect() worked

    # OSError: a socket failing below redis-py's own wrapping.
    return (redis.RedisError, OSError)
