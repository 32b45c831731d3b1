"""Email addresses and phone numbers (mainland Chinese mobiles and international numbers)."""

from __future__ import annotations

import re
from collections.abc import Sequence

import phonenumbers

from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.recognizers.context import (
    WINDOW,
    ContextWords,
    KeywordGate,
    casefolded,
    clamp,
    glued,
    glued_before,
    score_with_context,
)
from agentctx.privacy.shape import TextShape, shape_of

# Endings that are file extensions: "alice@example.com.png" is an address in a file
# name, and "icon@2x.png" is no address at all. Any other alphabetic ending of 2-63
# letters is taken as a top-level domain (the IANA list is long and keeps growing:
# ".photography", ".dev").
_FILE_EXTENSIONS = frozenset(
    (
        *("png", "jpg", "jpeg", "gif", "webp", "bmp", "svg", "tif", "tiff", "ico", "heic"),
        *("pdf", "doc", "docx", "xls", "xlsx", "ppt", "pptx", "odt", "txt", "csv", "tsv"),
        *("json", "yaml", "yml", "xml", "html", "htm", "md", "rst", "log", "eml", "msg"),
        *("zip", "tar", "gz", "tgz", "bz", "xz", "rar", "bak", "tmp", "db", "sqlite"),
        *("js", "ts", "jsx", "tsx", "mjs", "css", "py", "rb", "sh", "go", "rs", "java", "kt"),
        *("mp", "mov", "avi", "mkv", "wav", "ogg", "ics", "vcf"),
    )
)
_LOCAL_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._%+\-]{0,63}$")
_LABEL = r"[A-Za-z0-9](?:[A-Za-z0-9\-]{0,61}[A-Za-z0-9])?"
_DOMAIN = re.compile(rf"@((?:{_LABEL}\.)+[A-Za-z]{{2,63}})(?![A-Za-z0-9\-])")
# "scheme://user:" right before a local part: that "email" is a URL's password@host.
_URL_USERINFO = re.compile(r"://[^\s/@]*:$")


_EXTENSION_AFTER = re.compile(r"\.([A-Za-z0-9]{2,5})(?![A-Za-z0-9])")


def in_file_name(text: str, start: int, end: int) -> bool:
    """Whether ``text[start:end]`` is a part of a file name: joined to the words around
    it by ``_``, or followed by a file extension."""
    if (start > 0 and text[start - 1] == "_") or (end < len(text) and text[end] == "_"):
        return True
    m = _EXTENSION_AFTER.match(text, end)
    return m is not None and m.group(1).lower() in _FILE_EXTENSIONS


def _domain_end(domain: str, offset: int) -> int | None:
    """Where an address whose domain starts at ``offset`` ends: file extensions after it
    are left out ("a@example.com.png" ends before ".png"); None if no domain remains."""
    labels = domain.split(".")
    while len(labels) > 2 and labels[-1].lower() in _FILE_EXTENSIONS:
        labels.pop()
    tld = labels[-1]
    if not tld.isalpha() or tld.lower() in _FILE_EXTENSIONS:
        return None
    return offset + len(".".join(labels))


class EmailRecognizer:
    """Email addresses: any alphabetic top-level domain that is no file extension."""

    name = "email"
    entity_types: tuple[str, ...] = (EntityType.EMAIL,)

    def analyze(self, text: str) -> list[Finding]:
        """Every email address in ``text``."""
        if "@" not in text:
            return []
        findings: list[Finding] = []
        for m in _DOMAIN.finditer(text):
            at, end = m.span()
            local_match = _LOCAL_PART.search(text, max(0, at - 64), at)
            if local_match is None:
                continue
            start = local_match.start()
            if (start > 0 and text[start - 1] in "._%+-") or glued_before(text, start):
                continue
            local = local_match.group()
            if ".." in local or local.endswith("."):
                continue
            domain_end = _domain_end(m.group(1), m.start(1))
            if domain_end is None:
                continue
            end = domain_end
            if (
                start > 0
                and text[start - 1] == ":"
                and _URL_USERINFO.search(text, max(0, start - 256), start)
            ):
                continue
            findings.append(Finding(EntityType.EMAIL, start, end, 0.95, self.name))
        return findings


_PHONE_WORDS = ContextWords(
    (
        "phone",
        "tel",
        "telephone",
        "mobile",
        "cell",
        "call",
        "fax",
        "contact",
        "whatsapp",
        "sms",
        "电话",
        "手机",
        "联系",
        "致电",
        "热线",
        "座机",
        "传真",
        "来电",
    )
)
_PHONE_WORD_LIST = _PHONE_WORDS.words
# ``phone_context`` is true only if a phone word occurs somewhere in the text: one
# substring test per text spares its regex searches for every candidate in a text
# without one.
_PHONE_GATE = KeywordGate(_PHONE_WORD_LIST)
# Labels of other numbers: "电话 147 3830 8734 学号 2021001234" - the phone word belongs to
# the first number, the label to the second.
_OTHER_LABELS = (
    "学号",
    "工号",
    "身份证",
    "卡号",
    "编号",
    "订单",
    "单号",
    "时间戳",
    "样例",
    "student",
    "employee",
    "order",
    "invoice",
    "card",
    "timestamp",
)


