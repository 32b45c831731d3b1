"""``agentctx bench redact``: the labelled corpus, the scoring, and the command."""

from __future__ import annotations

import itertools
import json
import re
import uuid
from datetime import date
from pathlib import Path

import pytest
from typer.testing import CliRunner

from agentctx.bench.redact import (
    RedactConfig,
    RegexBaseline,
    iou,
    matches,
    run_redact_benchmark,
    score_texts,
)
from agentctx.bench.redact_corpus import (
    NEGATIVE_KINDS,
    PLANTED_TYPES,
    Corpus,
    CorpusText,
    Span,
    generate_corpus,
)
from agentctx.bench.redact_records import score_records
from agentctx.bench.redact_report import redact_markdown
from agentctx.cli.main import app
from agentctx.privacy.findings import Finding
from agentctx.privacy.pii import PIIRedactor
from agentctx.privacy.redactor import PassThroughRedactor

# Independent re-implementations, so the corpus is not checked against its own helpers.


def _luhn(digits: str) -> bool:
    doubled = [int(d) for d in digits[::-1]]
    total = sum(
        d if i % 2 == 0 else (d * 2 if d * 2 < 10 else d * 2 - 9) for i, d in enumerate(doubled)
    )
    return total % 10 == 0


def _cn_id_ok(value: str) -> bool:
    weights = [2 ** (17 - i) % 11 for i in range(17)]
    total = sum(int(c) * w for c, w in zip(value[:17], weights, strict=True))
    return "10X98765432"[total % 11] == value[17]


def _birth_ok(value: str) -> bool:
    try:
        born = date(int(value[6:10]), int(value[10:12]), int(value[12:14]))
    except ValueError:
        return False
    return date(1900, 1, 1) <= born <= date.today()


@pytest.fixture(scope="module")
def corpus() -> Corpus:
    return generate_corpus(seed=7, entities=3_000)


def _spans(corpus: Corpus, label: str) -> list[Span]:
    return [s for t in corpus.texts for s in (*t.entities, *t.negatives) if s.label == label]


def test_counts_types_languages_and_kinds(corpus: Corpus) -> None:
    assert corpus.entity_count == 3_000
    per_type = {t: len(_spans(corpus, t)) for t in PLANTED_TYPES}
    assert min(per_type.values()) >= 3_000 // len(PLANTED_TYPES) - 1, per_type
    assert all(len(_spans(corpus, k)) >= 100 for k in NEGATIVE_KINDS)
    assert {(t.lang, t.kind) for t in corpus.texts} == {
        ("en", "sentence"),
        ("zh", "sentence"),
        ("en", "json"),
        ("zh", "json"),
    }
    assert generate_corpus().entity_count >= 10_000


def test_spans_are_exact_and_disjoint(corpus: Corpus) -> None:
    for text in corpus.texts:
        spans = sorted((*text.entities, *text.negatives), key=lambda s: s.start)
        for span in spans:
            assert text.text[span.start : span.end] == span.value
        for a, b in itertools.pairwise(spans):
            assert a.end <= b.start, (a, b)


def test_emails_are_well_formed(corpus: Corpus) -> None:
    atom = r"[A-Za-z0-9!#$%&'*+/=?^_`{|}~-]+"
    for span in _spans(corpus, "EMAIL"):
        assert re.fullmatch(rf"{atom}(?:\.{atom})*@[a-z0-9-]+(?:\.[a-z0-9-]+)+", span.value)


def test_json_outputs_parse(corpus: Corpus) -> None:
    docs = [t for t in corpus.texts if t.kind == "json"]
    assert docs
    for doc in docs:
        parsed = json.loads(doc.text)
        assert parsed["status"] == "ok"
        assert isinstance(parsed["result"]["records"][0], dict)


def test_generated_ids_and_cards_are_valid(corpus: Corpus) -> None:
    ids = _spans(corpus, "CN_RESIDENT_ID")
    assert ids
    for span in ids:
        assert re.fullmatch(r"\d{17}[\dX]", span.value)
        assert _cn_id_ok(span.value) and _birth_ok(span.value), span.value
    cards = _spans(corpus, "CREDIT_CARD")
    prefixes = ("4", "5", "2", "34", "37", "6011", "65", "35", "62")
    assert any(re.sub(r"\D", "", c.value).startswith("62") for c in cards)  # UnionPay
    for span in cards:
        digits = re.sub(r"[ -]", "", span.value)
        assert digits.isdigit() and 15 <= len(digits) <= 19
        assert digits.startswith(prefixes) and _luhn(digits), span.value


