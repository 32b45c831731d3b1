"""Counting a build's texts once: :class:`RememberingCounter`.

A build counts the same texts over and over, and a session's consecutive builds count
mostly the same lines again; the counts are the wrapped counter's own, so a window is
the same with or without remembering them.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentctx.cache.bounded import WeightedLru, remember
from agentctx.tokens import TokenCounter
from agentctx.tokens.base import DEFAULT_MARKER

KNOWN_TEXTS = 65_536
"""Short texts whose counts a builder keeps between builds, per counter."""
KNOWN_TEXT_CHARS = 1_000
"""Texts longer than this are remembered apart, bounded by their characters."""
KNOWN_LONG_CHARS = 16 * 1024 * 1024
"""Characters of long texts (a tool result as a window shows it, a document) whose counts
a builder keeps between builds, per counter. An agent loop's window shows the same recent
tool output call after call: counting it again was a fifth of a build."""


LongCounts = WeightedLru[str, tuple[int, int]]
"""Counts of long texts kept between builds: text -> (tokens, characters)."""


def long_counts() -> LongCounts:
    """An empty store of long texts' counts, bounded by :data:`KNOWN_LONG_CHARS`."""
    return WeightedLru(KNOWN_LONG_CHARS, weigh=lambda held: held[1])


class RememberingCounter:
    """A token counter that remembers every text it counted during one build, and the
    counts of short texts across builds.

    A build counts the same texts over and over: each message's role and author, the
    lines it prices while choosing, then the final messages, the trimming loop and the
    report. Consecutive builds of a session count mostly the same lines again (its
    recent turns, the hits of related queries): short texts' counts go to ``known``,
    a store the builder keeps per counter and shares between builds. The counts are
    the wrapped counter's own, so windows are the same with or without either.
    """

    __slots__ = ("_counter", "_counts", "_known", "_known_long", "name")

    def __init__(
        self,
        counter: TokenCounter,
        known: dict[str, int] | None = None,
        known_long: LongCounts | None = None,
    ) -> None:
        self._counter = counter
        self._counts: dict[str, int] = {}
        # Only str keys and int values: the collector never tracks such a dict, so a
        # full one costs garbage collection nothing.
        self._known = known if known is not None else {}
        self._known_long = known_long
        self.name = counter.name

    def count(self, text: str) -> int:
        """The wrapped counter's count of ``text``, counted once per build (once per
        process for a short text)."""
        tokens = self._counts.get(text)
        if tokens is None:
            tokens = self._recalled(text)
            if tokens is None:
                tokens = self._counter.count(text)
                self._remember(text, tokens)
            self._counts[text] = tokens
        return tokens

    def _recalled(self, text: str) -> int | None:
        """The count kept between builds, if any."""
        if len(text) <= KNOWN_TEXT_CHARS:
            return self._known.get(text)
        if self._known_long is None:
            return None
        found = self._known_long.get(text)
        return found[0] if found is not None else None

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Each text's count; the ones not seen yet are counted together (batched)."""
        counts = self._counts
        for text in texts:
            if text not in counts:
                tokens = self._recalled(text)
                if tokens is not None:
                    counts[text] = tokens
        missing = list(dict.fromkeys(text for text in texts if text not in counts))
        if missing:
            for text, tokens in zip(missing, self._counter.count_many(missing), strict=True):
                counts[text] = tokens
                self._remember(text, tokens)
        return [counts[text] for text in texts]

    def _remember(self, text: str, tokens: int) -> None:
        if len(text) <= KNOWN_TEXT_CHARS:
            remember(self._known, text, tokens, KNOWN_TEXTS)
        elif self._known_long is not None:
            self._known_long.put(text, (tokens, len(text)))

    def truncate(self, text: str, max_tokens: int, marker: str = DEFAULT_MARKER) -> str:
        """The wrapped counter's truncation (not remembered: rarely repeated)."""
        return self._counter.truncate(text, max_tokens, marker)
