"""A fast token estimate that needs no tokenizer.

What a BPE tokenizer does to a text is mostly decided by where the character
classes change: a word, a number group, a run of punctuation, a run of
whitespace each become one "pre-token", and a pre-token is usually one token.
The estimator therefore maps every character to a class byte in one
``bytes.translate`` pass and counts, with C-speed ``bytes.count`` calls:

* how many neighbouring characters share a class (the rest are boundaries),
* the boundaries the tokenizers absorb (a space or one punctuation mark glued
  to the following word, punctuation glued to a newline, a capitalised word, a
  contraction) or add (a lower-to-upper case change, three-digit groups),
* for non-ASCII text, how many characters of each script class there are.

The boundaries are counted on the XOR of the class string with itself shifted
by one character (one big-integer operation): a zero byte is a pair of equal
classes, and the class codes are chosen so that each counted boundary has a XOR
value no other pair of classes produces.

Runs of CJK ideographs are priced with the vocabulary facts of ``_cjk``: a
single-token ideograph costs 1, a pair that merges into one token costs 1 for
both, any other ideograph its byte-level cost. That is what makes Chinese come
out within a few per cent instead of the 20-50 % of a chars-per-token ratio.

The weights were fitted per encoding (``o200k_base``, ``cl100k_base``) by least
squares on the relative error against the real tokenizers, over English chat,
generated chat and tool output (JSON, logs, code, URLs), Chinese prose and UI
strings, Japanese, Korean and mixed-script text. The calibration is English for
Latin script: other languages written in it (German, Polish, ...) use longer,
rarer words and come out 10-30 % low. ``tests/test_tokens_estimate.py``
measures the error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from operator import mul

from agentctx.errors import ConfigError
from agentctx.priority import yield_to_foreground
from agentctx.tokens import _cjk
from agentctx.tokens.base import DEFAULT_MARKER, Keep, truncate_text

# Class codes. ASCII classes are distinct single bits above 0x80, ideographs are
# 0xFF, and the other classes took the smallest values for which every boundary
# counted below has a XOR that no other pair of classes produces (a test checks).
_LOWER, _SPACE, _PUNCT, _NEWLINE, _DIGIT, _UPPER = 0x81, 0x82, 0x84, 0x88, 0x90, 0xA0
_IDEO = 0xFF
# The ASCII apostrophe has a class of its own: contractions ("don't") glue to the word.
_APOS, _SYMBOL, _KANA, _FULL, _LATIN, _EMOJI, _HANGUL = 0xC0, 0xC1, 0xCA, 0xCB, 0xD2, 0xD3, 0xD8


def _class_table() -> bytes:
    """Byte -> class code, for ASCII bytes and for UTF-8 lead bytes."""
    table = bytearray([_PUNCT] * 256)
    for byte in range(ord("a"), ord("z") + 1):
        table[byte] = _LOWER
    for byte in range(ord("A"), ord("Z") + 1):
        table[byte] = _UPPER
    for byte in range(ord("0"), ord("9") + 1):
        table[byte] = _DIGIT
    for char in " \t\v\f":
        table[ord(char)] = _SPACE
    for char in "\r\n":
        table[ord(char)] = _NEWLINE
    table[ord("'")] = _APOS
    # Lead bytes of multi-byte UTF-8 sequences, by the Unicode block they open.
    for byte in range(0xC0, 0xE2):  # U+0080-U+1FFF: Latin-1, Greek, Cyrillic, ..., Indic
        table[byte] = _LATIN
    table[0xE2] = _SYMBOL  # U+2000-U+2FFF: punctuation, arrows, maths, box drawing
    table[0xE3] = _KANA  # U+3000-U+3FFF: CJK punctuation, kana
    for byte in range(0xE4, 0xEA):  # U+4000-U+9FFF: CJK ideographs
        table[byte] = _IDEO
    for byte in range(0xEA, 0xEE):  # U+A000-U+DFFF: mostly Hangul syllables
        table[byte] = _HANGUL
    table[0xEE] = _SYMBOL  # private use
    table[0xEF] = _FULL  # U+F000-U+FFFF: full-width forms, CJK compatibility
    for byte in range(0xF0, 0x100):  # four-byte sequences: emoji, rare ideographs
        table[byte] = _EMOJI
    return bytes(table)


_TABLE = _class_table()
# UTF-8 continuation bytes are deleted, so there is one class byte per character.
_CONTINUATION = bytes(range(0x80, 0xC0))
_IDEO_RUN = re.compile("[\u3400-\u9fff]+")

_LOWER_UPPER = bytes([_LOWER, _UPPER])
_DIGITS3 = bytes([_DIGIT]) * 3
_PUNCT8 = bytes([_PUNCT]) * 8
_SYMBOL2 = bytes([_SYMBOL]) * 2
_EMOJI2 = bytes([_EMOJI]) * 2
_LATIN2 = bytes([_LATIN]) * 2
_HANGUL2 = bytes([_HANGUL]) * 2
_KANA2 = bytes([_KANA]) * 2

# XOR values of the boundaries counted (pairs of classes, in either order).
_LOWER_SPACE = _LOWER ^ _SPACE
_LOWER_PUNCT = _LOWER ^ _PUNCT
_PUNCT_NEWLINE = _PUNCT ^ _NEWLINE
_SPACE_PUNCT = _SPACE ^ _PUNCT
_UPPER_LOWER = _UPPER ^ _LOWER
_UPPER_SPACE = _UPPER ^ _SPACE
_LOWER_APOS = _LOWER ^ _APOS
_SPACE_IDEO = _SPACE ^ _IDEO
_PUNCT_IDEO = _PUNCT ^ _IDEO
_FULL_IDEO = _FULL ^ _IDEO
_KANA_IDEO = _KANA ^ _IDEO
_LOWER_IDEO = _LOWER ^ _IDEO
_DIGIT_IDEO = _DIGIT ^ _IDEO
_NEWLINE_IDEO = _NEWLINE ^ _IDEO
_UPPER_IDEO = _UPPER ^ _IDEO
_SYMBOL_LOWER = _SYMBOL ^ _LOWER

# Pairs of class names whose boundary is counted, for the test of the class codes.
COUNTED_BOUNDARIES = (
    ("LOWER", "SPACE"),
    ("LOWER", "PUNCT"),
    ("PUNCT", "NEWLINE"),
    ("SPACE", "PUNCT"),
    ("UPPER", "LOWER"),
    ("UPPER", "SPACE"),
    ("LOWER", "APOS"),
    ("SPACE", "IDEO"),
    ("PUNCT", "IDEO"),
    ("FULL", "IDEO"),
    ("KANA", "IDEO"),
    ("LOWER", "IDEO"),
    ("DIGIT", "IDEO"),
    ("NEWLINE", "IDEO"),
    ("UPPER", "IDEO"),
    ("SYMBOL", "LOWER"),
)
CLASS_CODES = {
    "LOWER": _LOWER,
    "SPACE": _SPACE,
    "PUNCT": _PUNCT,
    "NEWLINE": _NEWLINE,
    "DIGIT": _DIGIT,
    "UPPER": _UPPER,
    "IDEO": _IDEO,
    "APOS": _APOS,
    "SYMBOL": _SYMBOL,
    "KANA": _KANA,
    "FULL": _FULL,
    "LATIN": _LATIN,
    "EMOJI": _EMOJI,
    "HANGUL": _HANGUL,
}

# Feature names, in the order of ``EstimateCounter.features`` and of the weights.
ASCII_FEATURES = (
    "chars",  # characters
    "same",  # neighbours of the same class
    "lower_space",  # boundaries between the classes named
    "lower_punct",
    "punct_newline",
    "space_punct",
    "upper_lower",
    "upper_space",
    "lower_apostrophe",
    "lower_then_upper",  # camelCase humps
    "digit_triples",  # non-overlapping
    "punct_octets",  # non-overlapping runs of 8 punctuation marks (rules, separators)
)
OTHER_FEATURES = (
    "ideo_cost",  # vocabulary price of the ideograph runs
    "ideo",  # characters per class
    "kana",
    "full",
    "latin",
    "symbol",
    "emoji",
    "hangul",
    "space_ideo",  # boundaries between an ideograph and the class named
    "punct_ideo",
    "full_ideo",
    "kana_ideo",
    "lower_ideo",
    "digit_ideo",
    "newline_ideo",
    "upper_ideo",
    "symbol_lower",
    "symbol_pairs",  # non-overlapping same-class pairs
    "emoji_pairs",
    "latin_pairs",
    "hangul_pairs",
    "kana_pairs",
)

# Fitted weights per encoding, in the order of ASCII_FEATURES, OTHER_FEATURES, then
# the constant term.
_WEIGHTS: dict[str, tuple[tuple[float, ...], tuple[float, ...], float]] = {
    "o200k_base": (
        (
            0.9649,
            -0.9275,
            -0.5148,
            -0.2599,
            -0.5006,
            -0.3265,
            -0.8496,
            -0.6025,
            -1.003,
            1.4703,
            0.8383,
            -0.1344,
        ),
        (
            0.9281,
            -0.0346,
            -0.1798,
            -0.2668,
            -1.0935,
            -0.1814,
            0.0931,
            -0.2151,
            -0.7132,
            -0.3648,
            -0.3202,
            -0.284,
            -0.5305,
            -0.5507,
            0.2617,
            -0.2876,
            -0.3704,
            0.6957,
            1.6701,
            2.5575,
            0.6627,
            1.2738,
        ),
        0.1036,
    ),
    "cl100k_base": (
        (
            0.9944,
            -0.9579,
            -0.5402,
            -0.2952,
            -0.5371,
            -0.3984,
            -0.821,
            -0.6148,
            -0.5367,
            1.4305,
            0.7822,
            -0.152,
        ),
        (
            1.0145,
            -0.0857,
            -0.2254,
            -0.4455,
            -0.3356,
            -0.6057,
            0.7128,
            0.0927,
            -0.6831,
            -0.4949,
            -0.0929,
            -0.3284,
            -0.6036,
            -0.5534,
            0.2035,
            -0.4322,
            -0.1519,
            1.7987,
            2.375,
            1.5153,
            0.8955,
            1.896,
        ),
        0.0287,
    ),
}
ESTIMATE_ENCODINGS = tuple(_WEIGHTS)

# Longer texts are estimated from evenly spaced windows, so the cost is bounded.
SAMPLE_ABOVE = 16_384
_WINDOWS = 8
_WINDOW = 2_048


@dataclass(frozen=True, slots=True)
class _IdeographPrices:
    costs: dict[str, float]  # ideographs with a known price
    rare: float  # price of the others
    pairs: frozenset[str]  # two-ideograph tokens


def _prices(encoding: str) -> _IdeographPrices:
    if encoding == "o200k_base":
        costs = dict.fromkeys(_cjk.O200K_SINGLE, 1.0)
        return _IdeographPrices(costs, 2.0, frozenset(_cjk.O200K_PAIRS.split()))
    costs = dict.fromkeys(_cjk.O200K_SINGLE, 2.0)
    costs.update(dict.fromkeys(_cjk.CL100K_TRIPLE, 3.0))
    costs.update(dict.fromkeys(_cjk.CL100K_SINGLE, 1.0))
    # Ideographs outside the common set take two or three tokens, about a third three.
    return _IdeographPrices(costs, 2.35, frozenset(_cjk.CL100K_PAIRS.split()))


class EstimateCounter:
    """Estimates tokens without a tokenizer, calibrated to one OpenAI encoding.

    ``encoding`` picks the calibration: ``"o200k_base"`` (GPT-4o, GPT-4.1, o-series;
    the default) or ``"cl100k_base"`` (GPT-4, GPT-3.5). English comes out about the
    same for both; CJK text costs about half as much again under cl100k_base.
    """

    def __init__(self, encoding: str = "o200k_base") -> None:
        if encoding not in _WEIGHTS:
            accepted = ", ".join(repr(name) for name in _WEIGHTS)
            raise ConfigError(f"no estimate calibration for {encoding!r}; accepted: {accepted}")
        self.encoding = encoding
        self.name = "estimate" if encoding == "o200k_base" else f"estimate:{encoding}"
        ascii_weights, other_weights, constant = _WEIGHTS[encoding]
        self._ascii = ascii_weights
        self._other = other_weights
        self._constant = constant
        self._prices = _prices(encoding)

    def __repr__(self) -> str:
        return f"EstimateCounter({self.encoding!r})"

    def count(self, text: str) -> int:
        """The estimated tokens of ``text`` (0 only for the empty string)."""
        if not text:
            return 0
        yield_to_foreground()  # background summaries count text all the time
        if len(text) > SAMPLE_ABOVE:
            return self._count_sampled(text)
        return max(1, round(self._score(text)))

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """The estimated tokens of each text."""
        return [self.count(text) for text in texts]

    def truncate(
        self,
        text: str,
        max_tokens: int,
        marker: str = DEFAULT_MARKER,
        *,
        keep: Keep = "middle",
    ) -> str:
        """``text`` cut to at most ``max_tokens`` estimated tokens, marker included."""
        return truncate_text(self, text, max_tokens, marker=marker, keep=keep)

    def features(self, text: str) -> tuple[float, ...]:
        """The feature values of ``text``: ``ASCII_FEATURES`` then ``OTHER_FEATURES``.

        For ASCII text only the ASCII features are returned (the others are zero).
        ``count`` is ``round(constant + weights . features)`` (for texts up to
        ``SAMPLE_ABOVE`` characters); this spelled-out form is for calibration.
        """
        is_ascii = text.isascii()
        classes, diff = _classes(text, is_ascii)
        count = diff.count
        ascii_part = (
            float(len(classes)),
            count(0),
            count(_LOWER_SPACE),
            count(_LOWER_PUNCT),
            count(_PUNCT_NEWLINE),
            count(_SPACE_PUNCT),
            count(_UPPER_LOWER),
            count(_UPPER_SPACE),
            count(_LOWER_APOS),
            classes.count(_LOWER_UPPER),
            classes.count(_DIGITS3),
            classes.count(_PUNCT8),
        )
        if is_ascii:
            return ascii_part
        return (*ascii_part, *self._other_features(text, classes, diff))

    def _score(self, text: str) -> float:
        # The ASCII part is spelled out (not a loop over ``features``): this runs on
        # every append, and the loop would cost more than the counting.
        is_ascii = text.isascii()
        classes, diff = _classes(text, is_ascii)
        count = diff.count
        w = self._ascii
        total = (
            self._constant
            + w[0] * len(classes)
            + w[1] * count(0)
            + w[2] * count(_LOWER_SPACE)
            + w[3] * count(_LOWER_PUNCT)
            + w[4] * count(_PUNCT_NEWLINE)
            + w[5] * count(_SPACE_PUNCT)
            + w[6] * count(_UPPER_LOWER)
            + w[7] * count(_UPPER_SPACE)
            + w[8] * count(_LOWER_APOS)
            + w[9] * classes.count(_LOWER_UPPER)
            + w[10] * classes.count(_DIGITS3)
            + w[11] * classes.count(_PUNCT8)
        )
        if not is_ascii:
            total += sum(map(mul, self._other, self._other_features(text, classes, diff)))
        return total

    def _count_sampled(self, text: str) -> int:
        """Estimate of a long text: windows spread over it, scaled to its length."""
        step = (len(text) - _WINDOW) / (_WINDOWS - 1)
        sampled = 0.0
        for index in range(_WINDOWS):
            start = round(index * step)
            sampled += self._score(text[start : start + _WINDOW]) - self._constant
        return max(1, round(self._constant + sampled * len(text) / (_WINDOWS * _WINDOW)))

    def _other_features(self, text: str, classes: bytes, diff: bytes) -> tuple[float, ...]:
        count = diff.count
        ideographs = classes.count(_IDEO)
        return (
            self._ideograph_cost(text) if ideographs else 0.0,
            ideographs,
            classes.count(_KANA),
            classes.count(_FULL),
            classes.count(_LATIN),
            classes.count(_SYMBOL),
            classes.count(_EMOJI),
            classes.count(_HANGUL),
            count(_SPACE_IDEO),
            count(_PUNCT_IDEO),
            count(_FULL_IDEO),
            count(_KANA_IDEO),
            count(_LOWER_IDEO),
            count(_DIGIT_IDEO),
            count(_NEWLINE_IDEO),
            count(_UPPER_IDEO),
            count(_SYMBOL_LOWER),
            classes.count(_SYMBOL2),
            classes.count(_EMOJI2),
            classes.count(_LATIN2),
            classes.count(_HANGUL2),
            classes.count(_KANA2),
        )

    def _ideograph_cost(self, text: str) -> float:
        """Tokens of the ideograph runs: known pairs merged greedily left to right."""
        prices = self._prices
        cost = prices.costs.get
        rare = prices.rare
        pairs = prices.pairs
        total = 0.0
        for run in _IDEO_RUN.findall(text):
            index, size = 0, len(run)
            while index < size:
                if index + 1 < size and run[index : index + 2] in pairs:
                    total += 1.0
                    index += 2
                else:
                    total += cost(run[index], rare)
                    index += 1
        return total


def _classes(text: str, is_ascii: bool) -> tuple[bytes, bytes]:
    """The class string of ``text`` and the XOR of each class with the next one.

    Byte i of the second string (from the right) is ``class[i] ^ class[i + 1]``;
    its first byte is ``class[0]`` itself, which is never 0 nor a counted XOR.
    """
    if is_ascii:
        classes = text.encode("ascii").translate(_TABLE)
    else:
        classes = text.encode("utf-8", "surrogatepass").translate(_TABLE, _CONTINUATION)
    as_int = int.from_bytes(classes, "big")
    return classes, (as_int ^ (as_int >> 8)).to_bytes(len(classes), "big")


_DEFAULT = EstimateCounter()


def estimate_text_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ``EstimateCounter().count(text)`` (o200k_base)."""
    return _DEFAULT.count(text)