def test_hard_negatives_are_negative_by_construction(corpus: Corpus) -> None:
    for span in _spans(corpus, "cn_id_bad_check"):
        assert _birth_ok(span.value) and not _cn_id_ok(span.value)
    for span in _spans(corpus, "card_bad_luhn"):
        assert not _luhn(span.value.replace(" ", ""))
    for span in _spans(corpus, "order_number"):
        assert len(span.value) == 18 and not _cn_id_ok(span.value) and not _luhn(span.value)
    for span in _spans(corpus, "uuid"):
        assert uuid.UUID(span.value).version == 4
    for span in _spans(corpus, "bare_10_digits"):
        assert re.fullmatch(r"\d{10}", span.value)
    for span in _spans(corpus, "version"):
        parts = span.value.lstrip("v").split("-")[0].split(".")
        # Three parts, or a Windows-style build whose third part exceeds any IPv4 octet.
        assert len(parts) == 3 or int(parts[2]) > 255


def test_same_seed_same_corpus() -> None:
    a, b = generate_corpus(3, 200), generate_corpus(3, 200)
    assert a == b
    assert generate_corpus(4, 200).texts != a.texts


def test_match_rule() -> None:
    planted = Span("EMAIL", 10, 30, "x" * 20)
    assert iou(0, 10, 5, 15) == pytest.approx(5 / 15)
    assert matches(Finding("EMAIL", 10, 30, 1.0, "t"), planted)
    assert matches(Finding("EMAIL", 12, 18, 1.0, "t"), planted)  # inside: the value is gone
    assert matches(Finding("EMAIL", 5, 30, 1.0, "t"), planted)  # IoU 0.8
    assert not matches(Finding("EMAIL", 0, 45, 1.0, "t"), planted)  # IoU 0.44: too wide
    assert not matches(Finding("PHONE", 10, 30, 1.0, "t"), planted)


def _labelled(text: str, lang: str, **labels: str) -> CorpusText:
    """A text whose entities are given as TYPE=value (value must occur once)."""
    entities, negatives = [], []
    for label, value in labels.items():
        start = text.index(value)
        span = Span(label.removeprefix("neg_"), start, start + len(value), value)
        (negatives if label.startswith("neg_") else entities).append(span)
    return CorpusText(text, lang, "sentence", tuple(entities), tuple(negatives))  # type: ignore[arg-type]


def test_scoring_on_a_hand_built_case() -> None:
    texts = [
        _labelled(
            "mail ann@example.com or 138-1234-5678, card 4111 1111 1111 1111, "
            "ip 10.1.2.3, test 4111 1111 1111 1112",
            "en",
            EMAIL="ann@example.com",
            PHONE="138-1234-5678",
            CREDIT_CARD="4111 1111 1111 1111",
            IP_ADDRESS="10.1.2.3",
            neg_card_bad_luhn="4111 1111 1111 1112",
        ),
        _labelled(
            "连接串 redis://bob:s3cret@cache.example.org/0 身份证 11010119900307803X",
            "zh",
            URL_CREDENTIALS="redis://bob:s3cret@cache.example.org/0",
            CN_RESIDENT_ID="11010119900307803X",
        ),
    ]
    baseline = RegexBaseline()
    score = score_texts("baseline", "en+zh", texts, [baseline.analyze(t.text) for t in texts])
    by_type = {r.entity_type: r for r in score.per_type}
    # Found: the e-mail, the card, the IP, the ID; "s3cret@cache.example.org" is taken
    # for an e-mail inside the URL (a false positive and a type confusion).
    assert (by_type["EMAIL"].findings, by_type["EMAIL"].true_findings) == (2, 1)
    assert by_type["EMAIL"].precision == pytest.approx(0.5)
    assert by_type["EMAIL"].recall == 1.0
    assert by_type["PHONE"].recall == 0.0 and by_type["PHONE"].precision is None
    assert by_type["URL_CREDENTIALS"].recall == 0.0
    assert by_type["CREDIT_CARD"].f1 == 1.0 and by_type["CN_RESIDENT_ID"].f1 == 1.0
    assert score.type_confusions == 1
    assert (score.overall.planted, score.overall.recalled) == (6, 4)
    assert (score.overall.findings, score.overall.true_findings) == (5, 4)
    assert score.overall.f1 == pytest.approx(2 * 0.8 * (4 / 6) / (0.8 + 4 / 6))
    assert [(n.kind, n.count, n.flagged) for n in score.negatives] == [("card_bad_luhn", 1, 0)]
    langs = {r.entity_type: (r.planted, r.recalled) for r in score.by_language}
    assert langs == {"overall (en)": (4, 3), "overall (zh)": (2, 1)}


