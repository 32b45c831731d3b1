"""``agentctx.cache.bounded``: the dict memo bounded by dropping its older half, and the
LRU maps bounded by their count or by their entries' weight."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest

from agentctx.cache.bounded import Lru, WeightedLru, remember


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


def test_lru_get_many_finds_what_is_held_and_makes_it_the_newest() -> None:
    lru: Lru[str, int] = Lru(4)
    for key, value in (("a", 1), ("b", 2), ("c", 3), ("d", 4)):
        lru.put(key, value)
    assert lru.get_many(["c", "x", "a", "a"]) == {"c": 3, "a": 1}  # "x" is not held
    assert lru.keys() == ["b", "d", "c", "a"]  # found entries moved to the newest end
    lru.put("e", 5)
    assert lru.keys() == ["d", "c", "a", "e"]  # "b", not a found one, went first
    assert lru.get_many([]) == {} and Lru[str, int](0).get_many(["a"]) == {}


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


def test_lru_put_unless_keeps_a_better_value_already_held() -> None:
    lru: Lru[str, int] = Lru(4)
    lru.put("a", 5)
    lru.put("b", 1)
    lru.put("a", 3, unless=lambda held: held >= 3)  # another thread's further-reaching one
    assert lru.get("a") == 5
    lru.put("a", 9, unless=lambda held: held >= 9)
    assert lru.get("a") == 9
    lru.put("c", 2, unless=lambda held: True)  # nothing held: stored
    assert lru.keys() == ["b", "a", "c"]


def _weighted(max_weight: int) -> WeightedLru[str, str]:
    return WeightedLru(max_weight, weigh=len)


def test_weighted_lru_drops_the_least_recently_used_until_the_weight_fits() -> None:
    lru = _weighted(10)
    lru.put("a", "xxxx")
    lru.put("b", "xxx")
    lru.put("c", "xx")
    assert lru.weight == 9 and lru.max_weight == 10
    assert lru.get("a") == "xxxx"  # "b" is now the least recently used
    lru.put("d", "xxxxx")  # 14: "b" goes (11), then "c" (9)
    assert lru.keys() == ["a", "d"] and lru.weight == 9


def test_weighted_lru_keeps_the_newest_entry_even_when_it_alone_is_too_heavy() -> None:
    lru = _weighted(4)
    lru.put("a", "xx")
    lru.put("big", "xxxxxxxx")
    assert lru.keys() == ["big"] and lru.weight == 8
    lru.put("b", "x")  # now the heavy one is the oldest and goes
    assert lru.keys() == ["b"] and lru.weight == 1


def test_weighted_lru_weight_follows_replacements_discards_and_clears() -> None:
    lru = _weighted(100)
    for key, value in (("u1:a", "xxx"), ("u1:b", "xxxxx"), ("u2:a", "xx")):
        lru.put(key, value)
    lru.put("u1:a", "x")  # replaced: 3 off, 1 on
    assert lru.weight == 8
    lru.put("u1:b", "xxxxxxxxxx", unless=lambda held: len(held) >= 5)  # kept as it was
    assert lru.weight == 8 and lru.get("u1:b") == "xxxxx"
    assert lru.discard(lambda key: key.startswith("u1:")) == 2
    assert lru.weight == 2 and lru.keys() == ["u2:a"]
    lru.clear()
    assert lru.weight == 0 and len(lru) == 0


def test_weighted_lru_shared_by_threads_keeps_its_weight_exact() -> None:
    lru = _weighted(500)
    errors: list[BaseException] = []

    def use(worker: int) -> None:
        try:
            for i in range(5_000):
                lru.put(f"{worker}:{i % 300}", "x" * (1 + i % 17))
                if i % 500 == 0:
                    lru.discard(lambda key: key.startswith(f"{worker}:1"))
        except BaseException as exc:  # reported below, in the main thread
            errors.append(exc)

    _in_threads(use, 4)
    keys = lru.keys()
    held = [lru.get(key) for key in keys]
    assert errors == []
    assert lru.weight == sum(len(value or "") for value in held) <= 500
