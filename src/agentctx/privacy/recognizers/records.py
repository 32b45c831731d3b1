"""Reading a record in a tool's text output, and telling a person's full name from
other names.

A bare ``"name"`` member names a person only in a record that holds a person's details
beside it (:mod:`agentctx.privacy.recognizers.fields` decides which details): this module
finds a record's own members around one of them (:func:`record_keys`), and tells whether
a value reads as a person's full name rather than a company's, a product's or a tool's
(:func:`full_name`). Both are shape tests, written from how names and company registers
work, not fitted to one data set: see ``docs/security.md`` for what they were measured on.
"""

from __future__ import annotations

import re

from agentctx.privacy.recognizers.names import chinese_full_name

# Words of an organisation's name: what it is ("Northwind Support Team") and its legal
# form, as company registers abbreviate them, their dots dropped ("S.A." is "sa", "sp. z
# o.o." holds "sp").
_ORGANISATION_WORDS = frozenset(
    {
        "agency", "airline", "airlines", "association", "bank", "clinic", "company",
        "corporation", "department", "dept", "foundation", "group", "hospital", "hotel",
        "incorporated", "institute", "limited", "office", "school", "service", "services",
        "support", "team", "university",
        # legal forms
        "ab", "ad", "ag", "aps", "asa", "ay", "bt", "bv", "bvba", "co", "corp", "cv",
        "dd", "doo", "eireli", "eood", "eurl", "ev", "gbr", "gesbr", "gmbh", "hb", "inc",
        "kb", "keg", "kft", "kg", "kgaa", "kkt", "ky", "lda", "llc", "llp", "lp", "ltd",
        "ltda", "mbh", "nv", "nyrt", "ohg", "ood", "ooo", "osk", "oy", "oyj", "plc",
        "pte", "pty", "pvt", "sa", "saa", "sac", "sarl", "sas", "sasu", "sau", "scarl",
        "scom", "scoop", "sia", "sl", "slne", "slu", "snc", "sp", "spa", "sprl", "srl",
        "sro", "tmi", "uab", "ug", "vof", "zrt",
    }
)  # fmt: skip
# Words that may stand lowercase between the parts of a name ("Simon van Dillen",
# "Luis de la Fuente"), forms of address before it and generational or degree suffixes
# after it (an abbreviation with a dot, "Dr." or "B.Sc.", is dropped wherever it is).
_NAME_PARTICLES = frozenset(
    {
        "al", "bin", "da", "das", "de", "degli", "dei", "del", "della", "den", "der",
        "di", "do", "dos", "du", "e", "ibn", "la", "le", "ten", "ter", "van", "von", "y",
        "zu",
    }
)  # fmt: skip
_HONORIFICS = frozenset(
    {
        "dame", "don", "doña", "dr", "frau", "herr", "heer", "madame", "miss", "mme",
        "mlle", "monsieur", "mr", "mrs", "ms", "mx", "pan", "pani", "prof", "signor",
        "signora", "sir", "sr", "sra", "srta",
    }
)  # fmt: skip
_NAME_SUFFIXES = frozenset({"jr", "sr", "ii", "iii", "iv", "md", "phd", "dds", "dvm", "esq"})
# After a comma, a list of names: a firm's ("Regalado, Cotto y Alejandro").
_CONJUNCTIONS = frozenset({"y", "e", "and", "und", "et", "&", "i", "a"})
_NAME_WORD = re.compile(r"[^\W\d_]+(?:['\u2019\-][^\W\d_]+)*\.?")
_ABBREVIATION = re.compile(r"[^\W\d_]{2,}\.|[^\W\d_]+\.[\w.\-]*\.?")
_FULL_NAME_WORDS = (2, 5)
_FULL_NAME_CHARS = 64
_LEGAL_FORM_CAPITALS = 3

# A record's members in text: its brackets (to tell its own members from a nested
# object's) and its keys. A bracket inside a string value is counted all the same: a
# record with one may lose its siblings, and its name is then kept (the safe side for
# what an agent reads, the unsafe one for privacy; such values are rare in records).
_BRACKETS = re.compile(r"[{}\[\]]")
_KEY = re.compile(r"(?<=[\"'])((?:[^\"'\\:\n]|\\u[0-9A-Fa-f]{4}){1,64})\\*[\"'][ \t]*:")
_RECORD_REACH = 4096
"""How far from a bare name its record's members are looked for, each way."""


