"""Identity numbers: mainland Chinese resident IDs, and student / employee IDs in context."""

from __future__ import annotations

import datetime as dt
import operator
import re

from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.recognizers.context import (
    ContextWords,
    KeywordGate,
    casefolded,
    glued,
    keyword_pattern,
    score_with_context,
)
from agentctx.privacy.shape import TextShape

_RESIDENT_ID = re.compile(r"[1-8]\d{16}[\dXx]")
_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)
_CHECK_CHARS = "10X98765432"
# The weighted sum over ASCII codes, less this, is the weighted sum over digit values.
_ZERO_OFFSET = 48 * sum(_WEIGHTS)
_ID_WORDS = ContextWords(("身份证", "证件号", "公民身份", "id card", "identity", "national id"))


def resident_id_valid(value: str, today: dt.date | None = None) -> bool:
    """Whether ``value`` is a well-formed 18-character resident ID.

    Checks the ISO 7064 MOD 11-2 check character, a birth date (positions 7-14) that
    is a real calendar date between 1900-01-01 and ``today``, and a region code whose
    first digit is 1-8.
    """
    if len(value) != 18 or not value[:17].isdigit() or value[0] not in "12345678":
        return False
    digits = value[:17]
    if digits.isascii():
        # ``map`` over the ASCII codes keeps the loop in C: this runs on every 18-digit run.
        total = sum(map(operator.mul, digits.encode("ascii"), _WEIGHTS)) - _ZERO_OFFSET
    else:  # other Unicode digits ("\d" matches them too)
        total = sum(int(c) * w for c, w in zip(digits, _WEIGHTS, strict=True))
    if _CHECK_CHARS[total % 11] != value[17].upper():
        return False
    try:
        born = dt.date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    return dt.date(1900, 1, 1) <= born <= (today or dt.date.today())


class ResidentIDRecognizer:
    """18-character mainland Chinese resident identity numbers (居民身份证号码)."""

    name = "cn_resident_id"
    entity_types: tuple[str, ...] = (EntityType.CN_RESIDENT_ID,)

    @staticmethod
    def possible(shape: TextShape) -> bool:
        """Whether ``shape`` has the 17 digits an ID starts with."""
        return shape.digits >= 17

    def analyze(self, text: str) -> list[Finding]:
        """Every valid resident ID in ``text``."""
        findings: list[Finding] = []
        for m in _RESIDENT_ID.finditer(text):
            start, end = m.span()
            if glued(text, start, end) or not resident_id_valid(m.group()):
                continue
            # A check digit and a birth date make a random hit unlikely: even near
            # "order" it stays above the threshold.
            score = score_with_context(
                0.9, text, start, end, positive=_ID_WORDS, boost=0.09, penalty=0.3
            )
            findings.append(Finding(EntityType.CN_RESIDENT_ID, start, end, score, self.name))
        return findings


def _contextual_id(words: tuple[str, ...]) -> re.Pattern[str]:
    # A context word, then up to 20 characters on the same clause, then an ID of 6-12
    # letters and digits with at least four digits.
    return re.compile(
        rf"{keyword_pattern(words)}[^\n\uff0c,;\uff1b。]{{0,20}}?"
        r"(?<![A-Za-z0-9])(?=(?:[A-Za-z]*\d){4})([A-Za-z0-9]{6,12})(?![A-Za-z0-9])",
    )


class _ContextualIDRecognizer:
    """An ID that is only an ID because a context word names it."""

    name: str
    entity_types: tuple[str, ...]
    _pattern: re.Pattern[str]
    _gate: KeywordGate
    _entity: str

    def possible(self, shape: TextShape) -> bool:
        """Whether ``shape`` has the four digits an ID needs, and one of the words."""
        return shape.digits >= 4 and self._gate.present(casefolded(shape.text))

    def analyze(self, text: str) -> list[Finding]:
        """Every ID introduced by a context word in ``text``."""
        findings: list[Finding] = []
        # Most texts name no ID at all: a substring test skips the regex scan for them.
        if not self._gate.present(casefolded(text)):
            return findings
        for m in self._pattern.finditer(text):
            start, end = m.span(1)
            findings.append(Finding(self._entity, start, end, 0.85, self.name))
        return findings


class StudentIDRecognizer(_ContextualIDRecognizer):
    """Student numbers, only after "学号", "学生证号", "student id/number" and the like."""

    name = "student_id"
    entity_types: tuple[str, ...] = (EntityType.STUDENT_ID,)
    _entity = EntityType.STUDENT_ID
    _words = (
        "学号",
        "学生证号",
        "学籍号",
        "student id",
        "student number",
        "student no",
        "student #",
    )
    _pattern = _contextual_id(_words)
    _gate = KeywordGate(_words)


class EmployeeIDRecognizer(_ContextualIDRecognizer):
    """Employee numbers, only after "工号", "员工号", "employee id", "staff id" and the like."""

    name = "employee_id"
    entity_types: tuple[str, ...] = (EntityType.EMPLOYEE_ID,)
    _entity = EntityType.EMPLOYEE_ID
    _words = (
        "工号",
        "员工号",
        "员工编号",
        "职工号",
        "employee id",
        "employee number",
        "employee no",
        "staff id",
        "staff number",
        "staff no",
    )
    _pattern = _contextual_id(_words)
    _gate = KeywordGate(_words)
