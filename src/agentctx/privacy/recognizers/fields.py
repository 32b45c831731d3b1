"""Personal data in the named fields of records, and birth dates wherever they are labelled.

Tool results are mostly records: ``{"first_name": "Sophia", "last_name": "Garcia",
"dob": "1971-08-13", "passport": "X1234567"}``. The other recognizers look for labels in
sentences ("Name: …", "passport no. …"); a record's field names are labels too, but in
JSON the key is quoted and so is its value. This recognizer finds JSON string members
(in text, as tools return them) whose key names a kind of personal data (a person's
name, a birth date, a passport or national ID, a phone number) and whose value looks
like one: a date for a birth date, letters for a name, digits for a phone. The redactor
applies the same table to the members of JSON values it walks (:meth:`FieldRecognizer.
entity_of`).

A bare ``"name"`` is not enough on its own: a product, a city or a tool has a name too.
It names a person in a record that also holds a person's contact or identity details
(an email, a phone number, a postal address, a birth date, a passport or social security
number) among its own members, when its value is a full name: two to five capitalised
words, none of them an organisation's (``Inc``, ``Ltd``, ``Airlines``, ``Support`` …):
``{"name": "Maria Lopez", "email": "…"}``. A company's contact record keeps its name,
and so does a record whose only personal detail sits in a nested object.

It also finds birth dates labelled in prose: "date of birth: 13/08/1971", "DOB
1971-08-13", "born on 13 August 1971", "出生日期 1971年8月13日". An unlabelled date
is left alone: a flight's date is no one's birthday.
"""

from __future__ import annotations

import functools
import json
import re
from collections.abc import Callable, Iterable
from typing import Any

from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.recognizers.context import KeywordGate, casefolded, keyword_pattern
from agentctx.privacy.recognizers.records import (
    TABLE_DELIMITERS,
    cell_delimiter,
    full_name,
    line_at,
    record_keys,
    table_header,
    table_rows,
)
from agentctx.privacy.shape import TextShape, shape_of

# Field names by the entity their value is. Matched case-insensitively with any of
# "_", "-" or nothing for a space ("first_name", "firstName", "First-Name").
_FIELDS: dict[str, tuple[str, ...]] = {
    EntityType.PERSON: (
        "first name",
        "last name",
        "full name",
        "given name",
        "family name",
        "middle name",
        "maiden name",
        "legal name",
        "surname",
        "forename",
        "passenger name",
        "customer name",
        "contact name",
        "patient name",
        "cardholder name",
        "card holder name",
        "姓名",
        "联系人",
        "收件人",
        "收货人",
        "乘客姓名",
        "客户姓名",
    ),
    EntityType.DATE_OF_BIRTH: (
        "dob",
        "date of birth",
        "birth date",
        "birthdate",
        "birthday",
        "出生日期",
        "出生年月日",
        "生日",
    ),
    EntityType.NATIONAL_ID: (
        "passport",
        "passport number",
        "passport no",
        "passport id",
        "national id",
        "national id number",
        "driver license",
        "drivers license",
        "driver license number",
        "drivers license number",
        "护照号",
        "护照号码",
        "证件号",
        "证件号码",
        "身份证号",
        "身份证号码",
    ),
    EntityType.PHONE: (
        "phone",
        "phone number",
        "mobile",
        "mobile number",
        "telephone",
        "telephone number",
        "cell phone",
        "contact number",
        "电话",
        "电话号码",
        "手机",
        "手机号",
        "手机号码",
        "联系电话",
    ),
}

_MONTH = (
    r"(?:jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?"
    r"|sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"
)
# A full date: ISO or numeric (day and month in either order), with the month's name,
# or in Chinese. A year alone ("born in 1990") is not a birth date.
_DATE = (
    r"(?:\d{4}[-/.]\d{1,2}[-/.]\d{1,2}"
    r"|\d{1,2}[-/.]\d{1,2}[-/.](?:\d{4}|\d{2})"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?[ \t]+(?:of[ \t]+)?{_MONTH}\.?,?[ \t]+\d{{4}}"
    rf"|{_MONTH}\.?[ \t]+\d{{1,2}}(?:st|nd|rd|th)?,?[ \t]+\d{{4}}"
    r"|\d{4}[ \t]*年[ \t]*\d{1,2}[ \t]*月[ \t]*\d{1,2}[ \t]*日?)"
)
_FULL_DATE = re.compile(rf"(?i:{_DATE})")

