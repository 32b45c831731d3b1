"""``agentctx.cache.bounded.remember``: a dict memo bounded by dropping its older half."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from agentctx.cache.bounded import Lru, remember


def _in_threads(work: Callable[[int], None], count: int) -> None:
    """Run ``work(0)`` ... ``work(count - 1)`` at once, each on its own thread."""
    threads = [threading.Thread(target=work, args=(n,)) for n in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def test_a_full_table_drops_its_older_half_and_keeps_the_newest() -> None:
    table: dict[int, str] = {}
    for i in range(10):
        remember(table, i, str(i), 10)
    assert list(table) == list(range(10))  # full, nothing dropped yet
    remember(table, 10, "10", 10)
    assert list(table) == [5, 6, 7, 8, 9, 10]
    assert table[10] == "10"


def test_the_table_never_exceeds_its_limit() -> None:
    table: dict[int, int] = {}
    sizes = []
    for i in range(1_000):
        remember(table, i, i, 7)
        sizes.append(len(table))
    assert max(sizes) == 7
    assert min(sizes[7:]) >= 4  # never emptied once filled
    assert 999 in table and 0 not in table


def test_a_key_already_held_is_updated_without_dropping_anything() -> None:
    table = {i: i for i in range(4)}
    remember(table, 2, 20, 4)
    assert table == {0: 0, 1: 1, 2: 20, 3: 3}


def test_a_limit_of_one_keeps_the_last_entry() -> None:
    table: dict[str, int] = {}
    remember(table, "a", 1, 1)
    remember(table, "b", 2, 1)
    assert table == {"b": 2}


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="limit"):
        remember({}, "a", 1, 0)


def test_threads_sharing_one_table_keep_it_bounded_and_consistent() -> None:
    table: dict[tuple[int, int], int] = {}
    errors: list[BaseException] = []

    def fill(worker: int) -> None:
        try:
            for i in range(20_000):
                remember(table, (worker, i), worker * i, 500)
                value = table.get((worker, i))
                assert value is None or value == worker * i
        except BaseException as exc:  # reported below, in the main thread
            errors.append(exc)

    _in_threads(fill, 4)
    assert errors == []
    assert 0 < len(table) <= 500 + 4  # each thread may add its one entry past a drop
    assert all(value == w * i for (w, i), value in table.items())


def test_lru_drops_the_least_recently_used_entry_first() -> None:
    lru: Lru[str, int] = Lru(3)
    for key, value in (("a", 1), ("b", 2), ("c", 3)):
        lru.put(key, value)
    assert lru.get("a") == 1  # "a" is now the newest
    lru.put("d", 4)
    assert lru.keys() == ["c", "a", "d"]
    assert lru.get("b") is None and len(lru) == 3
    lru.put("c", 30)  # replacing an entry makes it the newest, drops nothing
    assert lru.keys() == ["a", "d", "c"] and lru.get("c") == 30


def test_lru_discards_by_key_and_clears() -> None:
    lru: Lru[tuple[str, str], int] = Lru(10)
    for user in ("u1", "u2"):
        for session in ("s1", "s2"):
            lru.put((user, session), 1)
    assert lru.discard(lambda key: key[0] == "u1") == 2
    assert lru.keys() == [("u2", "s1"), ("u2", "s2")]
    lru.clear()
    assert len(lru) == 0 and lru.get(("u2", "s1")) is None


def test_lru_of_size_zero_keeps_nothing_and_a_negative_size_is_refused() -> None:
    lru: Lru[str, int] = Lru(0)
    lru.put("a", 1)
    assert lru.get("a") is None and len(lru) == 0
    with pytest.raises(ValueError, match="size"):
        Lru(-1)


def test_lru_shared_by_threads_stays_within_its_size() -> None:
    lru: Lru[tuple[int, int], int] = Lru(64)
    errors: list[BaseException] = []

    def use(worker: int) -> None:
        try:
            for i in range(5_000):
                lru.put((worker, i % 100), i)
                found = lru.get((worker, (i * 7) % 100))
                assert found is None or 0 <= found < 5_000
        except BaseException as exc:  # reported below, in the main thread
            errors.append(exc)

    _in_threads(use, 4)
    assert errors == [] and len(lru) == 64
