"""The optional hot cache (Redis) in front of the database: recent events of active
sessions and users' memory reads (seed 003 A.1.5).

``build_cache(config)`` gives a :class:`RedisCache` when ``config.url`` is set, else
the no-op :class:`NullCache`. Results are the same either way: every cached entry is
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


def build_cache(config: CacheConfig | None) -> HotCache:
    """The cache ``config`` asks for: Redis when it names a URL, else the no-op cache.

    Building never contacts Redis (a server that is down only makes reads miss);
    a missing ``redis`` package raises MissingExtra with the pip line.
    """
    if config is None or config.url is None:
        return NullCache()
    from agentctx.cache.redis_cache import RedisCache  # noqa: PLC0415 - optional extra

    return RedisCache(config)


__all__ = [
    "BreakerConfig",
    "BreakerState",
    "CacheConfig",
    "CacheStats",
    "CircuitBreaker",
    "HotCache",
    "NullCache",
    "SessionScope",
    "build_cache",
]
