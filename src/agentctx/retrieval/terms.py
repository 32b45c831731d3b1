"""Index terms: the one analysis applied to documents and queries alike.

* Text is NFKC-normalized (full-width letters and digits become ASCII) and
  casefolded; accents are dropped from Latin, Greek and Cyrillic letters.
* Words are runs of letters and digits; numbers are kept (``2024``, ``gpt4``).
* English inflections are removed by a light stemmer: Porter's step 1 only
  (plurals, ``-ed``, ``-ing``, final ``y``), which conflates ``flights``/``flight``
  and ``booked``/``booking``/``book`` without the aggressive derivational
  rewrites of a full Porter or Snowball stemmer.
* English stopwords never become terms, in documents or queries: a stopword
  could never match anything.
* Chinese and Japanese have no spaces, so their runs become overlapping
  character bigrams (``北京大学`` → ``北京 京大 大学``), and a run of one character
  is kept as it is. This finds words of any length without a dictionary (jieba):
  a query's bigrams must all occur in the matching text.

Terms are at most :data:`MAX_TERM_CHARS` characters (longer tokens, such as
hashes, are cut), and a document keeps its first :data:`MAX_DOCUMENT_TERMS`.
"""

from __future__ import annotations

import functools
import re
import unicodedata

from agentctx.priority import yield_to_foreground

MAX_TERM_CHARS = 48
MAX_DOCUMENT_TERMS = 4000
MAX_QUERY_TERMS = 32

# Han (with extensions and compatibility ideographs), kana, bopomofo, CJK marks.
_CJK = (
    "\u3005\u3006\u3007\u3021-\u3029\u3038-\u303b"
    "\u3040-\u30ff\u31a0-\u31bf\u31f0-\u31ff"
    "\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uff66-\uff9f"
    "\U00020000-\U0003134f"
)
TOKEN_PATTERN = re.compile(rf"([{_CJK}]+)|([^\W_{_CJK}]+)")
"""A run of CJK characters (group 1) or of other letters and digits (group 2)."""

_HAS_CJK = re.compile(f"[{_CJK}]")
_WORD = re.compile(r"[^\W_]+")
"""A run of letters and digits: :data:`TOKEN_PATTERN`'s words in text without CJK
characters (one plain class scans about twice as fast as the alternation)."""
_BREAK = re.compile(rf"[^\w{_CJK}]|_")
"""A character no token holds: text is read in pieces cut at one."""

_STOPWORD_LIST = """
    a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for
    from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just me more most my myself no nor not now of off on once
    only or other our ours ourselves out over own same she should so some such than that
    the their theirs them themselves then there these they this those through to too
    under until up very was we were what when where which while who whom why will with
    would you your yours yourself yourselves
"""
STOPWORDS = frozenset(_STOPWORD_LIST.split())


def _strip_accents(word: str) -> str:
    """Drop combining marks that follow Latin, Greek or Cyrillic letters (café → cafe).

    Marks on other scripts (Japanese dakuten, Devanagari vowel signs) change the letter,
    so they stay.
    """
    decomposed = unicodedata.normalize("NFD", word)
    kept: list[str] = []
    base = 0
    for char in decomposed:
        if unicodedata.combining(char):
            if base < 0x0530:
                continue
        else:
            base = ord(char)
        kept.append(char)
    return unicodedata.normalize("NFC", "".join(kept))


_VOWELS = frozenset("aeiou")


def _consonant(word: str, i: int) -> bool:
    char = word[i]
    if char in _VOWELS:
        return False
    if char == "y":
        return i == 0 or not _consonant(word, i - 1)
    return True


def _measure(stem: str) -> int:
    """Porter's m: the number of vowel-consonant sequences in ``stem``."""
    m = 0
    previous_vowel = False
    for i in range(len(stem)):
        vowel = not _consonant(stem, i)
        if previous_vowel and not vowel:
            m += 1
        previous_vowel = vowel
    return m


def _has_vowel(stem: str) -> bool:
    return any(not _consonant(stem, i) for i in range(len(stem)))


