"""Events through the Redis hot cache: the same answers as the database, on every
replica, across deletion and same-id recreation (a real redis-server, SQLite and
PostgreSQL)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.cache import CacheConfig, build_cache
from agentctx.cache.events import wanted_seqs
from agentctx.cache.redis_cache import RedisCache
from cache.redis_server import RedisServer, attach_cache, redis_server
from conftest import make_png


@pytest.fixture
def redis_srv(tmp_path: Path) -> Iterator[RedisServer]:
    folder = tmp_path / "redis"
    folder.mkdir()
    with redis_server(folder) as server:
        yield server


def _cached_engine(db_url: str, home: Path, server: RedisServer) -> ContextEngine:
    engine = ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"})
    attach_cache(engine, build_cache(CacheConfig(url=server.url, timeout_ms=500)))
    return engine


@pytest.fixture
def replicas(
    db_url: str, tmp_path: Path, redis_srv: RedisServer
) -> Iterator[tuple[ContextEngine, ContextEngine, ContextEngine]]:
    """Two cached replicas (A, B) and a cache-off one (C) on one database."""
    a = _cached_engine(db_url, tmp_path / "a", redis_srv)
    b = _cached_engine(db_url, tmp_path / "b", redis_srv)
    c = ContextEngine(
        url=db_url,
        home=tmp_path / "c",
        embeddings={"provider": "hashing"},
        cache={"local_events": 0},
    )
    yield a, b, c
    for engine in (a, b, c):
        engine.close()


def _stats(engine: ContextEngine) -> RedisCache:
    cache = engine._service.cache
    assert isinstance(cache, RedisCache)
    return cache


def test_cached_reads_equal_database_reads_for_every_shape(
    replicas: tuple[ContextEngine, ContextEngine, ContextEngine],
) -> None:
    a, _, c = replicas
    session = a.create_session("u1", "helper")
    for i in range(12):
        with session.turn() as turn:
            turn.add_message("user", f"question {i}")
            call = turn.add_tool_call("lookup", {"q": i})
            images = [make_png(seed=i)] if i % 4 == 0 else []
            turn.add_tool_result(call.call_id, content=f"result {i}", images=images)
            turn.add_message("assistant", f"answer {i}", metadata={"i": i})
    plain = c._service
    cached = a._service
    shapes: list[dict[str, object]] = [{}]
    for start, end, count in itertools.product((None, 7, 40), (None, 5, 48, 99), (0, 3)):
        shapes += [
            {"start_seq": start, "end_seq": end},
            {"start_seq": start, "end_seq": end, "limit": count},
            {"start_seq": start, "end_seq": end, "last": count},
            {"start_seq": start, "end_seq": end, "seqs": [3, 9, 9, 31, 47, 48, 60], "last": 2},
            {"start_seq": start, "end_seq": end, "seqs": [48, 2, 5], "limit": count or None},
        ]
    for shape in shapes:
        expected = plain.events("u1", session.id, **shape)  # type: ignore[arg-type]
        assert cached.events("u1", session.id, **shape) == expected, shape  # type: ignore[arg-type]
        # and again, now from the cache
        assert cached.events("u1", session.id, **shape) == expected, shape  # type: ignore[arg-type]
    stats = _stats(a).stats()
    assert stats.event_hits > stats.event_misses > 0
    assert stats.errors == 0
    # Filters the cache does not serve still work (read from the database).
    assert [e.seq for e in cached.events("u1", session.id, types=["tool_call"])] == [
        e.seq for e in plain.events("u1", session.id, types=["tool_call"])
    ]


def test_second_read_is_served_from_redis(
    replicas: tuple[ContextEngine, ContextEngine, ContextEngine], redis_srv: RedisServer
) -> None:
    a, _, _ = replicas
    session = a.create_session("u1", "helper")
    for i in range(5):
        session.add_message("user", f"m{i}")
    first = session.events(last=5)
    before = _stats(a).stats()
    assert session.events(last=5) == first
    after = _stats(a).stats()
    assert after.event_hits - before.event_hits == 5
    assert after.event_misses == before.event_misses
    assert any(key.startswith(b"agentctx:ev:") for key in redis_srv.client().keys("*"))


def test_replica_sees_the_other_replicas_writes_at_once(
    replicas: tuple[ContextEngine, ContextEngine, ContextEngine],
) -> None:
    a, b, c = replicas
    session_a = a.create_session("u1", "helper", session_id="shared")
    session_b = b.get_session("shared", user_id="u1")
    session_c = c.get_session("shared", user_id="u1")
    for i in range(8):
        writer = session_a if i % 2 == 0 else session_b
        writer.add_message("user", f"step {i}: the code is {i * 7}")
        # Each replica's next read sees the write, whoever made it (no stale window).
        for reader in (session_a, session_b):
            events = reader.events(last=4)
            assert events[-1].text == f"step {i}: the code is {i * 7}"
            window = reader.build_context(query="code", budget=2000)
            assert window.messages == session_c.build_context(query="code", budget=2000).messages
            assert f"step {i}: the code is {i * 7}" in str(window.messages)
    assert _stats(a).stats().event_hits > 0
    assert _stats(b).stats().event_hits > 0


def test_deleted_then_recreated_session_shows_no_old_events(
    replicas: tuple[ContextEngine, ContextEngine, ContextEngine], redis_srv: RedisServer
) -> None:
    a, b, c = replicas
    old = a.create_session("u1", "helper", session_id="s1")
    old.add_message("user", "my old secret is tangerine")
    old.add_message("assistant", "noted")
    reader = b.get_session("s1", user_id="u1")
    assert "tangerine" in reader.events()[0].text  # cached on B's side now
    # Deleted by the cache-off replica: nothing drops the cached events. The head
    # check still must not serve them.
    c.delete_user_data("u1")
    new = a.create_session("u1", "helper", session_id="s1")
    new.add_message("user", "a fresh start")
    for engine in (a, b):
        session = engine.get_session("s1", user_id="u1")
        texts = [e.text for e in session.events()]
        assert texts == ["a fresh start"]
        window = session.build_context(query="secret", budget=2000)
        assert "tangerine" not in str(window.messages)
    # Deleted through a cached replica: nothing of the user stays in Redis.
    a.memory.add("u1", "The user's old secret was tangerine")
    assert b.memory.list("u1")  # cached
    a.delete_user_data("u1")
    user_digest = RedisCache._user_key(_stats(a), "u1").rsplit(":", 1)[1]
    assert not [k for k in redis_srv.client().keys("*") if user_digest.encode() in k]
    assert b.memory.list("u1") == []


def test_cache_off_and_on_give_the_same_windows(
    replicas: tuple[ContextEngine, ContextEngine, ContextEngine],
) -> None:
    a, b, c = replicas
    session = a.create_session("u2", "helper")
    for i in range(9):
        with session.turn() as turn:
            turn.add_message("user", f"please book flight {i} to Lisbon")
            call = turn.add_tool_call("search_flights", {"n": i})
            turn.add_tool_result(call.call_id, content=f"flight {i}: 100{i} EUR")
            turn.add_message("assistant", f"booked flight {i}")
        if i % 4:
            continue
        for budget in (300, 4000):
            windows = [
                e.get_session(session.id, user_id="u2").build_context(
                    query="Lisbon flight", budget=budget
                )
                for e in (a, b, c, a)
            ]
            expected = windows[2]
            for window in windows:
                assert window.messages == expected.messages
                assert window.report.included_event_ids == expected.report.included_event_ids


@pytest.mark.parametrize("last_seq", [0, 1, 9])
def test_wanted_seqs_has_the_databases_semantics(last_seq: int) -> None:
    universe = list(range(1, last_seq + 1))
    for start, end, limit, last in itertools.product(
        (None, 0, 1, 4, 20), (None, 0, 3, 9, 20), (None, 0, 2, 50), (None, 0, 2, 50)
    ):
        if limit is not None and last is not None:
            continue
        for seqs in (None, [5, 1, 1, 20, 3]):
            rows = [
                s
                for s in universe
                if (start is None or s >= start)
                and (end is None or s <= end)
                and (seqs is None or s in seqs)
            ]
            if last is not None:
                rows = rows[len(rows) - last :] if last else []
            elif limit is not None:
                rows = rows[:limit]
            got = wanted_seqs(
                last_seq, start_seq=start, end_seq=end, limit=limit, last=last, seqs=seqs
            )
            assert got == rows, (start, end, limit, last, seqs)


def test_concurrent_reads_on_a_replica_never_lag_acknowledged_writes(
    replicas: tuple[ContextEngine, ContextEngine, ContextEngine],
) -> None:
    """Guarantee: a read on any replica that starts after a write was acknowledged
    returns that write (and the events before it, exactly), while another replica
    keeps writing and other readers keep filling the cache."""
    a, b, _ = replicas
    writer = a.create_session("u1", "helper", session_id="race")
    acknowledged = [0]
    failures: list[str] = []
    done = threading.Event()

    def read() -> None:
        session = b.get_session("race", user_id="u1")
        while not done.is_set():
            floor = acknowledged[0]
            events = session.events(last=3)
            seqs = [e.seq for e in events]
            if floor and (not seqs or seqs[-1] < floor):
                failures.append(f"read {seqs} after seq {floor} was acknowledged")
            if seqs and seqs != list(range(seqs[0], seqs[0] + len(seqs))):
                failures.append(f"gap in {seqs}")
            failures.extend(f"{e.seq}: {e.text}" for e in events if e.text != f"m{e.seq}")

    readers = [threading.Thread(target=read) for _ in range(3)]
    for thread in readers:
        thread.start()
    try:
        for i in range(1, 31):
            writer.add_message("user", f"m{i}")
            acknowledged[0] = i
    finally:
        done.set()
        for thread in readers:
            thread.join()
    assert failures == []
    assert _stats(b).stats().event_hits > 0