_BIRTH_LABELS = (
    "date of birth",
    "birth date",
    "birthdate",
    "birthday",
    "dob",
    "d.o.b",
    "born on",
    "born",
    "出生日期",
    "出生年月日",
    "生日",
)
# The label, then what may sit between it and the date: quotes and a colon (a JSON
# member or a form), "is", "was", "on".
_BIRTH_PATTERN = re.compile(
    rf"{keyword_pattern(_BIRTH_LABELS)}\.?[\"']?[ \t]*[:\uff1a=]?[ \t]*[\"']?"
    r"(?:(?i:is|was|on)[ \t]+)?"
    rf"(?<![0-9])((?i:{_DATE}))(?![0-9])"
)
_BIRTH_GATE = KeywordGate(_BIRTH_LABELS)
# Every birth label holds one of these words: a text holding none is skipped before
# the gate looks for where each label may start (fewer, shorter words to test).
_BIRTH_WORDS = KeywordGate(("birth", "dob", "d.o.b", "born", "生日", "出生"))

# Keys that name a person only in a record holding a personal detail beside them.
_BARE_NAME_KEYS = ("name", "display name", "名字", "名称")
# Members that make a record a person's: the fields above but names, and contact details.
_PERSONAL_KEYS = (
    *(
        name
        for entity in (EntityType.DATE_OF_BIRTH, EntityType.NATIONAL_ID, EntityType.PHONE)
        for name in _FIELDS[entity]
    ),
    "email",
    "e mail",
    "email address",
    "mail",
    "address",
    "home address",
    "street address",
    "postal address",
    "ssn",
    "social security number",
    "邮箱",
    "电子邮件",
    "电子邮箱",
    "地址",
    "住址",
    "家庭住址",
)
_ALL_FIELDS = tuple(name for names in _FIELDS.values() for name in names)
# A string member whose key is one of the field names: JSON (double quotes) or a Python
# dict's repr (single quotes, as a log line shows one), its quotes escaped any number of
# times (a record inside a JSON string, inside a repr). The value is what ``_valid``
# then checks; it ends at the first quote like the one it opened with.


def _as_written(words: Iterable[str]) -> tuple[str, ...]:
    """``words``, and each one that is not ASCII as ``json.dumps`` writes it by default
    (``"\\u59d3\\u540d"`` for ``"姓名"``): a tool's JSON text often keeps its keys so."""
    words = tuple(words)
    return (*words, *(json.dumps(w)[1:-1] for w in words if not w.isascii()))


_MEMBER_KEYS = _as_written((*_ALL_FIELDS, *_BARE_NAME_KEYS))
_MEMBER = re.compile(
    rf"(?<=[\"']){keyword_pattern(_MEMBER_KEYS)}"
    r"(?P<close>\\*[\"'])[ \t]*:[ \t]*\\*(?P<q>[\"'])"
    r"(?P<value>(?:\\[^\n]|(?!(?P=q))[^\\\n]){1,128}?)\\*(?P=q)"
)
_MEMBER_GATE = KeywordGate(_MEMBER_KEYS)
# A column's key in a table's header line (CSV, TSV, Markdown): a field name as a whole
# cell, a delimiter or the line's end after it (``cell_delimiter`` checks before it).
_COLUMN = re.compile(
    rf"{keyword_pattern(_MEMBER_KEYS)}(?=[\"'*` \t]*(?:[{re.escape(TABLE_DELIMITERS)}]|\r?$))",
    re.MULTILINE,
)

_SEPARATORS = re.compile(r"[\s_\-]+")
_BY_KEY = {_SEPARATORS.sub("", name): entity for entity, names in _FIELDS.items() for name in names}
_BARE_NAME = frozenset(_SEPARATORS.sub("", name) for name in _BARE_NAME_KEYS)
_PERSONAL = frozenset(_SEPARATORS.sub("", name) for name in _PERSONAL_KEYS)
# A word of each personal key ("phone" of "phone_number"): a key's word is in the key
# as a text writes it, whatever its separators, so a text holding none of them holds no
# such key. Words that say what the detail is, where "number" or "date" are everywhere.
_PERSONAL_WORDS = (
    *("mail", "phone", "mobile", "cell", "contact", "address", "birth", "dob"),
    *("passport", "license", "national", "ssn", "social"),
    *("邮", "电话", "手机", "地址", "住址", "出生", "生日", "护照", "证件", "身份证"),
)
_PERSONAL_GATE = KeywordGate(_as_written(_PERSONAL_WORDS))

