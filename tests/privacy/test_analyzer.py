"""The analyzer: thresholds, allow-lists, overlap resolution, regex recognizers, registry."""

from __future__ import annotations

import itertools
import re
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from agentctx.errors import ConfigError
from agentctx.privacy.analyzer import (
    AllowList,
    Analyzer,
    RegexRecognizer,
    register_recognizer,
    registered_recognizers,
    resolve_overlaps,
    resolve_recognizer,
    unregister_recognizer,
)
from agentctx.privacy.config import CustomPattern
from agentctx.privacy.findings import Finding, Recognizer
from agentctx.privacy.recognizers import default_recognizers

EMAIL = RegexRecognizer("email", "EMAIL", r"[\w.+-]+@[\w-]+(?:\.[\w-]+)+", score=0.9)
PHONE = RegexRecognizer("phone", "PHONE", r"(?<!\d)1[3-9]\d{9}(?!\d)", score=0.8)
DIGITS = RegexRecognizer("digits", "STUDENT_ID", r"\d{6,}", score=0.55)


def spans(text: str, findings: list[Finding]) -> list[tuple[str, str]]:
    return [(f.entity_type, text[f.start : f.end]) for f in findings]


def test_regex_recognizers_satisfy_the_protocol() -> None:
    assert isinstance(EMAIL, Recognizer)
    assert EMAIL.entity_types == ("EMAIL",)


def test_longest_span_wins_over_contained_ones() -> None:
    text = "call 13812345678 now"
    found = Analyzer([DIGITS, PHONE]).analyze(text)
    # Both cover the same 11 digits: equal length, so the more confident PHONE wins.
    assert spans(text, found) == [("PHONE", "13812345678")]
    text = "id 1381234567890123 here"
    found = Analyzer([PHONE, DIGITS]).analyze(text)
    # PHONE does not match inside a longer digit run; DIGITS covers all of it.
    assert spans(text, found) == [("STUDENT_ID", "1381234567890123")]


def test_overlap_resolution_prefers_length_then_score() -> None:
    findings = [
        Finding("A", 0, 5, 0.9, "a"),
        Finding("B", 3, 12, 0.6, "b"),  # longest: wins, knocks out A and C
        Finding("C", 10, 14, 0.99, "c"),
        Finding("D", 14, 18, 0.7, "d"),  # touches C's end, but C is gone; no overlap with B
        Finding("E", 14, 18, 0.8, "e"),  # same span as D, more confident
        Finding("F", 20, 22, 0.5, "f"),
    ]
    result = resolve_overlaps(findings)
    assert [f.entity_type for f in result] == ["B", "E", "F"]
    assert [f.start for f in result] == sorted(f.start for f in result)


@given(
    st.lists(
        st.tuples(st.integers(0, 60), st.integers(1, 15), st.floats(0, 1)),
        max_size=40,
    )
)
def test_resolved_findings_never_overlap_and_only_lose_to_longer_or_equal(
    raw: list[tuple[int, int, float]],
) -> None:
    findings = [Finding("X", s, s + n, score, f"r{i}") for i, (s, n, score) in enumerate(raw)]
    chosen = resolve_overlaps(findings)
    for left, right in itertools.pairwise(chosen):
        assert left.end <= right.start
    for f in findings:
        if f in chosen:
            continue
        blockers = [c for c in chosen if c.start < f.end and f.start < c.end]
        assert blockers, "a dropped finding must overlap a chosen one"
        assert any(
            c.length > f.length or (c.length == f.length and c.score >= f.score) for c in blockers
        )


