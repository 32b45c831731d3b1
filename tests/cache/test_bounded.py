"""``agentctx.cache.bounded.remember``: a dict memo bounded by dropping its older half."""

from __future__ import annotations

import threading

import pytest

from agentctx.cache.bounded import remember


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

    threads = [threading.Thread(target=fill, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert 0 < len(table) <= 500 + 4  # each thread may add its one entry past a drop
    assert all(value == w * i for (w, i), value in table.items())
