"""``agentctx bench redact``: detection quality and speed of the PII redactor.

On a generated, labelled corpus (``bench.redact_corpus``) a detector's findings are
scored against the planted entities:

* **Match rule.** A finding matches a planted entity when the entity types are equal and
  either the spans' intersection-over-union is at least 0.5, or the finding lies wholly
  inside the planted span (a redactor that masks only the password of a connection URL,
  or only the value after ``password=``, still removed the secret). A finding much wider
  than the entity does not match: over-redaction counts against precision.
* **Precision** of a type: findings of that type matching some planted entity / all
  findings of that type. **Recall**: planted entities matched by at least one finding /
  planted entities. F1 is their harmonic mean; "overall" rows are micro-averages.
* Findings of types the corpus does not plant (e.g. PERSON: Faker names appear as filler)
  are left out of the scores and counted separately.
* A finding overlapping a hard negative flags it; each flagged negative is reported.
* **Throughput**: UTF-8 bytes of the whole corpus / seconds of ``redact_text`` over every
  text, one thread, best of three passes (MB = 10^6 bytes).

Targets: recall >= 99.5% and precision >= 98% on the structured types (email, phone,
resident ID, card, IP, secrets, URL credentials), and throughput >= 10 MB/s.
"""

from __future__ import annotations

import importlib
import re
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, Field

from agentctx.bench.machine import Machine, load_average, machine_facts
from agentctx.bench.redact_corpus import (
    NEGATIVE_KINDS,
    PLANTED_TYPES,
    Corpus,
    CorpusText,
    Span,
    cn_id_valid,
    generate_corpus,
    luhn_valid,
)
from agentctx.bench.redact_records import RecordsScore, score_records
from agentctx.privacy.findings import EntityType, Finding
from agentctx.privacy.redactor import Redacted, Redactor

Progress = Callable[[str], None]

STRUCTURED_TYPES: tuple[str, ...] = (
    EntityType.EMAIL,
    EntityType.PHONE,
    EntityType.CN_RESIDENT_ID,
    EntityType.CREDIT_CARD,
    EntityType.IP_ADDRESS,
    EntityType.SECRET,
    EntityType.URL_CREDENTIALS,
)
RECALL_TARGET = 0.995
PRECISION_TARGET = 0.98
THROUGHPUT_TARGET_MB_S = 10.0
MIN_IOU = 0.5
PRESIDIO_INSTALL_HINT = "pip install 'agentctx[presidio]'"
# Presidio's names for the entity types both sides know.
_PRESIDIO_TYPES = {
    "EMAIL_ADDRESS": EntityType.EMAIL,
    "PHONE_NUMBER": EntityType.PHONE,
    "CREDIT_CARD": EntityType.CREDIT_CARD,
    "IP_ADDRESS": EntityType.IP_ADDRESS,
}


class Detector(Protocol):
    """Anything that finds entity spans: resolved, non-overlapping findings."""

    def analyze(self, text: str) -> list[Finding]:
        """The findings in ``text``."""
        ...


class TextRedactor(Protocol):
    """Anything that rewrites a text (what the throughput figure times)."""

    def redact_text(self, text: str) -> Redacted:
        """``text`` with its findings rewritten."""
        ...


# ---------------------------------------------------------------- scoring


def iou(a_start: int, a_end: int, b_start: int, b_end: int) -> float:
    """Intersection over union of two half-open spans."""
    inter = min(a_end, b_end) - max(a_start, b_start)
    if inter <= 0:
        return 0.0
    return inter / (max(a_end, b_end) - min(a_start, b_start))


def matches(finding: Finding, planted: Span) -> bool:
    """The match rule (see the module docstring)."""
    if finding.entity_type != planted.label:
        return False
    inside = planted.start <= finding.start and finding.end <= planted.end
    return finding.end > finding.start and (
        inside or iou(finding.start, finding.end, planted.start, planted.end) >= MIN_IOU
    )


def _overlaps(finding: Finding, span: Span) -> bool:
    return finding.start < span.end and span.start < finding.end


class TypeScore(BaseModel):
    """Precision, recall and F1 of one entity type (or a micro-averaged group)."""

    entity_type: str
    planted: int
    recalled: int
    findings: int
    true_findings: int

    @property
    def precision(self) -> float | None:
        """Matching findings / findings (None when there were no findings)."""
        return self.true_findings / self.findings if self.findings else None

    @property
    def recall(self) -> float | None:
        """Recalled entities / planted entities (None when none were planted)."""
        return self.recalled / self.planted if self.planted else None

    @property
    def f1(self) -> float | None:
        """Harmonic mean of precision and recall."""
        p, r = self.precision, self.recall
        if p is None or r is None or p + r == 0:
            return None
        return 2 * p * r / (p + r)


