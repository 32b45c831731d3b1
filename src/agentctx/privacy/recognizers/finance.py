"""Payment card numbers."""

from __future__ import annotations

import re

from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.recognizers.context import NEGATIVE, ContextWords, clamp, clause_start, glued

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
