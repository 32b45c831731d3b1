"""Rendering of ``agentctx bench compaction`` results: Rich tables and Markdown."""

from __future__ import annotations

from rich.console import Console

from agentctx.bench.compaction import CompactionReport, TurnPoint, Verdict
from agentctx.bench.report import TableSpec, print_tables, tables_markdown
from agentctx.bench.stats import Latency


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _p50_p95(latency: Latency | None) -> str:
    return "-" if latency is None else f"{_ms(latency.p50_ms)} / {_ms(latency.p95_ms)}"


def _verdict(verdict: Verdict) -> str:
    if verdict.passed is None:
        return verdict.detail
    return f"{'PASS' if verdict.passed else 'FAIL'} ({verdict.detail})"


def curve_points(report: CompactionReport) -> list[TurnPoint]:
    """The turns shown in the curve table: every ``curve_every``-th, the first and the last."""
    every = report.config.curve_every
    last = len(report.curve)
    return [p for p in report.curve if p.turn == 1 or p.turn % every == 0 or p.turn == last]


def compaction_tables(report: CompactionReport) -> list[TableSpec]:
    """Token curve, latency, recall off vs on, targets."""
    budget = report.config.budget
    curve = TableSpec(
        f"Tokens per model call, budget {budget:,} ({report.config.mode} summarizer)",
        [
            "turn",
            "tool calls so far",
            "without compaction",
            "with compaction",
            "with / without",
            "build_context ms (with)",
        ],
    )
    calls = 0
    shown = {p.turn for p in curve_points(report)}
    for point in report.curve:
        calls += point.tool_calls
        if point.turn not in shown:
            continue
        curve.rows.append(
            [
                f"{point.turn}",
                f"{calls}",
                f"{point.tokens_off:,}",
                f"{point.tokens_on:,}",
                f"{point.tokens_on / point.tokens_off:.3f}" if point.tokens_off else "-",
                _ms(point.build_on_ms),
            ]
        )
    curve.notes.append(
        f"max with compaction: {report.max_tokens_on:,} tokens "
        f"({'within' if report.under_budget else 'OVER'} the budget of {budget:,}); "
        f"max without: {report.max_tokens_off:,}"
        + (
            f", over the budget from turn {report.first_turn_over_budget_off}."
            if report.first_turn_over_budget_off is not None
            else "."
        )
    )
    curve.notes.append(
        "without compaction: the whole history as chat messages (the engine's renderer, "
        "tool results whole, framing counted); with: build_context at the budget."
    )

    latency = TableSpec("Latency per turn (ms)", ["what", "turns", "p50", "p95", "p99", "max"])
    rows: list[tuple[str, Latency | None]] = [
        ("turn-end compaction (run_pending, less indexing)", report.compaction),
        *((f"… of which {kind} jobs", value) for kind, value in report.compaction_by_kind.items()),
        ("… of which the job queue and other jobs", report.compaction_other),
        ("turn-end compaction, turns that wrote a thread summary", report.compaction_summarizing),
        ("build_context with compaction", report.build_on),
        ("search index turn-end job (not compaction)", report.indexing),
    ]
    if report.llm_ms is not None:
        rows.append(("model server, per request", report.llm_ms))
    for name, value in rows:
        if value is None:
            latency.rows.append([name, "0", "-", "-", "-", "-"])
            continue
        latency.rows.append(
            [
                name,
                f"{value.count}",
                _ms(value.p50_ms),
                _ms(value.p95_ms),
                _ms(value.p99_ms),
                _ms(value.max_ms),
            ]
        )
    latency.notes.append(
        f"{report.summaries} thread summary versions written ({', '.join(report.summary_methods)})"
        if report.summaries
        else "no thread summary was written"
    )
    if report.llm_requests is not None:
        latency.notes.append(
            f"model server: {report.llm_requests} requests, {report.llm_failures} failed; "
            + ", ".join(f"{name}: {n}" for name, n in sorted(report.llm_by_schema.items()))
        )

    tables = [curve, latency]
    if report.recall:
        recall = TableSpec(
            f"Evidence recall, compaction off vs on ({report.recall_questions} questions)",
            [
                "budget",
                "off",
                "on",
                "on - off",
                "tokens off / on",
                "build_context ms p50 / p95, off",
                "on",
            ],
        )
        for row in report.recall:
            recall.rows.append(
                [
                    f"{row.budget:,}",
                    f"{row.off:.3f}",
                    f"{row.on:.3f}",
                    f"{row.difference:+.3f}",
                    f"{row.tokens_off:,.0f} / {row.tokens_on:,.0f}",
                    _p50_p95(row.latency_off),
                    _p50_p95(row.latency_on),
                ]
            )
        recall.notes.append(
            "agentctx alone, the recall benchmark's ingestion and scoring; turn-end "
            "work queued by the ingestion is run before the questions."
        )
        tables.append(recall)

    targets = TableSpec("Targets", ["target", "verdict"])
    targets.rows.extend([v.name, _verdict(v)] for v in report.verdicts)
    return [*tables, targets]


def summary_lines(report: CompactionReport) -> list[str]:
    """The session, settings and machine, one fact per line."""
    m = report.machine
    c = report.config
    lines = [
        f"session: {len(report.curve)} turns from {report.conversation} (seed {c.seed}), "
        f"{report.tool_calls} tool calls with {report.tool_output_tokens:,} tokens of output",
        "compaction on: "
        + ", ".join(f"{k}={v}" for k, v in report.settings_on.items())
        + f"; tokenizer {report.token_counter}; embeddings {report.embedder}",
        *m.fact_lines(),
    ]
    return lines + list(report.notes)


def print_compaction_report(report: CompactionReport, console: Console) -> None:
    """Print the summary and one Rich table per measurement."""
    print_tables(summary_lines(report), compaction_tables(report), console)


def compaction_markdown(report: CompactionReport) -> str:
    """The tables as Markdown (for docs/benchmarks.md)."""
    return "\n".join(
        [f"- {line}" for line in summary_lines(report)]
        + ["", *tables_markdown(compaction_tables(report))]
    )