def full_name(value: str) -> bool:
    """Whether ``value`` (a record's whole value) reads as a person's full name.

    A Chinese one ("张伟"), or two to five capitalised words (particles such as "van"
    or "de" may be lowercase, an initial has its dot), once forms of address ("Mrs",
    "Dr."), suffixes ("Jr.", "PhD") and other abbreviations ("B.Sc.") are set aside; no
    word of it an organisation's, and its last word not a legal form of at most three
    capitals ("AB", "PFA": a surname that short written in capitals, "Jean ROY", is
    taken for one too).
    """
    if value.count(",") == 1:  # "Lopez, Maria": a surname first; "Cotto, Ruiz y Mena": a firm
        if any(word in _CONJUNCTIONS for word in value.split(",")[1].split()):
            return False
        value = value.replace(",", " ")
    words = value.split()
    if len(value) > _FULL_NAME_CHARS or not words:
        return False
    if len(words) == 1:  # most values that are no one's name: a word, an id, a path
        return chinese_full_name(value)
    if any(_bare(word) in _ORGANISATION_WORDS for word in words):
        return False
    last = words[-1]
    if len(last) <= _LEGAL_FORM_CAPITALS and last.isupper() and _bare(last) not in _NAME_SUFFIXES:
        return False
    while words and _bare(words[0]) in _HONORIFICS:
        words.pop(0)
    while words and _bare(words[-1]) in _NAME_SUFFIXES:
        words.pop()
    name = [w for w in words if w not in _NAME_PARTICLES and not _ABBREVIATION.fullmatch(w)]
    fewest, most = _FULL_NAME_WORDS
    return fewest <= len(name) <= most and all(
        word[0].isupper() and _NAME_WORD.fullmatch(word) for word in name
    )


def _bare(word: str) -> str:
    """``word`` case-folded without its dots and commas ("S.A." is "sa", "Jr.," "jr")."""
    return word.replace(".", "").replace(",", "").casefold()


def record_keys(text: str, position: int) -> list[str]:
    """The keys of the members of the object in ``text`` that holds ``position`` (its
    own members, not a nested object's), within :data:`_RECORD_REACH` of it."""
    low, high = max(0, position - _RECORD_REACH), min(len(text), position + _RECORD_REACH)
    start = _opening(text, low, position)
    spans: list[tuple[int, int]] = []
    depth, since, end = 0, start, high
    for m in _BRACKETS.finditer(text, start, high):
        if m.group() in "{[":
            if depth == 0:
                spans.append((since, m.start()))
            depth += 1
        elif depth:
            depth -= 1
            if depth == 0:
                since = m.end()
        else:
            end = m.start()  # the record's own closing bracket
            break
    if depth == 0:
        spans.append((since, end))
    return [key.group(1) for a, b in spans for key in _KEY.finditer(text, a, b)]


def _opening(text: str, low: int, position: int) -> int:
    """Where the object holding ``position`` starts (just after its opening bracket), or
    ``low`` when it opens before that. Read backwards one bracket at a time: the nearest
    is usually the record's own, where collecting every bracket before it costs as much
    as the records that precede it in a long list."""
    depth, at = 0, position
    while True:
        at = max(text.rfind(bracket, low, at) for bracket in "{}[]")
        if at < 0:
            return low
        if text[at] in "}]":
            depth += 1
        elif depth:
            depth -= 1
        else:
            return at + 1


# ---------------------------------------------------------------- tables

TABLE_DELIMITERS = ",\t|;"
"""What separates a table's cells: CSV, TSV, Markdown, and CSV where a comma is a decimal."""
# One cell and the delimiter after it: a quoted cell (CSV doubles a quote inside one) or
# anything up to the next delimiter. The value is group 1 or 2, without its quotes.


def _cell_pattern(delimiter: str) -> re.Pattern[str]:
    """One cell and the delimiter after it, for ``delimiter``; the spaces around a
    value are any but the delimiter itself (a tab-separated line may hold empty cells)."""
    d = re.escape(delimiter)
    space = "[ ]" if delimiter == "\t" else r"[ \t]"
    return re.compile(
        rf'{space}*(?:"((?:[^"\n]|"")*)"|([^{d}\n]*?)){space}*(?:(?P<delimiter>{d})|$)',
        re.MULTILINE,
    )


_CELLS = {d: _cell_pattern(d) for d in TABLE_DELIMITERS}
# What may stand between a column's name and its delimiter: spaces, quotes, emphasis.
_AROUND_KEY = " \t\"'*`"
_EMPHASIS = "*`_ "
# A column's name: a few words of letters, digits and the punctuation of identifiers.
_COLUMN_NAME = re.compile(r"[^\W_](?:[\w.\-/#()]|[ ](?=\S)){0,39}")
_HEADER_CELLS = 2
_COLUMN_WORDS = 4
# A Markdown table's rule under its header: |---|:---:|
_RULE = re.compile(r"[ \t]*\|?(?:[ \t]*:?-+:?[ \t]*\|)+[ \t]*(?::?-+:?[ \t]*)?$")

