"""The retrieved block's layout: dated lines, and what adding one to the block costs.

The block shows the chosen older events oldest first, under a heading for each day.
A line names its author unless the line before it, under the same heading, was
written by the same author: a transcript's convention (a line without a name goes on
from the speaker before), and in chat logs, where one person often sends several
messages in a row, about half the names of a block (3-4 tokens each).

What a line costs therefore depends on its neighbours: the first line of a day pays
for the day's heading, a line by the author of the line before pays no name, and a
line put between two lines by one author makes the second name its author again.
:class:`BlockLayout` keeps the lines chosen so far and prices each new one exactly,
so the block is filled to its room rather than to an average per line.
"""

from __future__ import annotations

import bisect
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True, eq=False)  # compared by identity, like candidates
class BlockLine:
    """One event as a block line: ``who: text``, or ``text`` after a line by ``who``.

    ``who`` is None for lines that say what they are themselves (tool calls, tool
    results, errors): they always show whole, and the line after them names its author.
    """

    key: float  # position in the block: the event's seq (events of one atom in order)
    day: str  # the heading it goes under
    who: str | None
    text: str
    label_tokens: int  # what "who: " costs
    text_tokens: int
    event_id: str = ""
    tokens_before: int | None = None  # what the line had before it was shortened (if it was)

    def render(self, *, named: bool) -> str:
        """The line as shown, with its author's name or without."""
        return f"{self.who}: {self.text}" if named and self.who is not None else self.text


def named(line: BlockLine, before: BlockLine | None) -> bool:
    """Whether ``line`` shows its author's name when it follows ``before``."""
    if line.who is None:
        return False
    return before is None or before.day != line.day or before.who != line.who


def _name_cost(line: BlockLine, before: BlockLine | None) -> int:
    return line.label_tokens if named(line, before) else 0


class BlockLayout:
    """The lines of a block being filled, ordered, with their total cost in tokens.

    ``heading_cost`` is what a day's heading line costs (its newline not included).
    """

    def __init__(self, heading_cost: Callable[[str], int]) -> None:
        self._heading_cost = heading_cost
        self._keys: list[float] = []
        self._lines: list[BlockLine] = []
        self._days: dict[str, int] = {}
        self.tokens = 0

    def price(self, lines: Sequence[BlockLine]) -> int:
        """What adding ``lines`` would cost now (the block is left as it was)."""
        if len(lines) == 1:  # most events are one line: priced without changing anything
            return self._insert(lines[0], apply=False)
        cost = sum(self._insert(line, apply=True) for line in lines)
        for line in reversed(lines):
            self._remove(line)
        return cost

    def add(self, lines: Iterable[BlockLine]) -> int:
        """Add ``lines``; returns what they cost."""
        cost = sum(self._insert(line, apply=True) for line in lines)
        self.tokens += cost
        return cost

    def _insert(self, line: BlockLine, *, apply: bool) -> int:
        at = bisect.bisect_right(self._keys, line.key)
        before = self._lines[at - 1] if at > 0 else None
        after = self._lines[at] if at < len(self._lines) else None
        cost = line.text_tokens + 1 + _name_cost(line, before)  # + 1: the newline
        if not self._days.get(line.day):
            cost += self._heading_cost(line.day) + 1
        if after is not None:
            cost += _name_cost(after, line) - _name_cost(after, before)
        if apply:
            self._keys.insert(at, line.key)
            self._lines.insert(at, line)
            self._days[line.day] = self._days.get(line.day, 0) + 1
        return cost

    def _remove(self, line: BlockLine) -> None:
        at = bisect.bisect_left(self._keys, line.key)
        while self._lines[at] is not line:
            at += 1
        del self._keys[at]
        del self._lines[at]
        self._days[line.day] -= 1


def render_block(lines: Iterable[BlockLine]) -> list[str]:
    """The block's text lines: a ``## day`` heading before each day's lines, oldest
    first, names left out where the line before is by the same author."""
    out: list[str] = []
    before: BlockLine | None = None
    for line in sorted(lines, key=lambda item: item.key):
        if before is None or line.day != before.day:
            out.append(f"## {line.day}")
        out.append(line.render(named=named(line, before)))
        before = line
    return out
