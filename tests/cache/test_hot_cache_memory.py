"""Memory list and search through the Redis hot cache: keyed by a generation the
database owns, so no replica serves a memory set older than the database's."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.cache.memories import Generation, search_valid_until
from agentctx.cache.redis_cache import RedisCache
from agentctx.memory.index import freshness
from cache.redis_server import make_engine, redis_server


@pytest.fixture
def replicas(db_url: str, tmp_path: Path) -> Iterator[tuple[ContextEngine, ...]]:
    """Two cached replicas (A, B) and a cache-off one (C) on one database."""
    folder = tmp_path / "redis"
    folder.mkdir()
    with redis_server(folder) as server:
        engines = (
            make_engine(db_url, tmp_path / "a", server),
            make_engine(db_url, tmp_path / "b", server),
            make_engine(db_url, tmp_path / "c", None),
        )
        yield engines
        for engine in engines:
            engine.close()


def _cache(engine: ContextEngine) -> RedisCache:
    assert isinstance(engine.memory.cache, RedisCache)
    return engine.memory.cache


def _ids(hits: list) -> list[str]:  # type: ignore[type-arg]
    return [hit.memory.memory_id for hit in hits]


def test_memory_reads_follow_another_replicas_writes(replicas: tuple[ContextEngine, ...]) -> None:
    a, b, c = replicas
    tea = a.memory.add("u1", "The user drinks green tea every morning", keywords=["tea"])
    a.memory.add("u1", "The user lives in Porto", keywords=["city"])
    for _ in range(2):  # the second round is served from the cache
        assert _ids(b.memory.search("u1", "green tea")) == _ids(c.memory.search("u1", "green tea"))
        assert b.memory.list("u1") == c.memory.list("u1")
    assert _cache(b).stats().memory_hits >= 2
    assert _ids(b.memory.search("u1", "green tea"))[0] == tea.memory_id

    a.memory.update("u1", tea.memory_id, content="The user switched to black coffee")
    listed = {m.memory_id: m.content for m in b.memory.list("u1")}
    assert listed[tea.memory_id] == "The user switched to black coffee"
    found = b.memory.search("u1", "black coffee")
    assert _ids(found)[0] == tea.memory_id
    assert found[0].memory.version == 2
    assert "green tea" not in str([h.memory.content for h in b.memory.search("u1", "green tea")])

    a.memory.delete("u1", tea.memory_id)
    assert tea.memory_id not in [m.memory_id for m in b.memory.list("u1")]
    assert tea.memory_id not in _ids(b.memory.search("u1", "black coffee"))
    assert b.memory.list("u1") == c.memory.list("u1")


def test_cached_search_has_current_scores_and_the_databases_ranking(
    replicas: tuple[ContextEngine, ...],
) -> None:
    a, b, c = replicas
    for i in range(8):
        a.memory.add(
            "u1", f"Project {i} uses the Rust compiler version {i}", confidence=0.5 + i / 20
        )
    b.memory.search("u1", "Rust compiler", limit=5)  # fill
    before = _cache(b).stats().memory_hits
    cached = b.memory.search("u1", "Rust compiler", limit=5)
    fresh = c.memory.search("u1", "Rust compiler", limit=5)
    assert _cache(b).stats().memory_hits == before + 1
    assert _ids(cached) == _ids(fresh)
    index = b.memory.index
    assert index is not None
    for hit, other in zip(cached, fresh, strict=True):
        assert hit.relevance == other.relevance
        assert hit.score == pytest.approx(other.score, rel=1e-9)
        # scores are the index's formula at read time, not the stored ones
        now = datetime.now(UTC)
        weight = freshness(
            hit.memory.updated_at,
            now,
            half_life_days=index.half_life_days,
            floor=index.freshness_floor,
        )
        assert hit.score == pytest.approx(hit.relevance * hit.memory.confidence * weight)
    no_query = b.memory.search("u1", None, limit=3)
    assert _ids(no_query) == _ids(c.memory.search("u1", None, limit=3))


def test_purged_then_recreated_user_shows_no_old_memories(
    replicas: tuple[ContextEngine, ...],
) -> None:
    a, b, c = replicas
    a.memory.add("u1", "The user's passport number ends in 4711", keywords=["passport"])
    assert b.memory.search("u1", "passport")  # cached on B's side
    assert b.memory.list("u1")
    # Purged by the cache-off replica: nothing drops the cached reads.
    c.delete_user_data("u1")
    assert b.memory.list("u1") == []
    assert b.memory.search("u1", "passport") == []
    a.memory.add("u1", "The user likes sailing", keywords=["sailing"])
    assert [m.content for m in b.memory.list("u1")] == ["The user likes sailing"]
    assert "4711" not in str(b.memory.search("u1", "passport"))


def test_search_validity_follows_expiry_and_the_freshness_floor() -> None:
    now = datetime(2026, 1, 1, tzinfo=UTC)
    floor_age = timedelta(days=180)  # half life 180 days, floor 0.5

    def until(oldest: timedelta, newest: timedelta, expiry: datetime | None) -> datetime | None:
        generation = Generation("g", 3, now - oldest, now - newest, expiry)
        return search_valid_until(generation, now, half_life_days=180, floor=0.5)

    forever = datetime.max.replace(tzinfo=UTC)
    # all decaying: until the oldest reaches the floor, or the next expiry before it
    assert until(timedelta(days=10), timedelta(days=1), None) == now - timedelta(10) + floor_age
    assert until(timedelta(days=10), timedelta(0), now + timedelta(hours=1)) == now + timedelta(
        hours=1
    )
    # all at the floor: the ranking never changes
    assert until(timedelta(days=400), timedelta(days=200), None) == forever
    # some at the floor, some decaying, or one from the future: never cached
    assert until(timedelta(days=400), timedelta(days=1), None) is None
    assert until(timedelta(days=1), -timedelta(minutes=1), None) is None
    empty = Generation("g", 0, None, None, None)
    assert search_valid_until(empty, now, half_life_days=180, floor=0.5) == forever
