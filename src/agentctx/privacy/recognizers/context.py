"""Context words: the words near a candidate that make it more or less likely to be an entity.

A bare ``2021001234`` is just a number; ``学号:2021001234`` is a student ID. Recognizers
look a short window (``WINDOW`` characters) around a candidate for such words and
raise or lower its score. Searches use ``pattern.search(text, pos, endpos)`` so no
substring is copied.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Iterable, Iterator

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


_WORD_CHARS = frozenset("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")


def is_word_char(ch: str) -> bool:
    """ASCII letters and digits: what a token may not be glued to."""
    return ch in _WORD_CHARS


# ``glued`` runs on every candidate of every recognizer: set lookups, no helper calls.
def glued(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` continues an ASCII word or number on either side."""
    return (start > 0 and text[start - 1] in _WORD_CHARS) or (
        end < len(text) and text[end] in _WORD_CHARS
    )


def glued_before(text: str, start: int) -> bool:
    """Whether the character before ``start`` is an ASCII letter or digit."""
    return start > 0 and text[start - 1] in _WORD_CHARS


def keyword_pattern(words: Iterable[str], space: str = r"[\s_\-]*") -> str:
    """A fast regex (source) matching any of ``words``, case-insensitively.

    The pattern starts with a plain character class of the words' first characters, so
    the regex engine can skip ahead with its fast prefix scan. Words are grouped by
    their first character: one look-back at that character (and, for ASCII words, one
    word-edge check) selects the group, then only that group's rests are tried,
    case-insensitively and longest first. A space inside a word matches ``space``.
    """
    firsts: set[str] = set()
    groups: dict[str, list[str]] = {}
    for word in sorted(set(words), key=len, reverse=True):
        first, rest = word[0], re.escape(word[1:]).replace(r"\ ", space)
        firsts.update({first.lower(), first.upper()})
        groups.setdefault(first.lower(), []).append(rest)
    alternatives: list[str] = []
    # Two groups never match at the same place (their first characters differ), so
    # their order does not change what is found.
    for first, rests in groups.items():
        edge = r"(?<![A-Za-z].)" if first.isascii() and first.isalpha() else ""
        alternatives.append(rf"(?<={re.escape(first)}){edge}(?:{'|'.join(rests)})")
    charset = "".join(re.escape(c) for c in sorted(firsts))
    return rf"[{charset}](?i:{'|'.join(alternatives)})"


class KeywordGate:
    """A cheap test of whether any of ``words`` can occur in a text, and where.

    Run over the whole text before a keyword regex: most texts contain none of the
    words, and plain substring tests on the case-folded text are far faster than the
    regex. It may say yes when the regex finds nothing, never the reverse: each word is
    reduced to its part before the first space (a space matches separators), compared
    case-insensitively.
    """

    __slots__ = ("_ascii", "_offsets", "fragments")

    def __init__(self, words: Iterable[str]) -> None:
        heads = {w.split(" ")[0].casefold() for w in words if w.strip()}
        # A fragment that contains another one adds nothing: drop it.
        self.fragments: tuple[str, ...] = tuple(
            sorted(h for h in heads if not any(g != h and g in h for g in heads))
        )
        # An ASCII text can only hold the ASCII fragments.
        self._ascii = tuple(f for f in self.fragments if f.isascii())
        # Where each fragment sits inside the words that contain it: a fragment found
        # at ``i`` means a word may start at ``i - offset``.
        self._offsets: tuple[tuple[str, tuple[int, ...]], ...] = tuple(
            (f, tuple(sorted({o for h in heads for o in _occurrences(h, f)})))
            for f in self.fragments
        )

    def present(self, folded: str) -> bool:
        """Whether one of the words may occur in ``folded`` (a text from :func:`casefolded`)."""
        # ``map`` over a bound method stays in C: cheaper than a generator expression.
        # Two letters match "i" case-insensitively yet fold to something else: the dotless
        # i (U+0131) and the dotted capital I (U+0130, folds to "i" + U+0307). Either one
        # means "maybe": the caller falls back to a full scan. Neither is ASCII.
        if folded.isascii():  # constant time: Python knows it of every string
            return any(map(folded.__contains__, self._ascii))
        return (
            any(map(folded.__contains__, self.fragments))
            or "\u0131" in folded
            or "\u0307" in folded
        )

    def finditer(self, pattern: re.Pattern[str], text: str) -> Iterator[re.Match[str]]:
        """``pattern.finditer(text)`` for a pattern that starts with one of the words.

        Tries ``pattern`` only where a fragment occurs (found with ``str.find``), in
        order and without overlaps, so it yields what ``finditer`` would.
        """
        return self.finditer_at(pattern, text, self.starts(text))

    def starts(self, text: str) -> list[int] | None:
        """Where in ``text`` one of the words may start, in order (none: ``[]``); None
        when folding moved characters, and a pattern must then look everywhere. Two
        patterns that start with the same words can share one list (``finditer_at``)."""
        folded = casefolded(text)
        if not self.present(folded):
            return []
        # Positions carry over only if folding kept every character one character; the
        # dotless i (U+0131) matches "i" case-insensitively but folds to itself.
        if len(folded) != len(text) or "\u0131" in folded:
            return None
        starts: set[int] = set()
        for fragment, offsets in self._offsets:
            i = folded.find(fragment)
            while i >= 0:
                starts.update(i - o for o in offsets if i >= o)
                i = folded.find(fragment, i + 1)
        return sorted(starts)

    @staticmethod
    def finditer_at(
        pattern: re.Pattern[str], text: str, starts: list[int] | None
    ) -> Iterator[re.Match[str]]:
        """:meth:`finditer` at the positions :meth:`starts` gave for ``text``."""
        if starts is None:
            yield from pattern.finditer(text)
            return
        end = 0
        for start in starts:
            if start < end:
                continue
            m = pattern.match(text, start)
            if m is not None and m.end() > start:
                end = m.end()
                yield m


def _occurrences(word: str, fragment: str) -> list[int]:
    found = []
    i = word.find(fragment)
    while i >= 0:
        found.append(i)
        i = word.find(fragment, i + 1)
    return found


_folded = threading.local()


def casefolded(text: str) -> str:
    """``text.casefold()``, computed once per text and thread.

    Several recognizers gate on keywords in the same text one after the other; the
    last text seen by this thread and its folded form are kept to avoid folding it
    again.
    """
    if getattr(_folded, "text", None) is text:
        folded: str = _folded.folded
        return folded
    folded = text.casefold()
    _folded.text, _folded.folded = text, folded
    return folded


# What ends a clause: a context word before it says nothing about a number after it
# (in "电话 13812345678, 共 7067846483 条" the second number is no phone number).
# Matched from the window's start, it ends right after the window's last clause break
# (greedy, then one step back at a time: linear in the window, where searching for the
# clause's stretch itself is quadratic).
_CLAUSE_BREAK = re.compile(r"(?s:.*)[\n,;\uff0c\uff1b\u3002]")


def clause_start(text: str, pos: int, window: int = WINDOW) -> int:
    """Where the context window before ``pos`` begins: at most ``window`` characters back,
    and never before the last clause break (a comma or semicolon, ASCII or
    full-width, an ideographic full stop or a newline)."""
    lo = max(0, pos - window)
    match = _CLAUSE_BREAK.match(text, lo, pos)
    return match.end() if match is not None else lo
