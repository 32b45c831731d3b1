"""Rendering of ``agentctx bench recall`` results: Rich tables and Markdown."""

from __future__ import annotations

from collections.abc import Sequence

from rich.console import Console

from agentctx.bench.recall import RecallReport
from agentctx.bench.recall_data import CATEGORY_NAMES
from agentctx.bench.recall_score import (
    AGENTCTX,
    SYSTEM_NAMES,
    Cell,
    RecallTarget,
)
from agentctx.bench.report import TableSpec, print_tables, tables_markdown


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _grid(cells: Sequence[Cell]) -> dict[tuple[str, int], Cell]:
    return {(c.system, c.budget): c for c in cells}


def _recall_rows(
    cells: Sequence[Cell], systems: Sequence[str], budgets: Sequence[int]
) -> list[list[str]]:
    grid = _grid(cells)
    rows = []
    for budget in budgets:
        row = [f"{budget:,}"]
        row += [f"{grid[s, budget].recall:.3f}" if (s, budget) in grid else "-" for s in systems]
        rows.append(row)
    return rows


def _category_name(category: int) -> str:
    name = CATEGORY_NAMES.get(category)
    return f"{category} {name}" if name else str(category)


def _verdict(target: RecallTarget) -> str:
    if target.passed is None:
        return f"n/a ({target.note})" if target.note else "n/a"
    if target.unit == "ms":
        shown, bound = f"{_ms(target.figure or 0.0)} ms", f"{target.bound:g} ms"
    else:
        shown, bound = f"{target.figure or 0.0:.3f}", f"{target.bound or 0.0:.3f}"
    return f"{'PASS' if target.passed else 'FAIL'} ({shown} {target.direction} {bound})"


def recall_tables(report: RecallReport) -> list[TableSpec]:
    """The tables of a run: recall, tokens, latency, by category, by file, setup, targets."""
    systems, budgets = report.config.systems, report.config.budgets
    names = [SYSTEM_NAMES[s] for s in systems]
    grid = _grid(report.pooled)
    asked = sum(f.questions for f in report.files)
    conversations = sum(f.conversations for f in report.files)

    bounds = {t.budget: t.bound for t in report.targets if t.unit == "recall"}
    recall = TableSpec(
        f"Evidence recall ({asked:,} questions, {conversations} conversations)",
        ["budget", *names, "agentctx needs"],
    )
    for row, budget in zip(_recall_rows(report.pooled, systems, budgets), budgets, strict=True):
        bound = bounds.get(budget)
        row.append(f">= {bound:.3f}" if bound is not None else "-")
        recall.rows.append(row)
    recall.notes.append(
        "mean over questions of found evidence turns / evidence turns; a turn is found when "
        "its text occurs in the window's messages."
    )

    tokens = TableSpec("Tokens used (mean per window)", ["budget", *names])
    for budget in budgets:
        tokens.rows.append(
            [f"{budget:,}"]
            + [
                f"{grid[s, budget].tokens_mean:,.0f}" if (s, budget) in grid else "-"
                for s in systems
            ]
        )
    tokens.notes.append(f"baselines counted with: {report.token_counter}, +4 per message.")

    latency = TableSpec("Time per window (ms, p50 / p95)", ["budget", *names])
    for budget in budgets:
        latency.rows.append(
            [f"{budget:,}"]
            + [
                f"{_ms(grid[s, budget].latency.p50_ms)} / {_ms(grid[s, budget].latency.p95_ms)}"
                if (s, budget) in grid
                else "-"
                for s in systems
            ]
        )
    if AGENTCTX in systems:
        latency.notes.append("agentctx: session.build_context, timed per call.")
    if len(systems) > 1 or AGENTCTX not in systems:
        latency.notes.append(
            "baselines: ranking the turns for the question (hybrid: query embedding included) "
            "plus filling the budget; turn embeddings are made once per conversation."
        )

    category = TableSpec(
        "Evidence recall by question category", ["category", "questions", "budget", *names]
    )
    for cat, cells in report.by_category.items():
        count = max((c.questions for c in cells), default=0)
        for row in _recall_rows(cells, systems, budgets):
            category.rows.append([_category_name(cat), f"{count:,}", *row])

    tables = [recall, tokens, latency, category]
    if report.by_file:
        per_file = TableSpec("Evidence recall by file", ["file", "questions", "budget", *names])
        for file, cells in report.by_file.items():
            count = max((c.questions for c in cells), default=0)
            for row in _recall_rows(cells, systems, budgets):
                per_file.rows.append([file, f"{count:,}", *row])
        tables.append(per_file)

    setup = TableSpec(
        "Setup per conversation (s)",
        [
            "file",
            "conversation",
            "turns",
            "questions",
            "agentctx ingestion",
            "first build_context",
            "turn embeddings",
            "BM25 index",
        ],
    )
    for r in report.ingestion:
        setup.rows.append(
            [
                r.file,
                "-" if r.conversation == r.file.removesuffix(".json") else r.conversation,
                f"{r.turns:,}",
                f"{r.questions:,}",
                "-" if r.agentctx_s is None else f"{r.agentctx_s:.2f}",
                "-" if r.first_build_s is None else f"{r.first_build_s:.2f}",
                "-" if r.embed_s is None else f"{r.embed_s:.2f}",
                "-" if r.bm25_s is None else f"{r.bm25_s:.3f}",
            ]
        )
    setup.notes.append(
        "agentctx ingestion: one append per turn, then indexing (terms and embeddings); "
        "first build_context: the unmeasured warm-up call. Neither is in build_context's "
        "time per window."
    )
    if report.embedder:
        setup.notes.append(f"turn embeddings: {report.embedder} on the CPU.")

    targets = TableSpec("Targets", ["target", "budget", "verdict"])
    for t in report.targets:
        targets.rows.append([t.name, f"{t.budget:,}", _verdict(t)])
    return [*tables, setup, targets]


def summary_lines(report: RecallReport) -> list[str]:
    """The data, machine and notes, one fact per line."""
    m = report.machine
    lines = []
    for f in report.files:
        lines.append(
            f"data: {f.file} ({f.layout}): {f.conversations} conversation(s), {f.turns:,} turns, "
            f"{f.questions:,} questions asked of {f.questions_in_file:,}; skipped "
            f"{f.skipped_adversarial} adversarial and {f.skipped_no_evidence} without valid "
            f"evidence; {f.dropped_evidence_ids} evidence ids named no turn"
        )
    return lines + m.fact_lines() + list(report.notes)


def print_recall_report(report: RecallReport, console: Console) -> None:
    """Print the summary and one Rich table per measurement."""
    print_tables(summary_lines(report), recall_tables(report), console)


def recall_markdown(report: RecallReport) -> str:
    """The tables as Markdown (for docs/benchmarks.md)."""
    return "\n".join(
        [f"- {line}" for line in summary_lines(report)]
        + ["", *tables_markdown(recall_tables(report))]
    )
