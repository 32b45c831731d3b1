"""Identity numbers named by a label, whatever their checksum; US social security numbers.

An unlabelled 18-digit run counts as a resident ID only if its check character and
birth date are right (so order numbers and timestamps survive). A labelled one,
"身份证号 11010119900307123X", is an ID number even when the check character is wrong:
a typo or an OCR error does not make it any less someone's ID. The same holds for
"SSN: …", "ID number: …", "passport no. …".
"""

from __future__ import annotations

import re

from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.recognizers.context import (
    KeywordGate,
    glued,
    keyword_pattern,
    score_with_context,
)
from agentctx.privacy.shape import TextShape, shape_of

# What may sit between a label and its value: "身份证号:", "ID number is ", "SSN #".
_GAP = r"[ \t]*(?:号码|号)?[ \t]*(?:[:\uff1a#=]|is|为|是)?[ \t]*"

_CN_LABELS = ("身份证", "公民身份号码", "证件号", "居民身份证", "id card", "resident id")
# An 18-character resident ID (any check character) or an old 15-digit one.
_CN_PATTERN = re.compile(
    rf"{keyword_pattern(_CN_LABELS)}{_GAP}"
    r"(?<![A-Za-z0-9])(\d{17}[\dXx]|\d{15})(?![A-Za-z0-9])"
)
_CN_GATE = KeywordGate(_CN_LABELS)
# The digits of a resident ID in its former 15-digit form, the shortest ``_CN_PATTERN``
# finds.
_SHORTEST_RESIDENT_ID = 15

_ID_LABELS = (
    "id number",
    "id no",
    "identity number",
    "identity card",
    "national id",
    "passport number",
    "passport no",
    "护照号",
    "证件号码",
)
# Letters and digits (with dashes or spaces inside), at least five digits.
_ID_PATTERN = re.compile(
    rf"{keyword_pattern(_ID_LABELS)}\.?{_GAP}"
    r"(?<![A-Za-z0-9])(?=(?:[A-Za-z\- ]*\d){5})"
    r"([A-Za-z0-9](?:[A-Za-z0-9\-]| (?=\d)){4,23}[A-Za-z0-9])"
    r"(?![A-Za-z0-9])"
)
_ID_GATE = KeywordGate(_ID_LABELS)

_SSN_LABELS = ("ssn", "social security", "社会安全号", "社会保障号")
_SSN_LABELLED = re.compile(
    rf"{keyword_pattern(_SSN_LABELS)}(?:[ \t]*(?:number|no\.?|#))?{_GAP}"
    r"(?<![A-Za-z0-9])(\d{3}[ \-]?\d{2}[ \-]?\d{4})(?![A-Za-z0-9])"
)
_SSN_GATE = KeywordGate(_SSN_LABELS)
_SSN_DASHED = re.compile(r"\d{3}-\d{2}-\d{4}")


def ssn_plausible(digits: str) -> bool:
    """Whether nine digits can be a US social security number (area 001-899 but not 666,
    group 01-99, serial 0001-9999)."""
    area, group, serial = digits[:3], digits[3:5], digits[5:]
    return area not in ("000", "666") and area[0] != "9" and group != "00" and serial != "0000"


class LabelledIDRecognizer:
    """ID numbers right after a label that names them: resident IDs (any checksum),
    passport and other national ID numbers."""

    name = "labelled_id"
    entity_types: tuple[str, ...] = (EntityType.CN_RESIDENT_ID, EntityType.NATIONAL_ID)

    @staticmethod
    def possible(shape: TextShape) -> bool:
        """Whether ``shape`` has the five digits a labelled ID needs (a resident ID 15)."""
        return shape.digits >= 5

    def analyze(self, text: str) -> list[Finding]:
        """Every labelled ID number in ``text``."""
        findings: list[Finding] = []
        shape = shape_of(text)
        # The gates try each pattern only where one of its labels occurs; a resident ID
        # needs 15 digits.
        cn = shape is None or shape.digits >= _SHORTEST_RESIDENT_ID
        for m in _CN_GATE.finditer(_CN_PATTERN, text) if cn else ():
            start, end = m.span(1)
            findings.append(Finding(EntityType.CN_RESIDENT_ID, start, end, 0.85, self.name))
        for m in _ID_GATE.finditer(_ID_PATTERN, text):
            start, end = m.span(1)
            value = m.group(1)
            entity = (
                EntityType.CN_RESIDENT_ID
                if len(value) in (15, 18) and value[:17].isdigit()
                else EntityType.NATIONAL_ID
            )
            findings.append(Finding(entity, start, end, 0.8, self.name))
        return findings


class SSNRecognizer:
    """US social security numbers: any nine digits after "SSN" or "social security";
    unlabelled only as ``123-45-6789`` with a plausible area, group and serial."""

    name = "us_ssn"
    entity_types: tuple[str, ...] = (EntityType.US_SSN,)

    @staticmethod
    def possible(shape: TextShape) -> bool:
        """Whether ``shape`` has the nine digits of a social security number."""
        return shape.digits >= 9

    def analyze(self, text: str) -> list[Finding]:
        """Every social security number in ``text``."""
        findings: list[Finding] = []
        labelled: set[int] = set()
        for m in _SSN_GATE.finditer(_SSN_LABELLED, text):
            start, end = m.span(1)
            labelled.add(start)
            findings.append(Finding(EntityType.US_SSN, start, end, 0.9, self.name))
        if "-" not in text:
            return findings
        for m in _SSN_DASHED.finditer(text):
            start, end = m.span()
            if start in labelled or glued(text, start, end):
                continue
            if end < len(text) and text[end] == "-":
                continue
            if not ssn_plausible(m.group().replace("-", "")):
                continue
            score = score_with_context(0.6, text, start, end)
            findings.append(Finding(EntityType.US_SSN, start, end, score, self.name))
        return findings