def _ends_cvc(stem: str) -> bool:
    """consonant-vowel-consonant, the last not w, x or y (hop, not hoe or bow)."""
    n = len(stem)
    return (
        n >= 3
        and _consonant(stem, n - 1)
        and not _consonant(stem, n - 2)
        and _consonant(stem, n - 3)
        and stem[-1] not in "wxy"
    )


@functools.lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter's step 1 (1a, 1b, 1c) on a lowercase ASCII word; other words unchanged."""
    if len(word) <= 3 or not word.isascii() or not word.isalpha():
        return word
    # 1a: plurals
    if word.endswith("sses") or word.endswith("ies"):
        word = word[:-2]
    elif word.endswith("s") and not word.endswith("ss"):
        word = word[:-1]
    # 1b: -eed, -ed, -ing
    if word.endswith("eed"):
        if _measure(word[:-3]) > 0:
            word = word[:-1]
    else:
        for suffix in ("ed", "ing"):
            if word.endswith(suffix) and _has_vowel(word[: -len(suffix)]):
                word = word[: -len(suffix)]
                if word.endswith(("at", "bl", "iz")):
                    word += "e"
                elif len(word) >= 2 and word[-1] == word[-2] and word[-1] not in "lsz":
                    if _consonant(word, len(word) - 1):
                        word = word[:-1]
                elif _measure(word) == 1 and _ends_cvc(word):
                    word += "e"
                break
    # 1c: y -> i after a vowel-bearing stem
    if word.endswith("y") and _has_vowel(word[:-1]):
        word = word[:-1] + "i"
    return word


@functools.lru_cache(maxsize=65536)
def _word_term(token: str) -> str | None:
    """The term of a word (None for a stopword); remembered, since the words of tool
    output repeat (keys, paths, names)."""
    if not token.isascii():
        token = _strip_accents(token)
    if token in STOPWORDS:
        return None
    return stem(token)[:MAX_TERM_CHARS]


PIECE_CHARS = 8192
"""Characters read at a time (about 1 ms), cut where no token goes on: between two
pieces the agent's call may go first, and a long text is read only as far as its first
``limit`` terms."""


def _analyze(text: str, limit: int) -> list[str]:
    normalized = unicodedata.normalize("NFKC", text).casefold()
    terms: list[str] = []
    start = 0
    while start < len(normalized) and len(terms) < limit:
        yield_to_foreground()  # a tool output's words, indexed in the background
        end = _piece_end(normalized, start)
        if _HAS_CJK.search(normalized, start, end) is None:
            words = _WORD.findall(normalized, start, end)
            terms.extend(term for term in map(_word_term, words) if term)
        else:
            terms.extend(_mixed_terms(normalized, start, end))
        start = end
    return terms[:limit]


def _piece_end(text: str, start: int) -> int:
    """Where the piece of ``text`` from ``start`` ends: at the first character no token
    holds after :data:`PIECE_CHARS` of it (or at the end)."""
    if len(text) - start <= PIECE_CHARS:
        return len(text)
    cut = _BREAK.search(text, start + PIECE_CHARS)
    return len(text) if cut is None else cut.end()


def _mixed_terms(text: str, start: int, end: int) -> list[str]:
    """The terms of ``text[start:end]``, CJK runs among its words."""
    terms: list[str] = []
    for cjk, word in TOKEN_PATTERN.findall(text, start, end):
        if word:
            term = _word_term(word)
            if term:
                terms.append(term)
        elif len(cjk) == 1:
            terms.append(cjk)
        else:
            terms.extend(cjk[i : i + 2] for i in range(len(cjk) - 1))
    return terms


def document_terms(text: str) -> list[str]:
    """The terms of a document, in order, repeats kept (they count toward term frequency)."""
    return _analyze(text, MAX_DOCUMENT_TERMS)


def query_terms(text: str) -> list[str]:
    """The distinct terms of a query, in first-seen order."""
    return list(dict.fromkeys(_analyze(text, MAX_DOCUMENT_TERMS)))[:MAX_QUERY_TERMS]
