"""Sentence splitting for English and Chinese chat, tool output and code.

A text is first cut into *units* by lines:

* a fenced code block (```` ``` ```` … ```` ``` ````) is one unit of kind ``code``;
* a line that looks like code or JSON (many brackets, quotes, ``=``, ``;``) is one
  unit of kind ``code``: punctuation inside it does not end a sentence;
* a bullet or numbered line (``- x``, ``* x``, ``• x``, ``1. x``, ``2) x``, ``# x``)
  starts a unit, its marker left out of the sentence;
* a blank line ends a unit, and so does a line break, unless the line runs on
  (a hard-wrapped paragraph: the line does not end in terminal punctuation and the
  next starts with a lowercase letter).

Prose units are then split at sentence ends:

* ``。！？`` (and ``…``/``……``) end a Chinese sentence with no space after them;
* ``!`` and ``?`` end a sentence before a space, a line end or a CJK character;
* ``.`` ends one only before a space, a line end or a CJK character, so decimals
  (``3.14``), versions, file names and URLs (``example.com/a.b``) stay whole; and
  not after an abbreviation (``e.g.``, ``Dr.``, ``vs.``), an initial (``J. Smith``)
  or a dotted initialism followed by a lowercase word (``U.S. law``);
* closing quotes and brackets after the mark stay with the sentence.

Every :class:`Sentence` records the source it came from (the caller's message or
event index) and its character span in that source's text.
"""

# ruff: noqa: RUF001, RUF002 - Chinese and typographic punctuation on purpose

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from agentctx.priority import yield_to_foreground

SentenceKind = Literal["prose", "code"]


@dataclass(frozen=True, slots=True)
class SourceText:
    """One input text (a message, an event's text) and the index that identifies it.

    ``source`` is whatever the caller uses to find the text again: a list index, an
    event ``seq``. Plain strings given to the offline functions get their position.
    """

    text: str
    source: int


@dataclass(frozen=True, slots=True)
class Sentence:
    """A sentence (or a code unit) of one source text.

    ``text`` has its whitespace runs collapsed (prose) or is the unit as written
    (code); ``start``/``end`` are its span in the source's text (end exclusive);
    ``position`` counts the sentences of the same source from 0.
    """

    text: str
    source: int
    start: int
    end: int
    position: int
    kind: SentenceKind


# Abbreviations after which "." never ends a sentence (lowercase, inner dots kept).
_ABBREVIATION_LIST = """
    mr mrs ms dr prof sr jr st mt vs e.g i.e cf al approx ed eds rev gen col lt sgt capt
    cmdr gov sen dept univ
"""
_ABBREVIATIONS = frozenset(_ABBREVIATION_LIST.split())
# Abbreviations of a number's name: "." after them never ends a sentence before a
# digit ("No. 5", "pp. 12"), and does everywhere else ("Oh no. Thanks").
_NUMBER_ABBREVIATIONS = frozenset(["no", "nos", "vol", "vols", "pp", "fig", "figs", "ca", "v"])
# Abbreviations that also end sentences: "." after them ends one only before an
# uppercase letter, a digit or CJK.
_SOFT_ABBREVIATION_LIST = """
    etc inc ltd co corp llc plc bros a.m p.m am pm jan feb mar apr jun jul aug sep sept oct
    nov dec mon tue tues wed thu thur thurs fri sat sun est min max avg misc
"""
_SOFT_ABBREVIATIONS = frozenset(_SOFT_ABBREVIATION_LIST.split())

_FENCE = re.compile(r"^\s*(```|~~~)")
_BULLET = re.compile(r"^[ \t]*(?:[-*+•·‣◦▪▸►]|\d{1,3}[.)]|[A-Za-z][.)]|#{1,6})[ \t]+(?=\S)")
# Characters common in code and JSON, rare in prose.
_CODE_CHARS = frozenset('{}[]<>=;"`|\\$')
_CJK_CHAR = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]")
_CLOSERS = "\"'”’)]}」』）》〉】"
_END = re.compile(rf"(?:[。！？]+|…+|\.\.\.+|[!?]+|\.)[{re.escape(_CLOSERS)}]*")
_SENTENCE_ENDS = frozenset("。！？!?.…" + _CLOSERS)
_SPACES = re.compile(r"\s+")
_CONTENT = re.compile(r"[^\W_]")


def _looks_like_code(line: str) -> bool:
    stripped = line.strip()
    if len(stripped) < 8:
        return False
    if stripped[0] in "{[<" and stripped[-1] in "}]>,":
        return True
    symbols = sum(1 for char in stripped if char in _CODE_CHARS)
    return symbols / len(stripped) >= 0.15