# Pieces that make several recognizers fire on the same characters: credentials in URLs
# that are also secrets ("sk-..."), "password=" inside a URL, e-mail-like "password@host".
_PIECES = (
    "postgresql://admin:s3cr3t@db.example.com/app",
    "redis://default:sk-abcdefghijklmnopqrstuvwxyz123456@cache:6379/0",
    "mysql://root:password=hunter2x@db1.internal/0",
    "https://u:token_A1b2C3d4E5f6G7h8@h.io/x",
    "password=Tr0ub4dor&3",
    'api_key="0123456789abcdef0123456789abcdef"',
    "sk-proj-AbCdEfGhIjKlMnOpQrStUvWxYz0123456789",
    "ops@example.com",
    "13812345678",
    "+1 415 555 0132",
    "6228 4524 9069 0090 060",
    "192.168.1.10",
    "2001:db8::8a2e:370:7334",
)


@given(
    st.lists(
        st.tuples(st.sampled_from(_PIECES), st.sampled_from(["", " ", ", ", "@", ":", "/"])),
        min_size=1,
        max_size=8,
    )
)
def test_default_recognizers_never_yield_overlapping_findings(
    parts: list[tuple[str, str]],
) -> None:
    text = "".join(piece + glue for piece, glue in parts)
    analyzer = Analyzer(default_recognizers(names=True))
    findings = analyzer.analyze(text)
    for left, right in itertools.pairwise(findings):
        assert left.end <= right.start, (text, left, right)
    # Every candidate above the threshold is either kept or loses to a kept finding.
    for recognizer in analyzer.recognizers:
        for f in recognizer.analyze(text):
            if f.score < analyzer.min_score or f in findings:
                continue
            assert any(c.start < f.end and f.start < c.end for c in findings), (text, f)


def test_a_secret_inside_url_credentials_is_one_finding() -> None:
    text = "redis://default:sk-abcdefghijklmnopqrstuvwxyz123456@cache:6379/0"
    assert spans(text, Analyzer(default_recognizers()).analyze(text)) == [
        ("URL_CREDENTIALS", "default:sk-abcdefghijklmnopqrstuvwxyz123456")
    ]


def test_min_score_drops_weak_findings() -> None:
    text = "student 20231234 and 13812345678"
    assert spans(text, Analyzer([DIGITS, PHONE]).analyze(text)) == [
        ("STUDENT_ID", "20231234"),
        ("PHONE", "13812345678"),
    ]
    strict = Analyzer([DIGITS, PHONE], min_score=0.6)
    assert spans(text, strict.analyze(text)) == [("PHONE", "13812345678")]
    # A finding exactly at the threshold counts.
    assert len(Analyzer([DIGITS], min_score=0.55).analyze(text)) == 2


def test_context_words_raise_a_weak_pattern_above_the_threshold() -> None:
    spec = CustomPattern(
        name="sid",
        entity_type="STUDENT_ID",
        pattern=r"\b\d{8}\b",
        score=0.3,
        context=("学号", "student id"),
    )
    analyzer = Analyzer([RegexRecognizer.from_config(spec)])
    assert analyzer.analyze("order 20231234 shipped") == []
    text = "我的学号是 20231234"
    assert spans(text, analyzer.analyze(text)) == [("STUDENT_ID", "20231234")]
    text = "Student ID: 20231234"
    (finding,) = analyzer.analyze(text)
    assert finding.score == pytest.approx(0.65)
    far = "student id " + "x" * 60 + " 20231234"
    assert analyzer.analyze(far) == []


def test_allow_list_is_exact_and_case_insensitive_only_for_emails() -> None:
    text = "Write to Support@Example.com or bob@example.com; code 20231234 or 20239999"
    analyzer = Analyzer([EMAIL, DIGITS], allow_list=["support@example.com", "20231234"])
    assert spans(text, analyzer.analyze(text)) == [
        ("EMAIL", "bob@example.com"),
        ("STUDENT_ID", "20239999"),
    ]
    # Non-email values match exactly: a longer number containing an allowed one still counts.
    assert spans("x 202312345", analyzer.analyze("x 202312345")) == [("STUDENT_ID", "202312345")]
    allow = AllowList(["Token-ABC"])
    assert allow.allows("Token-ABC", "SECRET")
    assert not allow.allows("token-abc", "SECRET")