class NegativeScore(BaseModel):
    """How many hard negatives of one kind were flagged."""

    kind: str
    count: int
    flagged: int


class Score(BaseModel):
    """Everything measured for one detector on one corpus."""

    system: str
    scope: str  # which texts were scored
    texts: int
    utf8_bytes: int
    per_type: list[TypeScore]
    structured: TypeScore
    overall: TypeScore
    by_language: list[TypeScore] = []
    negatives: list[NegativeScore]
    type_confusions: int = 0  # findings overlapping a planted entity of another type
    unscored_findings: dict[str, int] = {}
    throughput_mb_s: float | None = None
    redact_seconds: float | None = None


def _group(name: str, rows: Iterable[TypeScore]) -> TypeScore:
    rows = list(rows)
    return TypeScore(
        entity_type=name,
        planted=sum(r.planted for r in rows),
        recalled=sum(r.recalled for r in rows),
        findings=sum(r.findings for r in rows),
        true_findings=sum(r.true_findings for r in rows),
    )


def score_texts(
    system: str,
    scope: str,
    texts: Sequence[CorpusText],
    findings: Sequence[Sequence[Finding]],
    types: Sequence[str] = PLANTED_TYPES,
) -> Score:
    """Score ``findings[i]`` (a detector's output on ``texts[i]``) against the labels."""
    planted: Counter[str] = Counter()
    recalled: Counter[str] = Counter()
    found: Counter[str] = Counter()
    true_found: Counter[str] = Counter()
    lang_tallies: dict[str, list[int]] = {}  # lang -> [planted, recalled, findings, true]
    negatives: Counter[str] = Counter()
    flagged: Counter[str] = Counter()
    unscored: Counter[str] = Counter()
    confusions = 0
    scored = set(types)
    for text, text_findings in zip(texts, findings, strict=True):
        tally = lang_tallies.setdefault(text.lang, [0, 0, 0, 0])
        entities = [e for e in text.entities if e.label in scored]
        hit = [False] * len(entities)
        for entity in entities:
            planted[entity.label] += 1
        tally[0] += len(entities)
        for negative in text.negatives:
            negatives[negative.label] += 1
        flagged_here: set[int] = set()
        for finding in text_findings:
            if finding.entity_type not in scored:
                unscored[finding.entity_type] += 1
                continue
            found[finding.entity_type] += 1
            tally[2] += 1
            matched = False
            for i, entity in enumerate(entities):
                if matches(finding, entity):
                    hit[i] = matched = True
            if matched:
                true_found[finding.entity_type] += 1
                tally[3] += 1
                continue
            if any(_overlaps(finding, e) for e in entities):
                confusions += 1
            for j, negative in enumerate(text.negatives):
                if _overlaps(finding, negative):
                    flagged_here.add(j)
        for j in flagged_here:
            flagged[text.negatives[j].label] += 1
        for i, entity in enumerate(entities):
            if hit[i]:
                recalled[entity.label] += 1
                tally[1] += 1
    per_type = [
        TypeScore(
            entity_type=t,
            planted=planted[t],
            recalled=recalled[t],
            findings=found[t],
            true_findings=true_found[t],
        )
        for t in types
    ]
    return Score(
        system=system,
        scope=scope,
        texts=len(texts),
        utf8_bytes=sum(len(t.text.encode("utf-8")) for t in texts),
        per_type=per_type,
        structured=_group("structured", (r for r in per_type if r.entity_type in STRUCTURED_TYPES)),
        overall=_group("overall", per_type),
        by_language=[
            TypeScore(
                entity_type=f"overall ({lang})", planted=a, recalled=b, findings=c, true_findings=d
            )
            for lang, (a, b, c, d) in sorted(lang_tallies.items())
        ],
        negatives=[
            NegativeScore(kind=k, count=negatives[k], flagged=flagged[k])
            for k in NEGATIVE_KINDS
            if negatives[k]
        ],
        type_confusions=confusions,
        unscored_findings=dict(unscored),
    )


