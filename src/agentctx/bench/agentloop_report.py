"""Rendering an ``AgentLoopReport``: Rich tables for the terminal, Markdown for the docs."""

from __future__ import annotations

from rich.console import Console

from agentctx.bench.agentloop import DEFAULT, NAIVE, AgentLoopReport, Cell
from agentctx.bench.agentloop_ceiling import CeilingRule
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
    if report.ceilings:
        specs.append(_ceilings(report))
    return specs


RULES = {
    CeilingRule.SHARE_KEPT: "the recent history at its share on every call",
    CeilingRule.LOW_WATER: "the history below its share after a slide, nothing before it",
    CeilingRule.COMPACTED_PAST: (
        "the default layout: the prompt in its room, a compacted past after a slide"
    ),
}


def _ceilings(report: AgentLoopReport) -> TableSpec:
    naive = {c.budget: c.prefix_reuse for c in report.cells if c.system == NAIVE}
    ours = {c.budget: c.prefix_reuse for c in report.cells if c.system == DEFAULT}
    return TableSpec(
        "Prefix reuse an oracle reaches, by the rule it follows",
        ["budget", "rule", "oracle's reuse", "default", "naive window"],
        [
            [
                f"{ceiling.budget:,}",
                RULES[ceiling.rule],
                _share(ceiling.reuse),
                _share(ours.get(ceiling.budget)),
                _share(naive.get(ceiling.budget)),
            ]
            for ceiling in report.ceilings
        ],
        notes=[
            "the best average reuse over every choice of where each window's history starts "
            "and where the prompt is cut, knowing the whole conversation; on the messages as "
            "given, scored as the naive window is (bench.agentloop_ceiling)",
            "the default's windows are the engine's rendering of the events (redacted, "
            "framed): where every window fits it can sit a little above the oracle's figure",
        ],
    )


def print_agentloop_report(report: AgentLoopReport, console: Console) -> None:
    """Print the machine facts and the tables."""
    print_tables(report.machine.fact_lines(), agentloop_tables(report), console)


def agentloop_markdown(report: AgentLoopReport) -> str:
    """The tables as Markdown (for docs/benchmarks.md)."""
    return "\n".join(tables_markdown(agentloop_tables(report)))
