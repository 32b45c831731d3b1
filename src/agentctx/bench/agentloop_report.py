"""Rendering an ``AgentLoopReport``: Rich tables for the terminal, Markdown for the docs."""

from __future__ import annotations

from rich.console import Console

from agentctx.bench.agentloop import AgentLoopReport, Cell
from agentctx.bench.report import TableSpec, print_tables, tables_markdown


def _share(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def _ms(cell: Cell) -> str:
    if cell.latency is None:
        return "-"
    return f"{cell.latency.p50_ms:.1f} / {cell.latency.p95_ms:.1f} / {cell.latency.max_ms:.1f}"


def _row(cell: Cell) -> list[str]:
    return [
        cell.system,
        f"{cell.budget:,}",
        _share(cell.argument_recall),
        _share(cell.recent_fidelity),
        _share(cell.prefix_reuse),
        _share(cell.reuse_limit),
        _share(cell.reuse_gap),
        str(cell.over_budget),
        f"{cell.mean_tokens:,.0f}",
        _ms(cell),
    ]


COLUMNS = [
    "system",
    "budget",
    "argument recall",
    "recent fidelity",
    "prefix reuse",
    "reuse limit",
    "gap",
    "over budget",
    "mean tokens",
    "p50 / p95 / max ms",
]


def agentloop_tables(report: AgentLoopReport) -> list[TableSpec]:
    """Every system at every budget; the default and the naive window per half; targets."""
    group = report.config.group
    main = TableSpec(
        f"Agent loop, {group} conversation(s) per session "
        f"({report.conversations} conversations, {report.model_calls} model calls)",
        list(COLUMNS),
        [_row(cell) for cell in report.cells],
        notes=list(report.notes),
    )
    if report.index_sync is not None:
        main.notes.append(
            f"index sync and query embedding before each call (apart from build_context): p50 "
            f"{report.index_sync.p50_ms:.1f} ms, p95 {report.index_sync.p95_ms:.1f} ms"
        )
    halves = TableSpec(
        "By half of the data (even / odd task ids)",
        ["half", *COLUMNS],
        [[cell.half, *_row(cell)] for cell in report.halves],
    )
    targets = TableSpec(
        "Targets (default strategy)",
        ["budget", "target", "figure", "bound", "verdict"],
    )
    for target in report.targets:
        verdict = "n/a" if target.passed is None else ("PASS" if target.passed else "FAIL")
        targets.rows.append(
            [
                f"{target.budget:,}",
                target.name,
                _share(target.figure),
                f"{target.direction} {_share(target.bound)}",
                verdict,
            ]
        )
    specs = [main, halves]
    if targets.rows:
        specs.append(targets)
    return specs


def print_agentloop_report(report: AgentLoopReport, console: Console) -> None:
    """Print the machine facts and the tables."""
    print_tables(report.machine.fact_lines(), agentloop_tables(report), console)


def agentloop_markdown(report: AgentLoopReport) -> str:
    """The tables as Markdown (for docs/benchmarks.md)."""
    return "\n".join(tables_markdown(agentloop_tables(report)))