def measure_throughput(redactor: TextRedactor, texts: Sequence[str], rounds: int = 3) -> float:
    """The best of ``rounds`` passes of ``redact_text`` over ``texts``, in seconds."""
    best = float("inf")
    for _ in range(rounds):
        started = time.perf_counter()
        for text in texts:
            redactor.redact_text(text)
        best = min(best, time.perf_counter() - started)
    return best


def evaluate(
    system: str, detector: Detector, texts: Sequence[CorpusText], scope: str = "en+zh"
) -> Score:
    """Run ``detector`` over ``texts`` and score it."""
    return score_texts(system, scope, texts, [detector.analyze(t.text) for t in texts])


# ---------------------------------------------------------------- a reference detector


class RegexBaseline:
    """A small regex detector: what plain patterns with validation reach.

    Used to check the scoring, and measured in place of agentctx's redactor when that
    cannot be loaded. Finds e-mail addresses, IPv4 addresses, Luhn-valid card numbers
    and resident IDs with a valid check digit; nothing else.
    """

    _PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
        (EntityType.EMAIL, re.compile(r"[\w.+-]+@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)+")),
        (
            EntityType.IP_ADDRESS,
            re.compile(
                r"(?<![\d.])(?:(?:25[0-5]|2[0-4]\d|1?\d?\d)\.){3}(?:25[0-5]|2[0-4]\d|1?\d?\d)(?![\d.])"
            ),
        ),
        (EntityType.CREDIT_CARD, re.compile(r"(?<!\d)\d{4}(?:[ -]?\d{4}){2}[ -]?\d{3,7}(?!\d)")),
        (EntityType.CN_RESIDENT_ID, re.compile(r"(?<!\d)\d{17}[\dX](?![\dX])")),
    )

    def analyze(self, text: str) -> list[Finding]:
        """Every validated match, in text order (the patterns cannot overlap)."""
        out: list[Finding] = []
        for etype, pattern in self._PATTERNS:
            for m in pattern.finditer(text):
                value = m.group()
                if etype == EntityType.CREDIT_CARD and not luhn_valid(re.sub(r"\D", "", value)):
                    continue
                if etype == EntityType.CN_RESIDENT_ID and not cn_id_valid(value):
                    continue
                out.append(Finding(etype, m.start(), m.end(), 0.9, "regex-baseline"))
        out.sort(key=lambda f: f.start)
        return out

    def redact_text(self, text: str) -> Redacted:
        """``text`` with every finding replaced by ``<TYPE>``."""
        findings = self.analyze(text)
        if not findings:
            return Redacted(text)
        parts, at = [], 0
        for f in findings:
            if f.start < at:
                continue
            parts += [text[at : f.start], f"<{f.entity_type}>"]
            at = f.end
        parts.append(text[at:])
        return Redacted("".join(parts), frozenset(f.entity_type for f in findings))


# ---------------------------------------------------------------- subjects


def load_agentctx_redactor() -> tuple[Any, str | None]:
    """agentctx's ``PIIRedactor`` with the default configuration, or (None, why not)."""
    try:
        pii = importlib.import_module("agentctx.privacy.pii")
        return pii.PIIRedactor.from_config(), None
    except ImportError as exc:
        return None, f"agentctx's PII redactor could not be loaded ({exc})"


class _PresidioDetector:
    """Presidio's ``AnalyzerEngine`` behind the ``Detector`` protocol (English only)."""

    def __init__(self, engine: Any) -> None:
        self.engine = engine

    def analyze(self, text: str) -> list[Finding]:
        results = self.engine.analyze(text=text, language="en")
        return [
            Finding(_PRESIDIO_TYPES[r.entity_type], r.start, r.end, r.score, "presidio")
            for r in results
            if r.entity_type in _PRESIDIO_TYPES
        ]


def load_presidio() -> tuple[Detector | None, str | None]:
    """Presidio's analyzer when it and its spaCy model are installed, else (None, a note)."""
    try:
        presidio = importlib.import_module("presidio_analyzer")
    except ImportError:
        return (
            None,
            f"Presidio not measured: presidio_analyzer is not installed ({PRESIDIO_INSTALL_HINT})",
        )
    try:
        spacy_util = importlib.import_module("spacy.util")
        # Presidio would download a missing spaCy model; benchmarks never touch the network.
        if not spacy_util.is_package("en_core_web_lg"):
            return None, "Presidio not measured: spaCy model en_core_web_lg is not installed"
        return _PresidioDetector(presidio.AnalyzerEngine()), None
    except Exception as exc:  # any failure to build it is reported, not fatal
        return None, f"Presidio not measured: {exc}"