def _label_alternative(word: str) -> str:
    escaped = re.escape(word)
    return rf"(?<![A-Za-z]){escaped}" if word[:1].isascii() else escaped


# The labels before a candidate; the last one decides whether a phone word introduces it.
_LABELS = re.compile(
    "(?P<phone>"
    + "|".join(_label_alternative(w) for w in sorted(_PHONE_WORD_LIST, key=len, reverse=True))
    + ")|"
    + "|".join(_label_alternative(w) for w in sorted(_OTHER_LABELS, key=len, reverse=True)),
    re.IGNORECASE,
)
# What ends the stretch a phone word may reach over: a digit (another number would take
# the word) or a clause break. Matched from the window's start, it ends right after the
# last one (greedy, then one step back at a time: linear in the window, where searching
# for the stretch itself is quadratic).
_PHONE_TAIL = re.compile(r"(?s:.*)[\d\n,;\uff0c\uff1b\u3002]")


def phone_context(text: str, start: int, window: int = WINDOW) -> bool:
    """Whether a phone word introduces the number at ``start``.

    The word must be in the same clause, with no other number and no other label
    ("学号", "order") between it and ``start``.
    """
    lo = max(0, start - window)
    stop = _PHONE_TAIL.match(text, lo, start)
    tail = stop.end() if stop is not None else lo
    # The last label can only be a phone word if the stretch holds one: a substring test
    # spares the label scan (slow: no literal prefix to skip ahead with) most of the time.
    if tail == start or not _PHONE_GATE.present(text[tail:start].casefold()):
        return False
    last = None
    for label in _LABELS.finditer(text, tail, start):
        last = label
    return last is not None and last.lastgroup == "phone"


# Written to start with a plain character class so the regex engine can skip ahead fast:
# "+86 ...", "0086 ..." or "1[3-9]...".
_CN_MOBILE = re.compile(
    r"[+01](?:(?<=\+)86[ \-]?1|(?<=0)086[ \-]?1|(?<=1))[3-9]\d(?:[ \-]?\d{4}){2}"
)
# Anything that could be a phone number: digits with the usual separators.
_CANDIDATE = re.compile(r"[+(\d][\d \-().]{5,20}\d")
_NANP_SHAPE = re.compile(r"(?:\+?1[ \-.]?)?(?:\(\d{3}\) ?|\d{3}[ \-.])\d{3}[ \-.]\d{4}")
# A North American number by its structure alone: area code and exchange start with 2-9,
# the area code's middle digit is not 9; one separator throughout ("415.555.0132",
# "+1 415 555 0132", "+1-415-555-0132", "(415) 555-0132"). ``phonenumbers`` would reject
# area codes not yet assigned, which people still write and which still identify someone.
_NANP = re.compile(
    r"(?:\+?1(?P<cc>[ \-.]?))?"
    r"(?:\((?P<paren>[2-9][0-8]\d)\)[ \-]?|(?P<area>[2-9][0-8]\d)(?P<sep>[ \-.]))"
    r"[2-9]\d\d(?(sep)(?P=sep)|[ \-])\d{4}"
)
_INTERNATIONAL = re.compile(r"(?:\+|00)[ \-(]?[1-9]")
_CN_LANDLINE_SHAPE = re.compile(r"\(?0\d{2,3}\)?[ \-]\d{7,8}")
_DATE_SHAPE = re.compile(r"\d{4}[\-/.]\d{1,2}[\-/.]\d{1,2}|\d{1,2}[\-/.]\d{1,2}[\-/.]\d{2,4}")
_DOTTED = re.compile(r"\d+(?:\.\d+)+")

DEFAULT_REGIONS: tuple[str, ...] = ("US", "CN", "GB", "DE", "FR", "JP", "HK", "TW", "SG", "IN")


def _international(candidate: str) -> bool:
    """Whether ``candidate`` starts like a number dialled abroad: an international prefix
    ("+", or "00" as dialled from China and Europe), then a country code, which never
    starts with 0 (E.164), and at least 6 digits with it (the shortest numbers
    ``phonenumbers`` knows, 4 digits in Austria, Germany and Iran). "#0012345" is an order
    number, and is rejected here rather than parsed in every region."""
    if _INTERNATIONAL.match(candidate) is None:
        return False
    digits = sum(ch.isdigit() for ch in candidate) - (2 if candidate[0] == "0" else 0)
    return digits >= _SHORTEST_INTERNATIONAL


_SHORTEST_INTERNATIONAL = 6
# The fewest digits of a number recognized by its shape alone: a North American number
# (3 + 3 + 4) or a mainland landline (0 + 2 + 7); a mainland mobile has 11.
_SHAPED_DIGITS = 10
# The digits of a mainland mobile: "1", then [3-9] and 9 more.
_MOBILE_DIGITS = 11