def _units(text: str) -> list[tuple[int, int, SentenceKind]]:
    """(start, end, kind) spans of ``text`` that sentences never cross."""
    units: list[tuple[int, int, SentenceKind]] = []
    open_start: int | None = None  # start of the prose unit being built
    open_end = 0
    fence_start: int | None = None
    offset = 0
    previous = ""

    def close() -> None:
        nonlocal open_start
        if open_start is not None:
            units.append((open_start, open_end, "prose"))
            open_start = None

    for raw in text.splitlines(keepends=True):
        line = raw.rstrip("\r\n")
        start, end = offset, offset + len(line)
        offset += len(raw)
        if fence_start is not None:
            if _FENCE.match(line):
                units.append((fence_start, end, "code"))
                fence_start = None
            continue
        if _FENCE.match(line):
            close()
            fence_start = start
            continue
        if not line.strip():
            close()
            previous = ""
            continue
        if _looks_like_code(line):
            close()
            units.append((start, end, "code"))
            previous = ""
            continue
        bullet = _BULLET.match(line)
        runs_on = (
            open_start is not None
            and bullet is None
            and previous.rstrip()[-1:] not in _SENTENCE_ENDS
            and line.lstrip()[:1].islower()
        )
        if not runs_on:
            close()
            open_start = start + (bullet.end() if bullet else 0)
        open_end = end
        previous = line
    if fence_start is not None:  # an unclosed fence runs to the end
        units.append((fence_start, len(text), "code"))
    close()
    return units


def _word_before(text: str, index: int, floor: int) -> str:
    """The whitespace-delimited word ending at ``index`` (the dot excluded)."""
    start = index
    while start > floor and not text[start - 1].isspace():
        start -= 1
    return text[start:index].lstrip("\"'“‘([{").lower()


def _ends_here(text: str, match: re.Match[str], unit_start: int, unit_end: int) -> bool:
    """Whether the terminal mark ``match`` ends a sentence."""
    mark = match.group(0).rstrip(_CLOSERS)
    after = match.end()
    if after >= unit_end:
        return True
    following = text[after]
    if mark[0] in "。！？":
        return True
    if _CJK_CHAR.match(following):
        return True
    if not following.isspace():
        return False
    rest = text[after:unit_end].lstrip()
    nxt = rest[:1]
    if mark[0] in "!?":
        return True
    if mark[0] == "…" or mark.startswith(".."):
        return not nxt.islower()
    word = _word_before(text, match.start(), unit_start)
    if word in _ABBREVIATIONS:
        return False
    if word in _NUMBER_ABBREVIATIONS:
        return not nxt.isdigit()
    if word in _SOFT_ABBREVIATIONS:
        return nxt.isupper() or nxt.isdigit() or bool(_CJK_CHAR.match(nxt))
    if len(word) == 1 and word.isalpha() and text[match.start() - 1].isupper():
        return False  # an initial: "J. Smith"
    # A dotted initialism before a lowercase word ("U.S. law") ends nothing.
    return not ("." in word and nxt.islower())


def _prose_spans(text: str, start: int, end: int) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    begin = start
    for match in _END.finditer(text, start, end):
        if _ends_here(text, match, start, end):
            spans.append((begin, match.end()))
            begin = match.end()
    if begin < end:
        spans.append((begin, end))
    return spans


def _trim(text: str, start: int, end: int) -> tuple[int, int]:
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def split_sentences(text: str, source: int = 0) -> list[Sentence]:
    """The sentences and code units of ``text``, in order, tagged with ``source``.

    Pieces with no letter or digit (rules, lone punctuation, emoji) are left out.
    Never raises: any string gives a (possibly empty) list.
    """
    yield_to_foreground()  # summaries split every message, in the background
    sentences: list[Sentence] = []
    for unit_start, unit_end, kind in _units(text):
        spans = (
            [(unit_start, unit_end)] if kind == "code" else _prose_spans(text, unit_start, unit_end)
        )
        for raw_start, raw_end in spans:
            start, end = _trim(text, raw_start, raw_end)
            piece = text[start:end]
            if not _CONTENT.search(piece):
                continue
            if kind == "prose":
                piece = _SPACES.sub(" ", piece)
            sentences.append(Sentence(piece, source, start, end, len(sentences), kind))
    return sentences


def as_sources(texts: Sequence[SourceText | str]) -> list[SourceText]:
    """``texts`` as :class:`SourceText`; a plain string gets its position as source."""
    return [
        item if isinstance(item, SourceText) else SourceText(str(item), index)
        for index, item in enumerate(texts)
    ]


def sentences_of(texts: Sequence[SourceText | str]) -> list[Sentence]:
    """The sentences of every text, in input order, each tagged with its source."""
    return [
        sentence
        for item in as_sources(texts)
        for sentence in split_sentences(item.text, item.source)
    ]