# ---------------------------------------------------------------- the run


class RedactConfig(BaseModel):
    """One redaction benchmark run."""

    seed: int = 0
    entities: int = Field(default=10_000, ge=1)
    rounds: int = Field(default=3, ge=1)
    presidio: bool = True
    records: int = Field(default=300, ge=0)  # per kind and locale for bare names; 0 skips

    @classmethod
    def quick(cls, **overrides: object) -> RedactConfig:
        """A small corpus, for tests and smoke runs."""
        values: dict[str, object] = {"entities": 1_000, "rounds": 1, "records": 20}
        values.update(overrides)
        return cls.model_validate(values)


class Target(BaseModel):
    """One target: the figure, the bound, the verdict."""

    name: str
    figure: float | None
    bound: float
    unit: str
    passed: bool | None


class RedactReport(BaseModel):
    """Everything one ``bench redact`` run measured."""

    started_at: datetime
    machine: Machine
    config: RedactConfig
    texts: int
    entities: int
    negatives: int
    utf8_bytes: int
    scores: list[Score]
    targets: list[Target]
    records: RecordsScore | None = None
    notes: list[str] = []


def judge(score: Score) -> list[Target]:
    """The redaction targets, judged on ``score``."""
    s = score.structured
    mb_s = score.throughput_mb_s

    def target(name: str, figure: float | None, bound: float, unit: str) -> Target:
        return Target(
            name=name,
            figure=figure,
            bound=bound,
            unit=unit,
            passed=None if figure is None else figure >= bound,
        )

    return [
        target("structured recall >= 99.5%", s.recall, RECALL_TARGET, "%"),
        target("structured precision >= 98%", s.precision, PRECISION_TARGET, "%"),
        target("throughput >= 10 MB/s", mb_s, THROUGHPUT_TARGET_MB_S, "MB/s"),
    ]


def run_redact_benchmark(
    config: RedactConfig,
    *,
    subject: tuple[str, Detector, TextRedactor] | None = None,
    progress: Progress | None = None,
) -> RedactReport:
    """Generate the corpus, score the subject (agentctx's redactor by default) and Presidio.

    Without a ``subject`` and without agentctx's redactor, the regex baseline is measured
    and the report says so.
    """
    say = progress or (lambda _message: None)
    started = datetime.now(UTC)
    machine = machine_facts(Path.cwd())
    notes: list[str] = []
    say(f"generating the corpus (seed {config.seed}, {config.entities:,} entities)")
    corpus: Corpus = generate_corpus(config.seed, config.entities)
    if subject is None:
        redactor, why = load_agentctx_redactor()
        if redactor is not None:
            subject = ("agentctx PIIRedactor", redactor, redactor)
        else:
            baseline = RegexBaseline()
            subject = ("regex baseline", baseline, baseline)
            notes.append(f"{why}; the regex baseline was measured instead")
    name, detector, text_redactor = subject
    say(f"scoring {name} on {len(corpus.texts):,} texts")
    score = evaluate(name, detector, corpus.texts)
    say(f"timing redact_text, best of {config.rounds}")
    seconds = measure_throughput(text_redactor, [t.text for t in corpus.texts], config.rounds)
    score.redact_seconds = seconds
    score.throughput_mb_s = corpus.utf8_bytes / 1e6 / seconds if seconds > 0 else None
    scores = [score]
    if config.presidio:
        presidio, why = load_presidio()
        if presidio is None:
            notes.append(why or "Presidio not measured")
        else:
            say("scoring Presidio on the English texts")
            english = [t for t in corpus.texts if t.lang == "en"]
            scores.append(evaluate("Presidio", presidio, english, scope="en"))
            scores.append(evaluate(name, detector, english, scope="en"))
    records = None
    if config.records and isinstance(text_redactor, Redactor):
        say(f"bare names in records: {config.records} of each kind per locale")
        records = score_records(text_redactor, config.records)
    machine.load_average_end = load_average()
    return RedactReport(
        started_at=started,
        machine=machine,
        config=config,
        texts=len(corpus.texts),
        entities=corpus.entity_count,
        negatives=corpus.negative_count,
        utf8_bytes=corpus.utf8_bytes,
        scores=scores,
        targets=judge(score),
        records=records,
        notes=notes,
    )


# ---------------------------------------------------------------- rendering
