"""Recognizers for any TLD, file names, labelled IDs whatever their checksum, SSNs, IBANs
and cued names; hard negatives stay untouched."""

# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import pytest

from agentctx.privacy.pii import PIIRedactor
from agentctx.privacy.recognizers import default_recognizers

REDACTOR = PIIRedactor(default_recognizers())


def clean(text: str) -> str:
    return str(REDACTOR.redact_text(text).value)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("alice.wong@example.com.png", "[EMAIL].png"),
        ("saved a.b@mail.example.co.uk.pdf", "saved [EMAIL].pdf"),
        ("bob@studio.photography", "[EMAIL]"),
        ("c@x.dev, d@y.engineering", "[EMAIL], [EMAIL]"),
        ("see invoice_13812345678.pdf", "see invoice_[PHONE].pdf"),
        ("scan_13812345678_front.jpg", "scan_[PHONE]_front.jpg"),
        ("身份证号：11010119900307123X", "身份证号：[CN_RESIDENT_ID]"),
        ("身份证: 110101199003071234", "身份证: [CN_RESIDENT_ID]"),
        ("ID number: 110101199003071234", "ID number: [CN_RESIDENT_ID]"),
        ("passport no. E12345678", "passport no. [NATIONAL_ID]"),
        ("SSN: 123-45-6789", "SSN: [US_SSN]"),
        ("social security number 123456789", "social security number [US_SSN]"),
        ("his number is 123-45-6789.", "his number is [US_SSN]."),
        ("IBAN DE89 3704 0044 0532 0130 00 THEN", "IBAN [IBAN] THEN"),
        ("pay to GB82WEST12345698765432", "pay to [IBAN]"),
        ("姓名：张三", "姓名：[PERSON]"),
        ("Name: Alice Wong", "Name: [PERSON]"),
        ("张三同学你好", "[PERSON]同学你好"),
        ("请联系李四先生", "请联系[PERSON]先生"),
        ("王女士说可以", "[PERSON]女士说可以"),
    ],
)
def test_found(text: str, expected: str) -> None:
    assert clean(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "icon@2x.png and logo@3x.webp",
        "version 2.13.0 released",
        "订单号：2024123456789012345678",
        "编号 110101199003071235",  # a resident ID shape with a wrong check digit, unlabelled
        "reference 110101199003071235",
        "at 2024-03-07T12:30:00Z, ts 1712345678",
        "commit 3f2a9c1b7d4e5f60718293a4b5c6d7e8f9012345",
        "request 550e8400-e29b-41d4-a716-446655440000",
        "it costs $1,299.00",
        "最高同学们和明天老师来",
        "GB82WEST12345698765433",  # check digits wrong
        "000-12-3456 and 666-12-3456",  # no SSN starts 000 or 666
    ],
)
def test_hard_negatives_survive(text: str) -> None:
    assert clean(text) == text