_NOT_A_VALUE = frozenset({"unknown", "none", "null", "n/a", "na", "tbd", "-", "redacted"})
_NAME = re.compile(r"[^\W\d_](?:[^\W\d_]|[ '\u2019.\-](?=[^\W\d_ ]))*\.?")
_ID = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9]|[ \-](?=[A-Za-z0-9])){3,23}")
_PHONE = re.compile(r"[+(]?\d(?:[\d ().\-]*\d)?")


_DATE_DIGITS = 4
"""The fewest digits of a full date ("3/8/71", "May 3, 1990")."""


def _member_possible(text: str) -> bool:
    """Whether ``text`` may hold a record's member: a quote, then (after spaces or tabs)
    a colon. Each colon is looked behind (``str.find``: most texts hold few colons,
    where a regular expression's search is several times slower)."""
    i = text.find(":")
    while i >= 0:
        j = i - 1
        while j >= 0 and text[j] in " \t":
            j -= 1
        if j >= 0 and text[j] in "\"'":
            return True
        i = text.find(":", i + 1)
    return False


def _birth_possible(text: str, shape: TextShape | None) -> bool:
    """Whether ``text`` (of ``shape``) may hold a labelled birth date: a birth word and
    the digits of a full date."""
    if shape is not None and shape.digits < _DATE_DIGITS:
        return False
    return _BIRTH_WORDS.present(casefolded(text))


@functools.lru_cache(maxsize=4096)
def _folded_key(key: str) -> str:
    """``key`` without separators, case-folded: ``First-Name`` and ``firstName`` alike;
    its JSON escapes read."""
    return _SEPARATORS.sub("", _unescaped(key)).casefold()


def _entity_of_key(key: str) -> str | None:
    """The entity a field named ``key`` holds (None for any other field)."""
    return _BY_KEY.get(_folded_key(key))


def _unescaped(value: str) -> str:
    """``value`` with its JSON escapes (``Jos\\u00e9``, as ``json.dumps`` writes by
    default) read, and without the spaces around it."""
    for _ in range(3):  # a record inside a JSON string inside another: escaped twice
        if "\\" not in value:
            break
        try:
            value = json.loads(f'"{value}"')
        except ValueError:
            value = value.replace("\\", "")
    return value.strip()


_ESCAPED = re.compile(r"""\\+[n"']""")


def _unescaped_lines(text: str) -> str:
    """``text`` with its escaped line breaks (``\\n``, ``\\\\n``: a CSV inside a JSON
    string or a repr) as spaces and a line break, and its escaped quotes as spaces and
    the quote: as long as ``text``, so that every position holds for both."""
    return _ESCAPED.sub(_unescape, text)


def _unescape(m: re.Match[str]) -> str:
    token = m.group()
    return " " * (len(token) - 1) + ("\n" if token[-1] == "n" else token[-1])


def _valid(entity: str, value: str) -> bool:
    """Whether ``value`` (a field's whole value) looks like an ``entity``; JSON escapes
    are read first."""
    value = _unescaped(value)
    if not value or value.casefold() in _NOT_A_VALUE or value.startswith("["):
        return False  # empty, a placeholder, or redacted already
    if entity == EntityType.PERSON:
        return len(value) <= 64 and _NAME.fullmatch(value) is not None
    if entity == EntityType.DATE_OF_BIRTH:
        return _FULL_DATE.fullmatch(value) is not None
    digits = sum(ch.isdigit() for ch in value)
    if entity == EntityType.PHONE:
        return 7 <= digits <= 15 and _PHONE.fullmatch(value) is not None
    return digits >= 4 and _ID.fullmatch(value) is not None  # NATIONAL_ID


