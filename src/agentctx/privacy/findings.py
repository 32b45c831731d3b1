"""What PII detection produces, and what a recognizer is.

A :class:`Recognizer` finds spans of one or more entity types in a text; the
analyzer runs every configured recognizer, applies allow-lists, resolves
overlaps (longest, then most confident span wins) and hands the surviving
:class:`Finding` objects to an operator that rewrites the text.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol, runtime_checkable


class EntityType(StrEnum):
    """The entity types agentctx recognizes (custom recognizers may add their own names)."""

    EMAIL = "EMAIL"
    PHONE = "PHONE"
    CN_RESIDENT_ID = "CN_RESIDENT_ID"
    NATIONAL_ID = "NATIONAL_ID"
    US_SSN = "US_SSN"
    STUDENT_ID = "STUDENT_ID"
    EMPLOYEE_ID = "EMPLOYEE_ID"
    CREDIT_CARD = "CREDIT_CARD"
    IBAN = "IBAN"
    IP_ADDRESS = "IP_ADDRESS"
    URL_CREDENTIALS = "URL_CREDENTIALS"
    SECRET = "SECRET"
    PERSON = "PERSON"
    DATE_OF_BIRTH = "DATE_OF_BIRTH"


@dataclass(frozen=True, slots=True)
class Finding:
    """One detected span: ``text[start:end]`` is an entity of ``entity_type``.

    ``score`` is the confidence in [0, 1] after context words raised or lowered it.
    """

    entity_type: str
    start: int
    end: int
    score: float
    recognizer: str

    @property
    def length(self) -> int:
        """The span's length in characters."""
        return self.end - self.start


@runtime_checkable
class Recognizer(Protocol):
    """Finds entities in text. Implementations must be thread-safe and never use the network."""

    name: str
    entity_types: tuple[str, ...]

    def analyze(self, text: str) -> list[Finding]:
        """Every candidate span in ``text``, with its confidence."""
        ...


# Chinese labels of the placeholders (``[手机号_已脱敏]``), by entity type.
ZH_LABELS: Mapping[str, str] = {
    EntityType.PHONE: "手机号",
    EntityType.EMAIL: "邮箱",
    EntityType.CN_RESIDENT_ID: "身份证号",
    EntityType.NATIONAL_ID: "证件号",
    EntityType.US_SSN: "社会安全号",
    EntityType.STUDENT_ID: "学号",
    EntityType.EMPLOYEE_ID: "工号",
    EntityType.PERSON: "姓名",
    EntityType.DATE_OF_BIRTH: "出生日期",
    EntityType.CREDIT_CARD: "银行卡号",
    EntityType.IBAN: "银行账号",
    EntityType.IP_ADDRESS: "IP地址",
    EntityType.URL_CREDENTIALS: "链接凭据",
    EntityType.SECRET: "密钥",
}
