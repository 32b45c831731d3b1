"""Bounded in-memory memos: :func:`remember` for hot plain dicts, :class:`Lru` for the rest.

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
from collections.abc import Callable
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

    def put(self, key: K, value: V) -> None:
        """Hold ``value`` for ``key`` as the most recently used entry."""
        with self._lock:
            self._entries[key] = value
            self._entries.move_to_end(key)
            while len(self._entries) > self.size:
                self._entries.popitem(last=False)

    def discard(self, drop: Callable[[K], bool]) -> int:
        """Forget the entries whose key ``drop`` accepts; returns how many."""
        with self._lock:
            gone = [key for key in self._entries if drop(key)]
            for key in gone:
                del self._entries[key]
            return len(gone)

    def clear(self) -> None:
        """Forget every entry."""
        with self._lock:
            self._entries.clear()

    def keys(self) -> list[K]:
        """The keys held, least recently used first."""
        with self._lock:
            return list(self._entries)

    def __len__(self) -> int:
        with self._lock:
            return len(self._entries)
