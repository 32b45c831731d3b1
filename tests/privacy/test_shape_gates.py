"""Shape gates skip recognizers that cannot find anything, and change no finding.

The reference is the analyzer as it was before gates: every recognizer runs on every
text, and runs every one of its scans (no text has a shape). On generated texts mixing
personal data, near misses, labels and keywords, in ASCII and in other scripts (other
digits included), the gated analyzer must find exactly what the reference finds, and
redact to exactly the same text. The context windows' linear searches are checked
against the searches they replace.
"""

# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentctx.bench.redact_corpus import generate_corpus
from agentctx.bench.stats import chat_messages
from agentctx.privacy.analyzer import Analyzer, gate_of, resolve_overlaps
from agentctx.privacy.config import RedactionConfig
from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.pii import PIIRedactor
from agentctx.privacy.recognizers import (
    CreditCardRecognizer,
    PhoneRecognizer,
    contact,
    fields,
    labelled,
    secrets,
)
from agentctx.privacy.recognizers.contact import _LABELS, _PHONE_WORD_LIST, phone_context
from agentctx.privacy.recognizers.context import clause_start
from agentctx.privacy.recognizers.fields import _ALL_FIELDS, _BIRTH_LABELS
from agentctx.privacy.recognizers.identity import EmployeeIDRecognizer, StudentIDRecognizer
from agentctx.privacy.recognizers.labelled import _CN_LABELS, _ID_LABELS, _SSN_LABELS
from agentctx.privacy.recognizers.secrets import (
    _PASSWORD_WORDS,
    _SECRET_WORDS,
    _STRONG_KEY_NAMES,
    _WEAK_KEY_NAMES,
)
from agentctx.privacy.shape import TextShape
from privacy.pii_corpus import NEGATIVES, PLANTS, planted_text

REDACTORS = {
    "names": PIIRedactor.from_config(RedactionConfig()),
    "no names": PIIRedactor.from_config(RedactionConfig(names=False)),
}


def _no_shape(text: str) -> None:
    return None


@contextmanager
def shapeless() -> Iterator[None]:
    """Recognizers see no text's shape, so each runs all its scans."""
    modules = (contact, fields, labelled, secrets)
    saved = [module.shape_of for module in modules]
    for module in modules:
        module.shape_of = _no_shape  # type: ignore[assignment]
    try:
        yield
    finally:
        for module, original in zip(modules, saved, strict=True):
            module.shape_of = original  # type: ignore[assignment]


def every_recognizer(analyzer: Analyzer, text: str) -> list[Finding]:
    """The analyzer without gates: every recognizer, every scan, on every text (the
    reference)."""
    if not text:
        return []
    candidates: list[Finding] = []
    with shapeless():
        for recognizer in analyzer.recognizers:
            candidates.extend(recognizer.analyze(text))
    allow = analyzer.allow_list
    kept = [
        f
        for f in candidates
        if f.score >= analyzer.min_score
        and 0 <= f.start < f.end <= len(text)
        and not (allow and allow.allows(text[f.start : f.end], f.entity_type))
    ]
    return resolve_overlaps(kept)


def assert_same(text: str) -> None:
    for label, redactor in REDACTORS.items():
        expected = every_recognizer(redactor.analyzer, text)
        assert redactor.analyze(text) == expected, (label, text)
        rewritten = redactor.operators.apply(text, expected)
        assert redactor.redact_text(text).value == rewritten, (label, text)


_WORDS = sorted(
    {
        *_PHONE_WORD_LIST,
        *_CN_LABELS,
        *_ID_LABELS,
        *_SSN_LABELS,
        *_BIRTH_LABELS,
        *(f'"{field.replace(" ", "_")}": "' for field in _ALL_FIELDS),
        *StudentIDRecognizer._words,
        *EmployeeIDRecognizer._words,
        *_PASSWORD_WORDS,
        *_SECRET_WORDS,
        *_STRONG_KEY_NAMES,
        *_WEAK_KEY_NAMES,
        *("Name:", "my name is", "Dear", "Mr.", "Dr ", "姓名：", "先生", "同学", "version"),
        *("order", "bearer", "Bearer", "-----BEGIN RSA PRIVATE KEY-----", "://", "IBAN"),
        *("name", "email", "first_name", "dob", "phone", "| ", "\t", ";", "\n", ","),
    }
)
_PIECES = sorted(
    {
        *(p.text for p in PLANTS),
        *(p.value for p in PLANTS),
        *NEGATIVES.values(),
        *("0012025550123", "+8613912345678", "(415) 555-0132", "010-12345678", "1.2.3.4"),
        *("fe80::1", "::ffff:192.0.2.1", "GB82WEST12345698765432", "4111-1111-1111-1111"),
        *("eyJhbGciOi.eyJzdWIiOi.sig", "AKIAIOSFODNN7EXAMPLE", "u:p@h", "a@b.co", "12:34"),
        *("+683 4002", "00683 4002", "+376 812345", "078-05-1120", "11010519491231002X"),
        *("1971-08-13", "13 August 1971", "May 3, 1990", "1971年8月13日", "13/08/71", '"'),
        *("Sophia Garcia", "X1234567", '\\"dob\\": \\"1971-08-13\\"', '"passport" : "'),
        *("Maria Lopez", "Lopez, Maria", "maria@example.com", "name,email\n", "|---|---|\n"),
    }
)
# Characters around which gates decide: digits (ASCII and others), separators, letters.
_CHARS = st.sampled_from(list("0123456789 -.:+()@#=_/XxADa\n,;，。٣３¹是为"))
_PIECE = st.one_of(
    st.sampled_from(_PIECES),
    st.sampled_from(_WORDS),
    st.text(_CHARS, min_size=1, max_size=24),
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12),
    st.integers(min_value=0, max_value=10**19).map(str),
    # Numbers as people write them: an international prefix, groups, separators.
    st.from_regex(r"(\+|00|\()?[0-9]{1,4}\)?([ .\-]?[0-9]{1,5}){0,4}", fullmatch=True),
)
_SEPARATOR = st.sampled_from(["", " ", ": ", "=", ", ", "\n", "：", " is ", "_", "-", "."])


