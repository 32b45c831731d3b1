"""Rendering of ``agentctx bench redact`` results: Rich tables and Markdown."""

from __future__ import annotations

from rich.console import Console

from agentctx.bench.redact import (
    PRECISION_TARGET,
    RECALL_TARGET,
    STRUCTURED_TYPES,
    RedactReport,
    TypeScore,
)
from agentctx.bench.report import TableSpec, print_tables, tables_markdown


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value * 100:.2f}%"


def _verdict(passed: bool | None, figure: str, bound: str) -> str:
    if passed is None:
        return "n/a"
    return f"{'PASS' if passed else 'FAIL'} ({figure} >= {bound})"


def _row(r: TypeScore, structured: bool) -> list[str]:
    verdict = ""
    if structured and r.planted:
        ok = (r.recall or 0) >= RECALL_TARGET and (r.precision or 0) >= PRECISION_TARGET
        verdict = "PASS" if ok else "FAIL"
    return [
        r.entity_type,
        f"{r.planted:,}",
        f"{r.findings:,}",
        _pct(r.precision),
        _pct(r.recall),
        _pct(r.f1),
        verdict,
    ]


def redact_tables(report: RedactReport) -> list[TableSpec]:
    """The tables of a run: per-type quality per system, hard negatives, targets."""
    columns = ["type", "planted", "findings", "precision", "recall", "F1", "target"]
    tables = []
    for score in report.scores:
        spec = TableSpec(f"Detection quality: {score.system} ({score.scope})", columns)
        spec.rows += [_row(r, r.entity_type in STRUCTURED_TYPES) for r in score.per_type]
        spec.rows.append(_row(score.structured, True))
        spec.rows += [_row(r, False) for r in [*score.by_language, score.overall]]
        spec.notes.append(
            f"{score.texts:,} texts, {score.utf8_bytes:,} UTF-8 bytes; "
            f"{score.type_confusions} findings overlapped an entity of another type."
        )
        if score.unscored_findings:
            spec.notes.append(
                "not scored (types the corpus does not plant): "
                + ", ".join(f"{k} {v:,}" for k, v in sorted(score.unscored_findings.items()))
            )
        tables.append(spec)
        negatives = TableSpec(
            f"Hard negatives: {score.system} ({score.scope})", ["kind", "count", "flagged"]
        )
        negatives.rows += [[n.kind, f"{n.count:,}", f"{n.flagged:,}"] for n in score.negatives]
        negatives.rows.append(
            [
                "all",
                f"{sum(n.count for n in score.negatives):,}",
                f"{sum(n.flagged for n in score.negatives):,}",
            ]
        )
        tables.append(negatives)
    subject = report.scores[0]
    speed = TableSpec("Throughput (redact_text, one thread)", ["system", "MB/s", "seconds"])
    speed.rows.append(
        [
            subject.system,
            "-" if subject.throughput_mb_s is None else f"{subject.throughput_mb_s:.2f}",
            "-" if subject.redact_seconds is None else f"{subject.redact_seconds:.3f}",
        ]
    )
    speed.notes.append(
        f"{report.utf8_bytes:,} bytes over {report.texts:,} texts, "
        f"best of {report.config.rounds} passes."
    )
    targets = TableSpec("Targets", ["target", "system", "verdict"])
    for t in report.targets:
        if t.unit == "%":
            shown, bound = _pct(t.figure), _pct(t.bound)
        else:
            shown = "-" if t.figure is None else f"{t.figure:.2f} MB/s"
            bound = f"{t.bound:g} MB/s"
        targets.rows.append([t.name, subject.system, _verdict(t.passed, shown, bound)])
    return [*tables, speed, targets, *_records_tables(report)]


def _records_tables(report: RedactReport) -> list[TableSpec]:
    """Bare names in records: each group's totals, then every locale."""
    records = report.records
    if records is None:
        return []
    groups = TableSpec(
        f"Bare names in records (Faker, seed {records.seed})",
        [
            "locales",
            "count",
            "records of each kind",
            "persons found (JSON / CSV)",
            "companies redacted (JSON / CSV)",
        ],
    )
    for g in records.groups:
        share = g.records or 1
        groups.rows.append(
            [
                g.group,
                str(g.locales),
                f"{g.records:,}",
                f"{_pct(g.person_recall)} / {_pct(g.persons_found_table / share)}",
                f"{_pct(g.company_loss)} / {_pct(g.companies_redacted_table / share)}",
            ]
        )
    groups.notes.append(
        "JSON: each record as JSON text; CSV: all of a kind as one table. The locales held "
        "out were not looked at before their figures were first taken. Person records hold "
        "name, mail, address and job; company records name, email and phone."
    )
    per_locale = TableSpec(
        "Bare names in records, per locale",
        [
            "locale",
            "group",
            "persons found (text / JSON value / CSV)",
            "companies redacted (text / JSON value / CSV)",
        ],
    )
    per_locale.rows += [
        [
            r.locale,
            r.group,
            f"{r.persons_found_text} / {r.persons_found_json} / {r.persons_found_table}"
            f" of {r.records}",
            f"{r.companies_redacted_text} / {r.companies_redacted_json} / "
            f"{r.companies_redacted_table} of {r.records}",
        ]
        for r in records.per_locale
    ]
    return [groups, per_locale]


def summary_lines(report: RedactReport) -> list[str]:
    """The corpus, machine and notes, one fact per line."""
    m = report.machine
    return [
        f"corpus: seed {report.config.seed}, {report.texts:,} texts, {report.entities:,} planted "
        f"entities, {report.negatives:,} hard negatives, {report.utf8_bytes:,} UTF-8 bytes",
        f"CPU: {m.cpu_model}, {m.nproc} cores; Python {m.python}; agentctx {m.agentctx}"
        + (f" (git {m.revision})" if m.revision else ""),
        f"load average at start: {m.load_average_start}, at end: {m.load_average_end}",
        *report.notes,
    ]


def print_redact_report(report: RedactReport, console: Console) -> None:
    """Print the summary and one Rich table per measurement."""
    print_tables(summary_lines(report), redact_tables(report), console)


def redact_markdown(report: RedactReport) -> str:
    """The tables as Markdown (for docs/benchmarks.md)."""
    return "\n".join(
        [f"- {line}" for line in summary_lines(report)]
        + ["", *tables_markdown(redact_tables(report))]
    )
