"""A Redis that dies or hangs mid-run: the engine keeps answering from the database
with the same results, counts the failures, and the circuit breaker keeps a hung
server from adding a timeout to every call."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.cache import CacheConfig, CircuitBreaker, LocalCache, NullCache, build_cache
from agentctx.cache.redis_cache import RedisCache
from cache.redis_server import RedisServer, make_engine, redis_server


@pytest.fixture
def server(tmp_path: Path) -> Iterator[RedisServer]:
    folder = tmp_path / "redis"
    folder.mkdir()
    with redis_server(folder) as srv:
        yield srv


def _reads(engine: ContextEngine, session_id: str) -> tuple[object, ...]:
    session = engine.get_session(session_id, user_id="u1")
    return (
        [e.event_id for e in session.events(last=6)],
        session.build_context(query="order", budget=1500).messages,
        [m.memory_id for m in engine.memory.list("u1")],
        [h.memory.memory_id for h in engine.memory.search("u1", "parcel")],
    )


def _fill(engine: ContextEngine) -> str:
    session = engine.create_session("u1", "helper")
    for i in range(6):
        session.add_message("user", f"where is my order {i}?")
        session.add_message("assistant", f"order {i} ships tomorrow")
    engine.memory.add("u1", "The user's parcels go to the office", keywords=["parcel"])
    return session.id


def _cache(engine: ContextEngine) -> RedisCache:
    assert isinstance(engine._service.cache, RedisCache)
    return engine._service.cache


def test_killed_redis_changes_nothing_but_counters(
    db_url: str, tmp_path: Path, server: RedisServer
) -> None:
    with (
        make_engine(db_url, tmp_path / "a", server, breaker={"failures": 2}) as cached,
        make_engine(db_url, tmp_path / "c", None) as plain,
    ):
        session_id = _fill(cached)
        expected = _reads(plain, session_id)
        assert _reads(cached, session_id) == expected
        assert _reads(cached, session_id) == expected
        assert _cache(cached).stats().event_hits > 0
        server.stop()  # crash
        for _ in range(3):
            assert _reads(cached, session_id) == expected
        cached.get_session(session_id, user_id="u1").add_message("user", "and order 7?")
        assert _reads(cached, session_id) == _reads(plain, session_id)
        stats = _cache(cached).stats()
        assert stats.errors == 2  # then the breaker opened
        assert stats.skipped > 0
        assert stats.breaker == "open"
        cached.delete_user_data("u1")  # the drops cannot reach Redis; counted, not raised
        # One drop: all the user had, their memory reads included, once it committed.
        assert _cache(cached).stats().drop_failures == 1


def test_hung_redis_costs_one_timeout_per_breaker_period(
    db_url: str, tmp_path: Path, server: RedisServer
) -> None:
    """A hung server (SIGSTOP: connections accepted, never answered) is the slow case:
    every call would wait the full timeout. With the breaker, only ``failures`` calls
    do; the rest skip Redis until ``reset_after``, then one trial call finds it back."""
    timeout_ms = 300
    breaker = {"failures": 2, "reset_after": 2.5}
    with (
        make_engine(
            db_url, tmp_path / "a", server, timeout_ms=timeout_ms, breaker=breaker
        ) as cached,
        make_engine(db_url, tmp_path / "c", None) as plain,
    ):
        session_id = _fill(cached)
        expected = _reads(plain, session_id)
        assert _reads(cached, session_id) == expected
        rounds = 6
        started = time.perf_counter()
        for _ in range(rounds):
            _reads(plain, session_id)
        baseline = time.perf_counter() - started

        server.pause()
        started = time.perf_counter()
        for _ in range(rounds):
            assert _reads(cached, session_id) == expected
        degraded = time.perf_counter() - started
        stats = _cache(cached).stats()
        # Without the breaker every Redis call of every round (4+ per round) would wait
        # the timeout: over 7 s here. With it: two timeouts, then one trial per period.
        periods = int(degraded / breaker["reset_after"]) + 1
        assert 2 <= stats.errors <= 2 + periods
        assert stats.skipped >= rounds * 4 - stats.errors
        assert degraded < baseline * 1.5 + stats.errors * timeout_ms / 1000 + 1.0

        server.resume()
        time.sleep(breaker["reset_after"] + 0.1)  # the next call is the trial
        hits = stats.event_hits
        assert _reads(cached, session_id) == expected
        assert _reads(cached, session_id) == expected
        recovered = _cache(cached).stats()
        assert recovered.breaker == "closed"
        assert recovered.event_hits > hits


def test_breaker_opens_after_consecutive_failures_and_tries_again() -> None:
    now = [0.0]
    breaker = CircuitBreaker(3, 10.0, clock=lambda: now[0])
    for _ in range(2):
        assert breaker.allow()
        breaker.failure()
    breaker.success()  # failures must be consecutive
    for _ in range(3):
        assert breaker.allow()
        breaker.failure()
    assert breaker.state == "open"
    assert not breaker.allow()
    now[0] = 10.0
    assert breaker.allow()  # the one trial
    assert not breaker.allow()  # others keep skipping while it runs
    breaker.failure()
    assert breaker.state == "open"
    assert not breaker.allow()
    now[0] = 20.5
    assert breaker.allow()
    breaker.success()
    assert breaker.state == "closed"
    assert breaker.allow()


def test_build_cache() -> None:
    assert isinstance(build_cache(None), NullCache)
    assert isinstance(build_cache(CacheConfig()), LocalCache)  # the default: in process
    assert isinstance(build_cache(CacheConfig(local_events=0)), NullCache)
    # Building never contacts the server: a port nobody listens on is fine.
    cache = build_cache(CacheConfig(url="redis://127.0.0.1:1/0", timeout_ms=50))
    assert isinstance(cache, RedisCache)
    assert cache.get_entry("u", "g", "x") is None
    assert cache.stats().errors == 1