@st.composite
def mixed_texts(draw: Any) -> str:
    pieces = draw(st.lists(_PIECE, min_size=1, max_size=8))
    out = []
    for piece in pieces:
        out.append(piece)
        out.append(draw(_SEPARATOR))
    return "".join(out)


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mixed_texts())
def test_gated_analyzer_finds_what_every_recognizer_finds(text: str) -> None:
    assert_same(text)


def test_each_piece_alone_and_after_each_word() -> None:
    for piece in _PIECES:
        for word in ["", *_WORDS]:
            assert_same(f"{word} {piece}".strip())


@pytest.mark.parametrize("seed", [0, 1])
def test_the_redaction_corpus_is_found_the_same(seed: int) -> None:
    for item in generate_corpus(seed, 600).texts:
        assert_same(item.text)


def test_chat_messages_and_planted_text_are_found_the_same() -> None:
    for text in [*chat_messages(0, 200), planted_text(), planted_text("\n")]:
        assert_same(text)


def test_a_shape_counts_digits_by_class() -> None:
    shape = TextShape.of("Ab 12.3 é:x")
    assert shape is not None
    assert shape.shape == b"Aa 00.0 ?:a"
    assert shape.digits == 3
    assert shape.has(b"0.0")
    assert not shape.has(b"AA00")


def test_a_text_with_other_digits_has_no_shape_and_runs_every_recognizer() -> None:
    assert TextShape.of("卡号 ٤١١١١١١١١١١١١١١١") is None
    text = "card ４１１１ １１１１ １１１１ １１１１"
    assert_same(text)


def test_a_gate_skips_its_recognizer_on_texts_it_rules_out() -> None:
    card = CreditCardRecognizer()
    gate = gate_of(card)
    assert gate is not None
    few = TextShape.of("order #0005000 from 2024")
    assert few is not None and not gate(few)
    many = TextShape.of("card 4111 1111 1111 1111")
    assert many is not None and gate(many)
    assert gate_of(PhoneRecognizer(regions=("US",))) is not None


class _AnyDigitCard(CreditCardRecognizer):
    """A subclass with an analyze of its own: the parent's gate does not describe it."""

    def analyze(self, text: str) -> list[Finding]:
        return [Finding(EntityType.CREDIT_CARD, 0, 1, 0.9, "any")] if text else []


def test_a_subclass_with_its_own_analyze_is_not_gated() -> None:
    assert gate_of(_AnyDigitCard()) is None
    analyzer = Analyzer([_AnyDigitCard()])
    assert [f.recognizer for f in analyzer.analyze("no digits here")] == ["any"]


# The searches the linear ones replace: the longest stretch without a break, ending at pos.
_OLD_PHONE_TAIL = re.compile(r"[^\d\n,;\uff0c\uff1b\u3002]*\Z")
_OLD_CLAUSE_TAIL = re.compile(r"[^\n,;\uff0c\uff1b\u3002]*\Z")


def _old_phone_context(text: str, start: int, window: int = 20) -> bool:
    tail = _OLD_PHONE_TAIL.search(text, max(0, start - window), start)
    if tail is None or tail.start() == start:
        return False
    last = None
    for label in _LABELS.finditer(text, tail.start(), start):
        last = label
    return last is not None and last.lastgroup == "phone"


def _old_clause_start(text: str, pos: int, window: int = 20) -> int:
    match = _OLD_CLAUSE_TAIL.search(text, max(0, pos - window), pos)
    return match.start() if match is not None else pos


@settings(max_examples=400, deadline=None)
@given(mixed_texts(), st.integers(min_value=0, max_value=400), st.integers(1, 40))
def test_context_windows_end_where_the_searches_they_replace_end(
    text: str, pos: int, window: int
) -> None:
    pos = min(pos, len(text))
    assert clause_start(text, pos, window) == _old_clause_start(text, pos, window)
    assert phone_context(text, pos, window) == _old_phone_context(text, pos, window)