def test_with_allow_list_adds_values_without_changing_the_original() -> None:
    base = Analyzer([EMAIL], allow_list=["a@x.org"])
    text = "a@x.org b@x.org c@x.org"
    extended = base.with_allow_list(["B@X.ORG"])
    assert spans(text, extended.analyze(text)) == [("EMAIL", "c@x.org")]
    assert spans(text, base.analyze(text)) == [("EMAIL", "b@x.org"), ("EMAIL", "c@x.org")]
    assert extended.recognizers == base.recognizers


def test_nothing_found_and_empty_text() -> None:
    analyzer = Analyzer([EMAIL, PHONE])
    assert analyzer.analyze("") == []
    assert analyzer.analyze("nothing personal here") == []


def test_findings_outside_the_text_are_ignored() -> None:
    class Broken:
        name = "broken"
        entity_types = ("X",)

        def analyze(self, text: str) -> list[Finding]:
            return [Finding("X", 5, 2, 1.0, self.name), Finding("X", 0, len(text) + 3, 1.0, "b")]

    assert Analyzer([Broken()]).analyze("hello") == []


def test_a_non_recognizer_is_refused() -> None:
    with pytest.raises(ConfigError):
        Analyzer([object()])  # type: ignore[list-item]


def test_invalid_custom_pattern_is_refused() -> None:
    with pytest.raises(ValueError, match="invalid regular expression"):
        CustomPattern(name="bad", entity_type="X", pattern="([a-z")
    with pytest.raises(ValueError):
        CustomPattern(name="x", entity_type="X", pattern="a", surprise=1)  # type: ignore[call-arg]


def test_registry_by_name_and_import_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    employee = RegexRecognizer("test-employee", "EMPLOYEE_ID", r"\bE\d{5}\b", score=0.9)
    register_recognizer(employee)
    try:
        assert resolve_recognizer("test-employee") is employee
        assert "test-employee" in registered_recognizers()
        with pytest.raises(ConfigError, match="already registered"):
            register_recognizer(RegexRecognizer("test-employee", "X", "x"))
        register_recognizer(RegexRecognizer("test-employee", "X", "x"), replace=True)
        assert resolve_recognizer("test-employee").entity_types == ("X",)
    finally:
        unregister_recognizer("test-employee")
    with pytest.raises(ConfigError, match="no recognizer registered"):
        resolve_recognizer("test-employee")

    (tmp_path / "my_recognizers.py").write_text(
        "from agentctx.privacy.analyzer import RegexRecognizer\n"
        "BADGE = RegexRecognizer('badge', 'BADGE', r'BDG-\\d{4}', score=0.9)\n"
        "def make():\n"
        "    return RegexRecognizer('made', 'MADE', r'M-\\d{3}', score=0.9)\n"
        "NOT_ONE = 42\n",
        encoding="utf-8",
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    badge = resolve_recognizer("my_recognizers:BADGE")
    text = "badge BDG-1234 and M-123"
    assert spans(text, Analyzer([badge]).analyze(text)) == [("BADGE", "BDG-1234")]
    made = resolve_recognizer("my_recognizers:make")
    assert spans(text, Analyzer([made]).analyze(text)) == [("MADE", "M-123")]
    with pytest.raises(ConfigError, match="not a Recognizer"):
        resolve_recognizer("my_recognizers:NOT_ONE")
    with pytest.raises(ConfigError, match="cannot load"):
        resolve_recognizer("my_recognizers:missing")
    sys.modules.pop("my_recognizers", None)


def test_regex_recognizer_accepts_compiled_patterns_and_skips_empty_matches() -> None:
    recognizer = RegexRecognizer("opt", "X", re.compile(r"a*"), score=0.9)
    text = "baab"
    assert spans(text, Analyzer([recognizer]).analyze(text)) == [("X", "aa")]
