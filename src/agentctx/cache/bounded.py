"""A bound for the plain dicts that remember computed values across builds.

Some memos are read thousands of times per window build (a text's token count, whether
an event holds an important keyword). An LRU would move an entry on every read; a dict
that is simply cleared when full throws away, at once, what the very next build needs
again, and that build pays for all of it. :func:`remember` takes the middle way: when
the dict is full, its older half goes (a dict keeps insertion order), and reads stay a
plain ``dict.get``.
"""

from __future__ import annotations

from itertools import islice
from typing import TypeVar

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
