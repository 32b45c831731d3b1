"""Context words: the words near a candidate that make it more or less likely to be an entity.

A bare ``2021001234`` is just a number; ``学号:2021001234`` is a student ID. Recognizers
look a short window (``WINDOW`` characters) around a candidate for such words and
raise or lower its score. Searches use ``pattern.search(text, pos, endpos)`` so no
substring is copied.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

WINDOW = 20
"""How many characters before (or after) a candidate count as "nearby"."""

THRESHOLD = 0.5
"""Scores below this mean "probably not an entity"; analyzers should drop such findings."""


def _alternative(word: str) -> str:
    escaped = re.escape(word)
    # An ASCII word must start at a word edge ("card" in "cardholder", not in "discard");
    # Chinese has no spaces, so Chinese words match anywhere.
    if word[:1].isascii() and word[:1].isalnum():
        return rf"(?<![A-Za-z]){escaped}"
    return escaped


class ContextWords:
    """A compiled, case-insensitive set of words looked for near a span."""

    __slots__ = ("_pattern", "words")

    def __init__(self, words: Iterable[str]) -> None:
        self.words: tuple[str, ...] = tuple(words)
        ordered = sorted(self.words, key=len, reverse=True)
        self._pattern = re.compile("|".join(_alternative(w) for w in ordered), re.IGNORECASE)

    def before(self, text: str, start: int, window: int = WINDOW) -> bool:
        """Whether one of the words occurs in the ``window`` characters before ``start``."""
        return self._pattern.search(text, max(0, start - window), start) is not None

    def after(self, text: str, end: int, window: int = WINDOW) -> bool:
        """Whether one of the words occurs in the ``window`` characters after ``end``."""
        return self._pattern.search(text, end, end + window) is not None

    def near(self, text: str, start: int, end: int, window: int = WINDOW) -> bool:
        """Whether one of the words occurs just before or just after ``text[start:end]``."""
        return self.before(text, start, window) or self.after(text, end, window)


NEGATIVE = ContextWords(
    (
        "order",
        "invoice",
        "tracking",
        "version",
        "price",
        "total",
        "amount",
        "build",
        "release",
        "订单",
        "单号",
        "发票",
        "快递",
        "运单",
        "版本",
        "价格",
        "金额",
        "总计",
        "合计",
        "¥",
        "￥",
        "$",
        "€",
    )
)
"""Words that make a nearby number less likely to be personal data."""


def clamp(score: float) -> float:
    """``score`` limited to [0, 1] and rounded for stable comparisons."""
    return round(max(0.0, min(1.0, score)), 3)


def score_with_context(
    base: float,
    text: str,
    start: int,
    end: int,
    *,
    positive: ContextWords | None = None,
    boost: float = 0.3,
    penalty: float = 0.35,
    window: int = WINDOW,
) -> float:
    """``base`` raised when ``positive`` words are near, lowered when negative words are.

    Positive context wins over negative context: "card number for order 42: 4111..." is
    still a card.
    """
    if positive is not None and positive.near(text, start, end, window):
        return clamp(base + boost)
    if NEGATIVE.before(text, start, window):
        return clamp(base - penalty)
    return clamp(base)


def is_word_char(ch: str) -> bool:
    """ASCII letters and digits: what a token may not be glued to."""
    return ch.isascii() and ch.isalnum()


def glued(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` continues an ASCII word or number on either side."""
    return (start > 0 and is_word_char(text[start - 1])) or (
        end < len(text) and is_word_char(text[end])
    )


def glued_before(text: str, start: int) -> bool:
    """Whether the character before ``start`` is an ASCII letter or digit."""
    return start > 0 and is_word_char(text[start - 1])


def keyword_pattern(words: Iterable[str], space: str = r"[\s_\-]*") -> str:
    """A fast regex (source) matching any of ``words``, case-insensitively.

    The pattern starts with a plain character class of the words' first characters, so
    the regex engine can skip ahead with its fast prefix scan; the rest of each word is
    matched case-insensitively behind a look-back at the first character. ASCII words
    must start at a word edge. A space inside a word matches ``space``.
    """
    firsts: set[str] = set()
    alternatives: list[str] = []
    for word in sorted(set(words), key=len, reverse=True):
        first, rest = word[0], re.escape(word[1:]).replace(r"\ ", space)
        firsts.update({first.lower(), first.upper()})
        edge = r"(?<![A-Za-z].)" if first.isascii() and first.isalpha() else ""
        alternatives.append(rf"(?<={re.escape(first)}){edge}{rest}")
    charset = "".join(re.escape(c) for c in sorted(firsts))
    return rf"[{charset}](?i:{'|'.join(alternatives)})"
