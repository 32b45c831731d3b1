"""Counting a build's texts once: :class:`RememberingCounter`.

A build counts the same texts over and over, and a session's consecutive builds count
mostly the same lines again; the counts are the wrapped counter's own, so a window is
the same with or without remembering them.
"""

from __future__ import annotations

from collections.abc import Sequence

from agentctx.cache.bounded import remember
from agentctx.tokens import TokenCounter
from agentctx.tokens.base import DEFAULT_MARKER

KNOWN_TEXTS = 65_536
"""Short texts whose counts a builder keeps between builds, per counter."""
KNOWN_TEXT_CHARS = 1_000
"""Texts longer than this are counted again in every build that needs them."""


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

    __slots__ = ("_counter", "_counts", "_known", "name")

    def __init__(self, counter: TokenCounter, known: dict[str, int] | None = None) -> None:
        self._counter = counter
        self._counts: dict[str, int] = {}
        # Only str keys and int values: the collector never tracks such a dict, so a
        # full one costs garbage collection nothing.
        self._known = known if known is not None else {}
        self.name = counter.name

    def count(self, text: str) -> int:
        """The wrapped counter's count of ``text``, counted once per build (once per
        process for a short text)."""
        tokens = self._counts.get(text)
        if tokens is None:
            tokens = self._known.get(text)
            if tokens is None:
                tokens = self._counter.count(text)
                self._remember(text, tokens)
            self._counts[text] = tokens
        return tokens

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """Each text's count; the ones not seen yet are counted together (batched)."""
        counts, known = self._counts, self._known
        for text in texts:
            if text not in counts and text in known:
                counts[text] = known[text]
        missing = list(dict.fromkeys(text for text in texts if text not in counts))
        if missing:
            for text, tokens in zip(missing, self._counter.count_many(missing), strict=True):
                counts[text] = tokens
                self._remember(text, tokens)
        return [counts[text] for text in texts]

    def _remember(self, text: str, tokens: int) -> None:
        if len(text) > KNOWN_TEXT_CHARS:
            return  # long texts (tool output, documents) are seldom counted again
        remember(self._known, text, tokens, KNOWN_TEXTS)

    def truncate(self, text: str, max_tokens: int, marker: str = DEFAULT_MARKER) -> str:
        """The wrapped counter's truncation (not remembered: rarely repeated)."""
        return self._counter.truncate(text, max_tokens, marker)
