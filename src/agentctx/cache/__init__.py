"""The hot cache in front of the database: events of active sessions and users'
memory reads (seed 003 A.1.5).

``build_cache(config)`` gives a :class:`RedisCache` when ``config.url`` is set, else
the in-process :class:`LocalCache` (or the no-op :class:`NullCache` when
``local_events`` is 0). Results are the same either way: every cached entry is
validated by a fresh database read (session head, memory generation), and a failing
Redis is skipped (timeout, counters, circuit breaker).
"""

from __future__ import annotations

from agentctx.cache.base import (
    BreakerState,
    CacheStats,
    CircuitBreaker,
    HotCache,
    NullCache,
    SessionScope,
)
from agentctx.cache.config import BreakerConfig, CacheConfig
from agentctx.cache.local import LocalCache


def build_cache(config: CacheConfig | None) -> HotCache:
    """The cache ``config`` asks for: Redis when it names a URL, else the in-process
    cache, or none when that is sized 0 or ``config`` is None.

    Building never contacts Redis (a server that is down only makes reads miss);
    a missing ``redis`` package raises MissingExtra with the pip line.
    """
    if config is None:
        return NullCache()
    if config.url is None:
        if config.local_events == 0:
            return NullCache()
        return LocalCache(config.max_events, events=config.local_events, tokens=config.local_tokens)
    from agentctx.cache.redis_cache import RedisCache  # noqa: PLC0415 - optional extra

    return RedisCache(config)


__all__ = [
    "BreakerConfig",
    "BreakerState",
    "CacheConfig",
    "CacheStats",
    "CircuitBreaker",
    "HotCache",
    "LocalCache",
    "NullCache",
    "SessionScope",
    "build_cache",
]
