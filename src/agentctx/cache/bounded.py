"""Bounded in-memory memos: :func:`remember` for hot plain dicts, :class:`Lru` for the
rest, and :class:`WeightedLru` for entries of very different sizes.

Some memos are read thousands of times per window build (a text's token count, whether
an event holds an important keyword). An LRU would move an entry on every read; a dict
that is simply cleared when full throws away, at once, what the very next build needs
again, and that build pays for all of it. :func:`remember` takes the middle way: when
the dict is full, its older half goes (a dict keeps insertion order), and reads stay a
plain ``dict.get``.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from itertools import islice
from typing import Generic, TypeVar

K = TypeVar("K")
V = TypeVar("V")


def remember(table: dict[K, V], key: K, value: V, limit: int) -> None:
    """Store ``key -> value`` in ``table``, which holds at most ``limit`` entries: when
    it is full, the older half of its entries (the first inserted) is dropped first.

    Safe to call from several threads on one dict: taking the keys to drop is one call
    into C (no other thread runs meanwhile under the GIL), dropping tolerates keys
    another thread dropped first, and a dict changed mid-iteration (a free-threaded
    build) is cleared instead.
    """
    if limit < 1:
        raise ValueError(f"limit must be >= 1, got {limit}")
    if len(table) >= limit and key not in table:
        try:
            oldest = list(islice(table, len(table) - limit // 2))
        except RuntimeError:  # changed by another thread while listed
            table.clear()
        else:
            for old in oldest:
                table.pop(old, None)
    table[key] = value


class Lru(Generic[K, V]):
    """A thread-safe map of at most ``size`` entries: using an entry (:meth:`get` finding
    it, :meth:`put`) makes it the newest, and the least recently used goes first when
    there are too many. ``size=0`` keeps nothing. Values are never None (None is "not
    held")."""

    def __init__(self, size: int) -> None:
        if size < 0:
            raise ValueError(f"size must be >= 0, got {size}")
        self.size = size
        self._entries: OrderedDict[K, V] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: K) -> V | None:
        """The value held for ``key`` (now the most recently used), or None."""
        with self._lock:
            value = self._entries.get(key)
            if value is not None:
                self._entries.move_to_end(key)
            return value

    def get_many(self, keys: Iterable[K]) -> dict[K, V]:
        """The values held for ``keys`` (each now among the most recently used), by key;
        keys not held are left out. One lock for all of them."""
        found: dict[K, V] = {}
        with self._lock:
            entries = self._entries
            for key in keys:
                value = entries.get(key)
                if value is not None:
                    entries.move_to_end(key)
                    found[key] = value
        return found

    def put(self, key: K, value: V, *, unless: Callable[[V], bool] | None = None) -> None:
        """Hold ``value`` for ``key`` as the most recently used entry; with ``unless``,
        keep instead the value already held if ``unless(held)`` (decided under the
        lock, so another thread's better value is never overwritten)."""
        with self._lock:
            held = self._entries.pop(key, None)
            if held is not None:
                if unless is not None and unless(held):
                    self._entries[key] = held
                    return
                self._removed(held)
            self._entries[key] = value
            self._added(value)
            while self._over():
                self._removed(self._entries.popitem(last=False)[1])

    def discard(self, drop: Callable[[K], bool]) -> int:
        """Forget the entries whose key ``drop`` accepts; returns how many."""
        with self._lock:
            gone = [key for key in self._entries if drop(key)]
            for key in gone:
                self._removed(self._entries.pop(key))
            return len(gone)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            for value in self._entries.values():
                self._removed(value)
            self._entries.clear()

    def keys(self) -> list[K]:
        """The keys held, least recently used first."""
        with self._lock:
            return list(self._entries)

    def values(self) -> list[V]:
        """The values held, least recently used first (their recency unchanged)."""
        with self._lock:
            return list(self._entries.values())

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)

    # What a subclass that bounds something other than the count hooks into (the lock held).

    def _over(self) -> bool:
        return len(self._entries) > self.size

    def _added(self, value: V) -> None:
        pass

    def _removed(self, value: V) -> None:
        pass


class WeightedLru(Lru[K, V]):
    """An :class:`Lru` bounded by the entries' total weight (``weigh(value)``: rows,
    bytes) instead of their count: least recently used entries go until the total is at
    most ``max_weight``. The newest entry stays even when it alone weighs more: its
    caller is about to use it, and would only load it again."""

    def __init__(self, max_weight: int, weigh: Callable[[V], int]) -> None:
        super().__init__(max_weight)
        self._weigh = weigh
        self._weight = 0

    @property
    def max_weight(self) -> int:
        """The bound on the total weight."""
        return self.size

    @property
    def weight(self) -> int:
        """The total weight held."""
        with self._lock:
            return self._weight

    def _over(self) -> bool:
        return self._weight > self.size and len(self._entries) > 1

    def _added(self, value: V) -> None:
        self._weight += self._weigh(value)

    def _removed(self, value: V) -> None:
        self._weight -= self._weigh(value)