Cell = tuple[str, int, int]
"""A cell's value and its span in the text."""


def cells(text: str, start: int, end: int, delimiter: str) -> list[Cell]:
    """The cells of the line ``text[start:end]``, split at ``delimiter`` (a CSV cell may
    be quoted, with the delimiter inside). A Markdown row's outer pipes open and close
    no cell."""
    if end > start and text[end - 1] == "\r":  # a CRLF line (csv.writer's own default)
        end -= 1
    if delimiter == "|":
        line = text[start:end]
        first = start + len(line) - len(line.lstrip())  # the line's first and last
        last = end - (len(line) - len(line.rstrip())) - 1  # characters but spaces
        if first <= last and text[first] == "|":
            start = first + 1
        if start <= last and text[last] == "|":
            end = last
    found: list[Cell] = []
    pattern, at = _CELLS[delimiter], start
    while True:
        m = pattern.match(text, at, end)
        if m is None:
            break
        group = 1 if m.group(1) is not None else 2
        value, (a, b) = m.group(group), m.span(group)
        found.append((value, a, b))
        if m.group("delimiter") is None:  # the line's last cell
            break
        at = m.end()
    return found


def line_at(text: str, position: int) -> tuple[int, int]:
    """The span of the line of ``text`` that holds ``position``, without its newline."""
    start = text.rfind("\n", 0, position) + 1
    end = text.find("\n", position)
    return start, len(text) if end < 0 else end


def cell_delimiter(text: str, start: int, end: int) -> str | None:
    """The delimiter around the cell ``text[start:end]`` (the key of a table's column):
    the one right after it or, for a line's last cell, right before it."""
    line_start, line_end = line_at(text, start)
    after = end  # a tab is a delimiter before it is a space
    while after < line_end and text[after] not in TABLE_DELIMITERS and text[after] in _AROUND_KEY:
        after += 1
    if after < line_end:
        return text[after] if text[after] in TABLE_DELIMITERS else None
    before = start - 1
    while (
        before >= line_start
        and text[before] not in TABLE_DELIMITERS
        and text[before] in _AROUND_KEY
    ):
        before -= 1
    if before >= line_start and text[before] in TABLE_DELIMITERS:
        return text[before]
    return None


def table_header(
    text: str, start: int, end: int, delimiter: str, *, in_string: bool = False
) -> list[Cell] | None:
    """The column names of the header line ``text[start:end]``, their Markdown emphasis
    (``**Name**``) set aside; None when it is no header: fewer than two cells, or a cell
    that reads as prose rather than a column's name (a sentence with commas is no CSV
    header: "First name, last name, and date of birth for Ivan.").

    ``in_string``: the table starts inside a string on that line (a CSV in a JSON
    string or a repr, read with its escaped line breaks): the header is the line's last
    cells that read as column names, the first of them from after its opening quote.
    """
    found = cells(text, start, end, delimiter)
    header: list[Cell] = []
    for cell, cell_start, _ in reversed(found):
        opening = max(cell.rfind('"'), cell.rfind("'")) + 1 if in_string else 0
        value = cell[opening:]
        key = value.strip(_EMPHASIS)
        if not _COLUMN_NAME.fullmatch(key) or key.count(" ") >= _COLUMN_WORDS:
            if in_string:
                break
            return None
        key_start = cell_start + opening + value.find(key)
        header.append((key, key_start, key_start + len(key)))
        if opening:
            break  # the string's opening quote: its first cell
    header.reverse()
    return header if len(header) >= _HEADER_CELLS else None


def table_rows(text: str, header_end: int, delimiter: str, width: int) -> list[list[Cell]]:
    """The rows under a header that ends at ``header_end``: each following line of
    ``width`` cells (a Markdown rule first is skipped), up to the first that is not."""
    rows: list[list[Cell]] = []
    at = header_end + 1
    first = True
    while at < len(text):
        start, end = at, text.find("\n", at)
        end = len(text) if end < 0 else end
        at = end + 1
        if first and delimiter == "|" and _RULE.match(text, start, end):
            first = False
            continue
        first = False
        row = cells(text, start, end, delimiter)
        if len(row) != width:
            break
        rows.append(row)
    return rows