def test_a_flagged_negative_is_counted() -> None:
    text = _labelled("order 4111111111111111 shipped", "en", neg_card_bad_luhn="4111111111111111")
    score = score_texts("baseline", "en", [text], [RegexBaseline().analyze(text.text)])
    assert [(n.kind, n.flagged) for n in score.negatives] == [("card_bad_luhn", 1)]
    assert score.overall.findings == 1 and score.overall.true_findings == 0


def test_run_with_an_explicit_subject() -> None:
    baseline = RegexBaseline()
    config = RedactConfig.quick(entities=200, presidio=False)
    report = run_redact_benchmark(config, subject=("baseline", baseline, baseline))
    assert report.entities == 200
    score = report.scores[0]
    assert score.overall.planted == 200
    assert score.throughput_mb_s is not None and score.throughput_mb_s > 0
    assert [t.name for t in report.targets][-1].startswith("throughput")
    assert "#### Targets" in redact_markdown(report)


def test_cli_quick_run(tmp_path: Path) -> None:
    out, md = tmp_path / "redact.json", tmp_path / "redact.md"
    result = CliRunner().invoke(
        app,
        ["bench", "redact", "--quick", "--entities", "300", "--seed", "5",
         "--out", str(out), "--markdown", str(md)],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["entities"] == 300 and data["config"]["seed"] == 5
    subject = data["scores"][0]
    assert subject["system"] in {"agentctx PIIRedactor", "regex baseline"}
    assert sum(r["planted"] for r in subject["per_type"]) == 300
    assert {t["name"] for t in data["targets"]} >= {"throughput >= 10 MB/s"}
    assert "Detection quality" in md.read_text(encoding="utf-8")
    assert "Targets" in result.output


def test_bare_names_in_records_are_counted_per_locale_and_group() -> None:
    """The records part counts what the redactor changed: the engine's redactor finds
    the people's names and keeps most companies'; one that redacts nothing finds none."""
    groups = (("development", ("en_US",)), ("held-out", ("de_CH", "fr_CA")))
    score = score_records(PIIRedactor.from_config(), records=40, seed=3, groups=groups)
    assert [(r.locale, r.group) for r in score.per_locale] == [
        ("en_US", "development"),
        ("de_CH", "held-out"),
        ("fr_CA", "held-out"),
    ]
    development, held_out = score.groups
    assert (development.locales, held_out.locales) == (1, 2)
    assert (development.records, held_out.records) == (40, 80)
    assert held_out.persons_found == sum(r.persons_found_text for r in score.per_locale[1:])
    for row in score.per_locale:
        assert row.persons_found_text >= 36 and row.persons_found_json >= 36, row
        assert row.persons_found_table >= 36, row
        assert row.companies_redacted_text <= 8 and row.companies_redacted_table <= 8, row
    assert held_out.persons_found_table == sum(r.persons_found_table for r in score.per_locale[1:])
    none = score_records(PassThroughRedactor(), records=10, seed=3, groups=groups)
    assert all(g.persons_found == g.companies_redacted == 0 for g in none.groups)
    assert all(g.persons_found_table == g.companies_redacted_table == 0 for g in none.groups)


def test_a_quick_run_reports_the_records_tables() -> None:
    report = run_redact_benchmark(RedactConfig.quick(entities=100, presidio=False, records=5))
    assert report.records is not None
    assert [g.group for g in report.records.groups] == ["development", "held-out"]
    assert "Bare names in records" in redact_markdown(report)
