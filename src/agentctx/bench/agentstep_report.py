"""Rendering an ``AgentStepReport``: Rich tables for the terminal, Markdown for the docs."""

from __future__ import annotations

from rich.console import Console

from agentctx.bench.agentstep import PEERS, WINDOW_KINDS, AgentStepReport, SubjectResult
from agentctx.bench.report import TableSpec, print_tables, tables_markdown
from agentctx.bench.stats import Latency


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    return f"{value:.2f}" if value < 10 else f"{value:,.0f}"


def _latency(latency: Latency | None) -> str:
    if latency is None:
        return "-"
    return f"{_ms(latency.p50_ms)} / {_ms(latency.p95_ms)} / {_ms(latency.max_ms)}"


def _row(result: SubjectResult) -> list[str]:
    if not result.measured:
        return [result.label, "not measured", *["-"] * 8]
    return [
        result.label,
        str(result.calls),
        _latency(result.window),
        _latency(result.step),
        _latency(result.append),
        _latency(result.turn_end),
        f"{_ms(result.first_call_ms)} / {_ms(result.first_step_ms)}",
        _ms(result.start_ms),
        f"{result.tokens_mean:,.0f} / {result.tokens_max:,}",
        str(result.over_budget),
    ]


def _kind(by_kind: dict[str, Latency], kind: str) -> str:
    return _latency(by_kind[kind]) if kind in by_kind else "-"


def agentstep_tables(report: AgentStepReport) -> list[TableSpec]:
    """Subjects side by side, the load and readiness facts, ratios, targets."""
    session = report.session
    tools = ", ".join(f"{name} {count}" for name, count in session.tool_calls.items())
    main = TableSpec(
        f"Agent step, {session.turns} turns, {session.model_calls} model calls, "
        f"budget {report.config.budget:,} tokens (p50 / p95 / max ms)",
        [
            "subject",
            "calls",
            "window",
            "whole step",
            "one append",
            "turn end",
            "first call / step ms",
            "start ms",
            "tokens mean / max",
            "over budget",
        ],
        [_row(result) for result in report.subjects],
        notes=[
            f"tool calls: {tools}; {session.screenshots} screenshots (1280x800 PNG); text and "
            f"JSON results p50 {session.output_bytes_p50:,} B, max {session.output_bytes_max:,} "
            f"B, {session.output_bytes_total / 1e6:.1f} MB in all; session fingerprint "
            f"{session.fingerprint} (made of the installed packages' files: runs "
            "compare on the same fingerprint only)",
            f"peers trim with {report.trim_counter}",
            *report.notes,
        ],
    )
    for result in report.subjects:
        if not result.measured:
            main.notes.append(f"{result.label}: {result.note}")
    ours = [r for r in report.subjects if r.measured and r.key not in PEERS]
    engine = TableSpec(
        "agentctx: model readiness and what the windows report",
        ["subject", "facts", "model ready ms", "loading calls ms", "dense ranking (windows)"],
    )
    for result in ours:
        engine.rows.append(
            [
                result.label,
                ", ".join(f"{k}: {v}" for k, v in result.facts.items()),
                _ms(result.model_ready_ms),
                ", ".join(_ms(ms) for ms in result.loading_calls_ms) or "none",
                "; ".join(f"{answer}: {count}" for answer, count in result.dense.items()),
            ]
        )
    kinds = TableSpec(
        "The window and the whole step by what they follow (p50 / p95 / max ms)",
        ["subject", *(f"window {k}" for k in WINDOW_KINDS), *(f"step {k}" for k in WINDOW_KINDS)],
        [
            [
                r.label,
                *(_kind(r.window_by_kind, k) for k in WINDOW_KINDS),
                *(_kind(r.step_by_kind, k) for k in WINDOW_KINDS),
            ]
            for r in report.subjects
            if r.measured and r.window_by_kind
        ],
        notes=["a turn's first window follows the user's message, and its query is new"],
    )
    timings = TableSpec(
        "agentctx: the window's own timings (p50 / p95 / max ms)",
        ["subject", "timing", "p50 / p95 / max"],
    )
    for result in ours:
        for name, latency in result.timings.items():
            timings.rows.append([result.label, name, _latency(latency)])
    ratios = TableSpec("agentctx over the peers, same run", ["subject", "peer", "metric", "ratio"])
    labels = {r.key: r.label for r in report.subjects}
    for ratio in report.ratios:
        ratios.rows.append(
            [labels[ratio.subject], labels[ratio.peer], ratio.metric, f"{ratio.ratio:,.1f}x"]
        )
    targets = TableSpec("Targets", ["subject", "target", "figure ms", "verdict"])
    for target in report.targets:
        verdict = "n/a" if target.passed is None else ("PASS" if target.passed else "FAIL")
        targets.rows.append(
            [
                labels[target.subject],
                target.name,
                _ms(target.figure) if target.figure is not None else target.note,
                verdict,
            ]
        )
    return [spec for spec in (main, kinds, engine, timings, ratios, targets) if spec.rows]


def print_agentstep_report(report: AgentStepReport, console: Console) -> None:
    """Print the machine facts and the tables."""
    print_tables(report.machine.fact_lines(), agentstep_tables(report), console)


def agentstep_markdown(report: AgentStepReport) -> str:
    """The tables as Markdown (for docs/benchmarks.md)."""
    return "\n".join(tables_markdown(agentstep_tables(report)))
