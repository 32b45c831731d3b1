"""Rendering of ``agentctx bench memory`` results: Rich tables and Markdown."""

from __future__ import annotations

from rich.console import Console

from agentctx.bench.memory_models import (
    LATENCY_P95_TARGET_MS,
    TOKEN_BUDGET,
    TOP_K,
    ChatRecall,
    ExtractionRun,
    MemoryBenchReport,
    RecallFigures,
    Spread,
    Verdict,
)
from agentctx.bench.report import TableSpec, print_tables, tables_markdown


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _share(hits: int, total: int) -> str:
    return f"{hits / total:.1%} ({hits}/{total})" if total else "-"


def _spread(spread: Spread | None) -> tuple[str, str]:
    return ("-", "-") if spread is None else (_ms(spread.p50), _ms(spread.p95))


def _verdict(verdict: Verdict) -> str:
    if verdict.passed is None:
        return verdict.detail
    return f"{'PASS' if verdict.passed else 'FAIL'} ({verdict.detail})"


def _recall_row(name: str, figures: RecallFigures) -> list[str]:
    return [
        name,
        _share(figures.hits_at_k, figures.questions),
        _share(figures.hits_in_budget, figures.questions),
        f"{figures.mean_tokens_at_k:,.0f}",
        _share(figures.user_hits_at_k, figures.user_questions),
    ]


def _runs(chat: ChatRecall) -> list[ExtractionRun]:
    return [chat.offline] + ([chat.with_llm] if chat.with_llm is not None else [])


def chat_tables(chat: ChatRecall) -> list[TableSpec]:
    """Recall (memories vs raw turns), memories by kind, extraction cost."""
    recall = TableSpec(
        f"Recall on {chat.file}: memories vs raw turns",
        [
            "retrieval",
            f"recall@{TOP_K}",
            f"recall within {TOKEN_BUDGET} tokens",
            f"mean tokens of the top {TOP_K}",
            f"recall@{TOP_K}, questions citing a user turn",
        ],
    )
    for run in _runs(chat):
        recall.rows.append(_recall_row(f"memories, {run.method}", run.recall))
    recall.rows.append(_recall_row("raw turns (event search)", chat.raw_turns))
    recall.notes.extend(
        [
            f"a hit: a retrieved memory's provenance (or a retrieved turn) is an evidence "
            f"turn of the question; {chat.questions} questions with evidence "
            f"({chat.questions_in_file} in the file)",
            f"memories: engine.memory.search(user, question, limit={TOP_K}); raw turns: "
            f"SearchIndex.search per session, the best {TOP_K} across the "
            f"{chat.sessions} sessions by fused score; embedder {chat.embedder}",
            f"within {TOKEN_BUDGET} tokens: results taken in rank order while their "
            "contents' estimated tokens add up to at most the budget",
        ]
    )

    kinds = sorted({kind for run in _runs(chat) for kind in run.by_kind})
    memories = TableSpec("Memories extracted", ["extraction", "memories", *kinds])
    for run in _runs(chat):
        memories.rows.append(
            [run.method, f"{run.memories}", *(f"{run.by_kind.get(kind, 0)}" for kind in kinds)]
        )
    memories.notes.append(
        f"{chat.turns:,} turns ({chat.user_turns:,} by the user) in {chat.sessions} sessions "
        f"of {chat.conversations} conversation(s), one user per conversation"
    )

    cost = TableSpec(
        "Extraction cost per turn",
        [
            "extraction",
            "p50 ms/turn",
            "p95 ms/turn",
            "whole run s",
            "model calls/turn",
            "model tokens/turn",
            "fallbacks to rules",
        ],
    )
    for run in _runs(chat):
        p50, p95 = _spread(run.ms_per_turn)
        usage = run.llm
        cost.rows.append(
            [
                run.method,
                p50,
                p95,
                f"{run.extract_s:.2f}",
                "0" if usage is None else f"{usage.calls_per_turn:.3f}",
                "0" if usage is None else f"{usage.tokens_per_turn:,.1f}",
                "-" if usage is None else f"{usage.fallbacks}/{usage.calls}",
            ]
        )
    cost.notes.append(
        "timed around engine.memory.extract_session (extraction, consolidation, indexing), "
        "divided by the session's turns; one sample per session"
    )
    if chat.with_llm is None:
        cost.notes.append("with a chat model: not measured (no --llm-url given)")
    elif chat.with_llm.llm is not None:
        usage = chat.with_llm.llm
        cost.notes.append(
            f"chat model {usage.model} at {usage.base_url}: {usage.calls} calls "
            f"({usage.attempts} attempts), {usage.prompt_tokens:,} prompt + "
            f"{usage.completion_tokens:,} completion tokens"
        )
    return [recall, memories, cost]


def latency_table(report: MemoryBenchReport) -> TableSpec:
    """Search latency per backend and size."""
    table = TableSpec(
        "Memory search latency (one user, limit 10)",
        ["backend", "memories", "p50 ms", "p95 ms", "fill s", "dense"],
    )
    for row in report.latency:
        table.rows.append(
            [
                row.backend,
                f"{row.size:,}",
                _ms(row.p50_ms),
                _ms(row.p95_ms),
                f"{row.fill_s:.1f}",
                "yes" if row.dense else "no",
            ]
        )
    if report.latency:
        table.notes.append(
            f"{report.latency_queries} searches of 2-4 words per size after 5 warm-up "
            f"searches; synthetic memories, embedder {report.latency_embedder}"
        )
    else:
        table.notes.append("not measured in this run")
    return table


def memory_tables(report: MemoryBenchReport) -> list[TableSpec]:
    """Every table of a run: recall, memories, cost, latency, targets."""
    specs = chat_tables(report.chat) if report.chat is not None else []
    specs.append(latency_table(report))
    targets = TableSpec("Targets", ["target", "verdict"])
    targets.rows.extend([v.name, _verdict(v)] for v in report.verdicts)
    targets.notes.append(
        f"p95 of memory search at most {LATENCY_P95_TARGET_MS:g} ms; a size not measured "
        "is reported as such"
    )
    specs.append(targets)
    return specs


def summary_lines(report: MemoryBenchReport) -> list[str]:
    """The command, the data and the machine, one fact per line."""
    lines = [f"command: {report.config.command}"]
    if report.chat is not None:
        chat = report.chat
        lines.append(
            f"data: {chat.file} ({chat.layout}): {chat.turns:,} turns, {chat.sessions} "
            f"sessions, {chat.questions} questions; ingested in {chat.ingest_s:.1f} s, "
            f"raw turns indexed in {chat.index_s:.1f} s, questions asked in {chat.ask_s:.1f} s"
        )
    lines.append(f"whole run {report.total_s:.1f} s; token counts: {report.token_counter}")
    if report.machine.postgres:
        settings = ", ".join(f"{k}={v}" for k, v in report.machine.postgres_settings.items())
        lines.append(f"PostgreSQL {report.machine.postgres} ({settings})")
    return [*lines, *report.machine.fact_lines(), *report.notes]


def print_memory_report(report: MemoryBenchReport, console: Console) -> None:
    """Print the summary and one Rich table per measurement."""
    print_tables(summary_lines(report), memory_tables(report), console)


def memory_markdown(report: MemoryBenchReport) -> str:
    """The tables as Markdown (for docs/benchmarks.md)."""
    return "\n".join(
        [f"- {line}" for line in summary_lines(report)]
        + ["", *tables_markdown(memory_tables(report))]
    )