class PhoneRecognizer:
    """Phone numbers.

    Mainland Chinese mobiles (``1[3-9]`` + 9 digits, optional +86/0086, spaces or dashes)
    are recognized by pattern. Other numbers are validated with ``phonenumbers``
    (``PhoneNumberMatcher``, leniency VALID) on candidate stretches only, which keeps the
    scan fast. A number without an international prefix must look like a phone number
    (e.g. ``(555) 123-4567``) or follow a phone word ("tel", "电话"), so bare ten-digit
    numbers, dates, prices and version strings are not flagged.
    """

    name = "phone"
    entity_types: tuple[str, ...] = (EntityType.PHONE,)

    def __init__(self, regions: Sequence[str] = DEFAULT_REGIONS) -> None:
        self.regions = tuple(regions)

    @staticmethod
    def possible(shape: TextShape) -> bool:
        """Whether ``shape`` can hold a phone number: a mainland mobile or a North American
        or landline-shaped number has at least 10 digits; any other number needs an
        international prefix ("+" and 6 digits, "00" and 6 more) or a phone word."""
        digits, text = shape.digits, shape.text
        return (
            digits >= _SHAPED_DIGITS
            or (digits >= _SHORTEST_INTERNATIONAL and "+" in text)
            or (digits >= _SHORTEST_INTERNATIONAL + 2 and "00" in text)
            or _PHONE_GATE.present(casefolded(text))
        )

    def analyze(self, text: str) -> list[Finding]:
        """Every phone number in ``text``."""
        findings: list[Finding] = []
        taken: list[tuple[int, int]] = []
        shape = shape_of(text)
        mobiles = shape is None or shape.digits >= _MOBILE_DIGITS
        for m in _CN_MOBILE.finditer(text) if mobiles else ():
            start, end = m.span()
            if glued(text, start, end) or (start > 0 and text[start - 1] == "+"):
                continue
            # In a file name ("invoice_13812345678.pdf") the word before describes the
            # file, not the number: no penalty for "invoice" or "order" there.
            score = score_with_context(
                0.75,
                text,
                start,
                end,
                positive=_PHONE_WORDS,
                boost=0.2,
                penalty=0.0 if in_file_name(text, start, end) else 0.35,
            )
            findings.append(Finding(EntityType.PHONE, start, end, score, self.name))
            taken.append((start, end))
        # Both scans run left to right, so one pointer into ``taken`` finds overlaps.
        i = 0
        words: bool | None = None  # whether the text has a phone word; computed once, if needed
        for m in _CANDIDATE.finditer(text):
            start, end = m.span()
            while i < len(taken) and taken[i][1] <= start:
                i += 1
            if glued(text, start, end) or (i < len(taken) and taken[i][0] < end):
                continue
            if words is None:
                words = _PHONE_GATE.present(casefolded(text))
            findings.extend(self._validate(text, start, end, words))
        return findings

    def _validate(self, text: str, start: int, end: int, words: bool) -> list[Finding]:
        # ``words`` is false when the text has no phone word: ``phone_context`` would be
        # false for every candidate, so it is not asked.
        candidate = text[start:end]
        # Too short for the 10 digits of a number recognized by its shape.
        short = end - start < _SHAPED_DIGITS
        nanp = None if short else _NANP.fullmatch(candidate)
        if nanp is not None:
            area = nanp.group("paren") or nanp.group("area")
            # N11 area codes are service numbers (411, 911): no one's number, and no
            # other country's number either. A one-digit country code needs "+" or a
            # separator ("1-415-...").
            if area[1:] == "11":
                return []
            if nanp.group("cc") is None or candidate[0] == "+" or nanp.group("cc"):
                if words and phone_context(text, start):
                    score = 0.95
                else:
                    score = score_with_context(0.75, text, start, end)
                return [Finding(EntityType.PHONE, start, end, score, self.name)]
        if _DATE_SHAPE.fullmatch(candidate) or _DOTTED.fullmatch(candidate):
            return []
        international = _international(candidate)
        shaped = not short and bool(
            _NANP_SHAPE.fullmatch(candidate.strip()) or _CN_LANDLINE_SHAPE.fullmatch(candidate)
        )
        # Most candidates are rejected: look for a phone word only when it decides.
        context: bool | None = None
        if not (international or shaped):
            context = words and phone_context(text, start)
            if not context:
                return []
        if candidate.startswith("+"):
            regions: tuple[str, ...] = self.regions[:1]  # the country code decides the region
        elif candidate.startswith("00"):
            regions = ("CN",)
        else:
            regions = tuple(self.regions)
        for region in regions:
            found = [
                match
                for match in phonenumbers.PhoneNumberMatcher(
                    candidate, region, leniency=phonenumbers.Leniency.VALID
                )
                if phonenumbers.is_valid_number(match.number)
            ]
            if found:
                if context is None:
                    context = words and phone_context(text, start)
                base = 0.95 if context else 0.75
                out = []
                for match in found:
                    s, e = start + match.start, start + match.end
                    score = clamp(base) if context else score_with_context(base, text, s, e)
                    out.append(Finding(EntityType.PHONE, s, e, score, self.name))
                return out
        return []
