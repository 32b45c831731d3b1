"""Payment card numbers."""

from __future__ import annotations

import re

from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.recognizers.context import NEGATIVE, ContextWords, clamp, clause_start, glued
from agentctx.privacy.shape import TextShape

# 13-19 digits run together, or in groups of four (Amex: 4-6-5) split by one kind of
# separator. Grouped numbers longer than 16 digits (19-digit UnionPay, "6228 4524 9069
# 0090 060") have a fifth group of one to three digits.
_CARD = re.compile(
    r"\d\d{3}(?:\d{9,15}"
    r"|([ \-])\d{4}\1\d{4}\1(?:\d{4}\1\d{1,3}(?!\d)|\d{1,7})"
    r"|([ \-])\d{6}\2\d{4,5})(?!-\d)"
)
_CARD_WORDS = ContextWords(
    (
        "card",
        "credit",
        "debit",
        "visa",
        "mastercard",
        "amex",
        "unionpay",
        "卡号",
        "银行卡",
        "信用卡",
        "借记卡",
        "储蓄卡",
        "银联",
    )
)


def luhn_valid(digits: str) -> bool:
    """Whether the digit string passes the Luhn check."""
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = ord(ch) - 48
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def known_iin(digits: str) -> bool:
    """Whether the prefix and length match a major card network."""
    n = len(digits)
    p2, p3, p4 = int(digits[:2]), int(digits[:3]), int(digits[:4])
    if digits[0] == "4":  # Visa
        return n in (13, 16, 19)
    if 51 <= p2 <= 55 or 2221 <= p4 <= 2720:  # Mastercard
        return n == 16
    if p2 in (34, 37):  # American Express
        return n == 15
    if p4 == 6011 or p2 == 65 or 644 <= p3 <= 649:  # Discover
        return 16 <= n <= 19
    if 3528 <= p4 <= 3589:  # JCB
        return 16 <= n <= 19
    if p2 == 62:  # UnionPay
        return 16 <= n <= 19
    return False


class CreditCardRecognizer:
    """Card numbers: Luhn-valid, a known network prefix; card words raise the score."""

    name = "credit_card"
    entity_types: tuple[str, ...] = (EntityType.CREDIT_CARD,)

    @staticmethod
    def possible(shape: TextShape) -> bool:
        """Whether ``shape`` has the 13 digits of the shortest card number."""
        return shape.digits >= 13

    def analyze(self, text: str) -> list[Finding]:
        """Every payment card number in ``text``."""
        findings: list[Finding] = []
        for m in _CARD.finditer(text):
            start, end = m.span()
            if glued(text, start, end):
                continue
            digits = m.group().replace(" ", "").replace("-", "")
            if not _valid(digits):
                # "4111 1111 1111 1111 12": a card followed by a short number.
                sep = m.group(1)
                if sep is None or len(digits) <= 16:
                    continue
                cut = text.rindex(sep, start, end)
                digits = digits[: len(digits) - (end - cut - 1)]
                end = cut
                if len(digits) != 16 or not _valid(digits):
                    continue
            findings.append(
                Finding(
                    EntityType.CREDIT_CARD, start, end, self._score(text, start, end), self.name
                )
            )
        return findings

    @staticmethod
    def _score(text: str, start: int, end: int) -> float:
        if _CARD_WORDS.near(text, start, end):
            return clamp(0.65 + 0.3)
        # A price or an order number lowers the score only in the card's own clause:
        # "it costs $49.99, charge 4111 ..." is still a card.
        if NEGATIVE.before(text, start, start - clause_start(text, start)):
            return clamp(0.65 - 0.35)
        return 0.65


def _valid(digits: str) -> bool:
    return 13 <= len(digits) <= 19 and known_iin(digits) and luhn_valid(digits)


# IBAN lengths by country (ISO 13616 registry): the length check and the mod-97 check
# digits together make a random match vanishingly rare.
_IBAN_LENGTHS = {
    "AD": 24, "AE": 23, "AL": 28, "AT": 20, "AZ": 28, "BA": 20, "BE": 16, "BG": 22,
    "BH": 22, "BR": 29, "BY": 28, "CH": 21, "CR": 22, "CY": 28, "CZ": 24, "DE": 22,
    "DK": 18, "DO": 28, "EE": 20, "EG": 29, "ES": 24, "FI": 18, "FO": 18, "FR": 27,
    "GB": 22, "GE": 22, "GI": 23, "GL": 18, "GR": 27, "GT": 28, "HR": 21, "HU": 28,
    "IE": 22, "IL": 23, "IQ": 23, "IS": 26, "IT": 27, "JO": 30, "KW": 30, "KZ": 20,
    "LB": 28, "LC": 32, "LI": 21, "LT": 20, "LU": 20, "LV": 21, "MC": 27, "MD": 24,
    "ME": 22, "MK": 19, "MR": 27, "MT": 31, "MU": 30, "NL": 18, "NO": 15, "PK": 24,
    "PL": 28, "PS": 29, "PT": 25, "QA": 29, "RO": 24, "RS": 22, "SA": 24, "SC": 31,
    "SE": 24, "SI": 19, "SK": 24, "SM": 27, "ST": 25, "SV": 28, "TL": 23, "TN": 24,
    "TR": 26, "UA": 29, "VA": 22, "VG": 24, "XK": 20,
}  # fmt: skip
_IBAN = re.compile(r"[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?")


def iban_valid(compact: str) -> bool:
    """Whether ``compact`` (no spaces) has its country's length and valid check digits."""
    if _IBAN_LENGTHS.get(compact[:2]) != len(compact):
        return False
    moved = compact[4:] + compact[:4]
    return int("".join(str(int(ch, 36)) for ch in moved)) % 97 == 1


class IBANRecognizer:
    """International bank account numbers, spaced in fours or not, with valid check digits."""

    name = "iban"
    entity_types: tuple[str, ...] = (EntityType.IBAN,)

    @staticmethod
    def possible(shape: TextShape) -> bool:
        """Whether ``shape`` has a country code followed by check digits ("DE89")."""
        return shape.has(b"AA00")

    def analyze(self, text: str) -> list[Finding]:
        """Every IBAN in ``text``."""
        findings: list[Finding] = []
        for m in _IBAN.finditer(text):
            start = m.start()
            if start > 0 and text[start - 1].isalnum():
                continue
            expected = _IBAN_LENGTHS.get(m.group()[:2])
            if expected is None:
                continue
            # The match may run on into a following word in capitals: cut it at the
            # country's length.
            count, end = 0, start
            while end < m.end() and count < expected:
                if text[end] != " ":
                    count += 1
                end += 1
            if count != expected or (end < len(text) and text[end].isalnum()):
                continue
            if iban_valid(text[start:end].replace(" ", "")):
                findings.append(Finding(EntityType.IBAN, start, end, 0.9, self.name))
        return findings
