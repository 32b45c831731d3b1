"""The in-process hot cache, the default: the same answers as the database, across
another engine's writes, deletion and same-id recreation, within its bounds (real
SQLite and PostgreSQL)."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.cache import LocalCache, SessionScope
from agentctx.events import Event, trusted_event, utcnow


@pytest.fixture
def engines(db_url: str, tmp_path: Path) -> Iterator[tuple[ContextEngine, ContextEngine]]:
    """One engine with the default (local) cache and one without, on one database."""
    cached = ContextEngine(url=db_url, home=tmp_path / "a", embeddings={"provider": "hashing"})
    plain = ContextEngine(
        url=db_url,
        home=tmp_path / "b",
        embeddings={"provider": "hashing"},
        cache={"local_events": 0},
    )
    yield cached, plain
    cached.close()
    plain.close()


def _local(engine: ContextEngine) -> LocalCache:
    assert isinstance(engine.cache, LocalCache)
    return engine.cache


def test_the_default_engine_reads_through_the_local_cache(
    engines: tuple[ContextEngine, ContextEngine],
) -> None:
    cached, _ = engines
    session = cached.create_session("u1", "helper")
    for i in range(6):
        session.add_message("user", f"m{i}")
    first = session.events(last=6)
    before = _local(cached).stats()
    assert session.events(last=6) == first
    after = _local(cached).stats()
    assert after.event_hits - before.event_hits == 6
    assert after.event_misses == before.event_misses


def test_cached_reads_equal_database_reads_for_every_shape(
    engines: tuple[ContextEngine, ContextEngine],
) -> None:
    cached, plain = engines
    session = cached.create_session("u1", "helper")
    for i in range(10):
        with session.turn() as turn:
            turn.add_message("user", f"question {i}")
            call = turn.add_tool_call("lookup", {"q": i})
            turn.add_tool_result(call.call_id, content=f"result {i}")
            turn.add_message("assistant", f"answer {i}")
    shapes: list[dict[str, object]] = [{}]
    for start, end, count in itertools.product((None, 7, 33), (None, 5, 40, 99), (0, 3)):
        shapes += [
            {"start_seq": start, "end_seq": end, "last": count},
            {"start_seq": start, "end_seq": end, "limit": count or None},
            {"start_seq": start, "end_seq": end, "seqs": [3, 9, 9, 31, 39, 40], "last": 2},
        ]
    for _ in range(2):  # the first pass fills, the second reads the cache
        for shape in shapes:
            expected = plain._service.events("u1", session.id, **shape)  # type: ignore[arg-type]
            got = cached._service.events("u1", session.id, **shape)  # type: ignore[arg-type]
            assert got == expected, shape


def test_another_engines_writes_and_deletion_are_seen_at_once(
    engines: tuple[ContextEngine, ContextEngine],
) -> None:
    cached, plain = engines
    session = cached.create_session("u1", "helper", session_id="s1")
    session.add_message("user", "my old secret is tangerine")
    reader = cached.get_session("s1", user_id="u1")
    writer = plain.get_session("s1", user_id="u1")
    assert "tangerine" in reader.events()[0].text  # cached now
    for i in range(5):
        writer.add_message("user", f"step {i}: the code is {i * 7}")
        assert reader.events(last=1)[0].text == f"step {i}: the code is {i * 7}"
        window = reader.build_context(query="code", budget=2000)
        assert window.messages == writer.build_context(query="code", budget=2000).messages
    # Deleted by the other engine (nothing drops this cache), then recreated.
    plain.delete_user_data("u1")
    plain.create_session("u1", "helper", session_id="s1").add_message("user", "a fresh start")
    again = cached.get_session("s1", user_id="u1")
    assert [e.text for e in again.events()] == ["a fresh start"]
    assert "tangerine" not in str(again.build_context(query="secret", budget=2000).messages)


def test_deleting_through_the_engine_frees_what_it_cached(
    engines: tuple[ContextEngine, ContextEngine],
) -> None:
    cached, _ = engines
    for user in ("u1", "u2"):
        session = cached.create_session(user, "helper", session_id=f"{user}-s")
        for i in range(4):
            session.add_message("user", f"{user} says {i}")
        session.events()
    assert len(_local(cached)) == 8
    cached.delete_session("u1-s", user_id="u1")
    assert len(_local(cached)) == 4
    cached.delete_user_data("u2")
    assert len(_local(cached)) == 0


def _event(seq: int, tokens: int, session_id: str) -> Event:
    return trusted_event(
        f"e-{session_id}-{seq}", seq, utcnow(), "user_input", "user", None, "u", session_id,
        None, None, None, None, [{"kind": "text", "text": f"event {seq}"}], {}, {}, False, [],
        tokens, f"h-{session_id}-{seq}",
    )  # fmt: skip


def test_bounds_hold_and_the_least_recently_used_session_goes_first() -> None:
    cache = LocalCache(100, events=10, tokens=1000)
    one, two, three = (SessionScope("u", s, "i") for s in ("a", "b", "c"))
    cache.put_events(one, [_event(i, 10, "a") for i in range(1, 5)])
    cache.put_events(two, [_event(i, 10, "b") for i in range(1, 5)])
    assert cache.get_events(one, [1])  # one is now the most recently used
    cache.put_events(three, [_event(i, 10, "c") for i in range(1, 5)])
    assert len(cache) == 8  # two was dropped whole
    assert cache.get_events(two, [1, 2, 3, 4]) == {}
    assert set(cache.get_events(one, [1, 2, 3, 4])) == {1, 2, 3, 4}
    # The token bound: one large session keeps its newest events.
    cache.put_events(three, [_event(i, 300, "c") for i in range(5, 9)])
    assert sum(e.token_estimate for e in cache.get_events(three, range(1, 9)).values()) <= 1000
    assert set(cache.get_events(three, range(1, 9))) >= {7, 8}
    # An event larger than the whole cache is never kept.
    cache.put_events(one, [_event(9, 5000, "a")])
    assert cache.get_events(one, [9]) == {}


def test_concurrent_readers_and_a_writer_agree_with_the_database(
    engines: tuple[ContextEngine, ContextEngine],
) -> None:
    cached, plain = engines
    session = cached.create_session("u1", "helper", session_id="busy")
    writer = plain.get_session("busy", user_id="u1")
    errors: list[BaseException] = []
    done = threading.Event()

    def write() -> None:
        try:
            for i in range(40):
                writer.add_message("user", f"line {i}")
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)
        finally:
            done.set()

    def read() -> None:
        try:
            reader = cached.get_session("busy", user_id="u1")
            while not done.is_set():
                events = reader.events()
                # Every read is a prefix of the log with no gap, in order.
                assert [e.seq for e in events] == list(range(1, len(events) + 1))
                assert [e.text for e in events] == [f"line {i}" for i in range(len(events))]
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write)] + [threading.Thread(target=read) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert not errors
    assert session.events() == plain.get_session("busy", user_id="u1").events()


def test_shared_reads_hand_out_built_events_and_plain_reads_their_own() -> None:
    """A reader that never changes events (the window builder) gets the same built
    objects again; every other read gets objects of its own, so a caller editing an
    event's payload changes nothing the cache holds. Drops forget built events too."""
    cache = LocalCache(100, events=100, tokens=10_000)
    scope = SessionScope("u", "s", "i1")
    cache.put_events(scope, [_event(seq, 5, "s") for seq in (1, 2, 3)])
    shared = cache.get_events(scope, [1, 2, 3], shared=True)
    again = cache.get_events(scope, [1, 2, 3], shared=True)
    assert all(again[seq] is shared[seq] for seq in (1, 2, 3))
    own = cache.get_events(scope, [1, 2], shared=False)
    assert own[1] == shared[1] and own[1] is not shared[1]
    own[1].payload["edited"] = True
    assert "edited" not in cache.get_events(scope, [1], shared=True)[1].payload
    assert "edited" not in cache.get_events(scope, [1])[1].payload
    cache.drop_user("u")
    assert cache.get_events(scope, [1, 2, 3], shared=True) == {}