class FieldRecognizer:
    """Personal data in the named fields of records (JSON members in text), and birth
    dates labelled in prose. Names only with ``names`` (as for :class:`~agentctx.
    privacy.recognizers.names.PersonRecognizer`)."""

    name = "fields"

    def __init__(self, names: bool = True) -> None:
        self.names = names
        self.entity_types: tuple[str, ...] = (
            *((EntityType.PERSON,) if names else ()),
            EntityType.DATE_OF_BIRTH,
            EntityType.NATIONAL_ID,
            EntityType.PHONE,
        )

    def entity_of(
        self, key: str, value: str, siblings: Callable[[], Iterable[Any]] = tuple
    ) -> str | None:
        """The entity the member ``key: value`` of a record holds, or None: the key names
        one and the whole value looks like it. ``siblings`` gives the keys of the
        record's members (asked only for a bare ``"name"`` holding a full name)."""
        entity = _entity_of_key(key)
        if entity is None:
            if not self.names or _folded_key(key) not in _BARE_NAME:
                return None
            # The value's shape first: reading the record's keys costs more.
            if not full_name(_unescaped(value)):
                return None
            personal = any(isinstance(k, str) and _folded_key(k) in _PERSONAL for k in siblings())
            return EntityType.PERSON if personal else None
        if entity == EntityType.PERSON and not self.names:
            return None
        return entity if _valid(entity, value) else None

    @staticmethod
    def possible(shape: TextShape) -> bool:
        """Whether the text may hold a JSON member (a quote then a colon), a table (a
        line break and a field name), or a birth label and the four digits of a full
        date."""
        text = shape.text
        return (
            _member_possible(text)
            or _birth_possible(text, shape)
            or (("\n" in text or "\\n" in text) and _MEMBER_GATE.present(casefolded(text)))
        )

    def analyze(self, text: str) -> list[Finding]:
        """Every personal field of a record in ``text``, and every labelled birth date."""
        findings: list[Finding] = []
        member = _member_possible(text)
        # Where a field name may start: found once for the members and the tables, and
        # not at all for a text that can hold neither (a birth date in prose).
        lines = "\n" in text or "\\n" in text
        starts = _MEMBER_GATE.starts(text) if member or lines else []
        members = _MEMBER_GATE.finditer_at(_MEMBER, text, starts) if member else ()
        personal: bool | None = None  # whether the text may hold a personal detail's key
        for m in members:
            key, value = text[m.start() : m.start("close")], m.group("value")
            siblings: Callable[[], Iterable[str]] = tuple
            if _entity_of_key(key) is None:  # a bare name: its record's keys may be read
                if personal is None:
                    personal = _PERSONAL_GATE.present(casefolded(text))
                if personal:
                    siblings = functools.partial(record_keys, text, m.start())
            entity = self.entity_of(key, value, siblings)
            if entity is not None:
                start, end = m.span("value")
                # The value without the spaces around it.
                start += len(value) - len(value.lstrip())
                end -= len(value) - len(value.rstrip())
                findings.append(Finding(entity, start, end, 0.85, self.name))
        if "\n" in text:
            findings += self._columns(text, starts)
        if "\\n" in text:
            # A table inside a JSON string or a repr, its line breaks escaped: read in a
            # copy of the text whose escapes are spaces before line breaks and quotes,
            # of the same length, so every position (and ``starts``) holds for both.
            findings += self._columns(_unescaped_lines(text), starts, in_string=True)
        dates = _birth_possible(text, shape_of(text))
        for m in _BIRTH_GATE.finditer(_BIRTH_PATTERN, text) if dates else ():
            start, end = m.span(1)
            findings.append(Finding(EntityType.DATE_OF_BIRTH, start, end, 0.85, self.name))
        return findings

    def _columns(
        self, text: str, starts: list[int] | None, *, in_string: bool = False
    ) -> list[Finding]:
        """The personal values of tables in ``text``: under a header line whose cells
        name fields (``id,name,email,dob``; ``| first_name | phone |``), each row's cell
        in such a column, judged as a record's member with the header as its keys."""
        findings: list[Finding] = []
        headers: set[int] = set()
        for m in _MEMBER_GATE.finditer_at(_COLUMN, text, starts):
            line_start, line_end = line_at(text, m.start())
            delimiter = cell_delimiter(text, m.start(), m.end())
            if line_start in headers or delimiter is None:
                continue
            header = table_header(text, line_start, line_end, delimiter, in_string=in_string)
            if header is None or not any(start == m.start() for _, start, _ in header):
                continue  # not a header, or the field name is not a whole cell
            keys = [key for key, _, _ in header]
            headers.add(line_start)
            rows = table_rows(text, line_end, delimiter, len(header))
            siblings: Callable[[], Iterable[str]] = functools.partial(tuple, keys)
            for column, key in enumerate(keys):
                named = _entity_of_key(key) is not None  # else a bare name (full_name)
                if not named and _folded_key(key) not in _BARE_NAME:
                    continue
                for row in rows:
                    value, start, end = row[column]
                    start += len(value) - len(value.lstrip())  # a cell's own spaces
                    end -= len(value) - len(value.rstrip())
                    value = value.strip()
                    entity = self.entity_of(key, value, siblings)
                    if entity == EntityType.PERSON and named and value[:1].islower():
                        continue  # a table's names are capitalised; prose is not
                    if entity is not None and start < end:
                        findings.append(Finding(entity, start, end, 0.85, self.name))
        return findings
