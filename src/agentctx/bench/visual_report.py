"""Rendering of ``agentctx bench visual`` results: Rich tables and Markdown."""

from __future__ import annotations

from rich.console import Console

from agentctx.bench.report import TableSpec, print_tables, tables_markdown
from agentctx.bench.stats import Latency
from agentctx.bench.visual import Verdict, VisualReport


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 10 else f"{value:.1f}"


def _latency_row(name: str, latency: Latency | None) -> list[str]:
    if latency is None:
        return [name, "0", "-", "-", "-"]
    return [
        name,
        f"{latency.count}",
        _ms(latency.p50_ms),
        _ms(latency.p95_ms),
        _ms(latency.max_ms),
    ]


def _verdict(verdict: Verdict) -> str:
    if verdict.passed is None:
        return verdict.detail
    return f"{'PASS' if verdict.passed else 'FAIL'} ({verdict.detail})"


def visual_tables(report: VisualReport) -> list[TableSpec]:
    """History tokens, kept frames and restores, dedup, latency, targets."""
    history = TableSpec(
        f"History image tokens after {report.turns} turns ({report.frames} screenshots)",
        [
            "configuration",
            "sent as images",
            "placeholders",
            "image tokens",
            "placeholder tokens",
            "total",
            "vs naive",
        ],
    )
    for result in report.results:
        row = result.history
        history.rows.append(
            [
                row.name,
                f"{row.inline}",
                f"{row.placeholders}",
                f"{row.image_tokens:,}",
                f"{row.placeholder_tokens:,}",
                f"{row.tokens:,}",
                "-"
                if result.saving is None or result is report.results[0]
                else f"{result.saving:.1%} fewer",
            ]
        )
    history.notes.append(
        "every turn has ended, so every screenshot is history; a build_context("
        "strategy='full') window, images priced at the size sent (agentctx.tokens."
        "image_tokens), placeholders counted as text."
    )
    for result in report.results[1:]:
        if result.placeholder_ids:
            history.notes.append(
                f"{result.history.name}: a placeholder costs "
                f"{result.compressed_placeholder_tokens / result.placeholder_ids:.1f} tokens "
                f"against {result.compressed_tokens_replaced / result.placeholder_ids:,.0f} "
                f"for the image it stands for "
                f"({result.compressed_placeholder_tokens / result.compressed_tokens_replaced:.3f})"
            )

    checks = TableSpec(
        "Kept frames, restores, duplicates",
        [
            "configuration",
            "first/last/error frames sent as images",
            "frame table kept uncompressed",
            "placeholders restored (sha256, decodes)",
            "near-duplicates caught",
            "false positives",
        ],
    )
    for result in report.results:
        checks.rows.append(
            [
                result.history.name,
                f"{result.kept_in_window}/{result.kept_expected}",
                f"{result.kept_by_frames_full}/{result.kept_by_frames}",
                f"{result.restored_ok}/{result.placeholder_ids}",
                f"{result.duplicates_caught}/{result.planted_duplicates}",
                f"{result.false_positives}",
            ]
        )

    latency = TableSpec("Latency (ms)", ["what", "count", "p50", "p95", "max"])
    writes = report.writes
    latency.rows.append(_latency_row("perceptual hashes, 1280x800 PNG", writes.hash_png))
    latency.rows.append(
        _latency_row("perceptual hashes, same frames as JPEG q85", writes.hash_jpeg)
    )
    latency.rows.append(
        _latency_row("perceptual hashes, same frames at 2560x1600 PNG", writes.hash_png_hidpi)
    )
    latency.rows.append(
        _latency_row("screenshot append, in a turn (1280x800)", writes.append_in_turn)
    )
    latency.rows.append(
        _latency_row("screenshot append, one-event turn (its jobs queued)", writes.append_own_turn)
    )
    latency.notes.append(
        "appends: engine defaults on SQLite (redaction on, dedup on), each frame with a "
        f"photograph pasted in (mean {writes.append_png_bytes_mean / 1024:,.0f} KiB), "
        "add_tool_result timed from call to return; a one-event turn also queues its "
        "turn-end jobs (visual compaction, HITL), run by the job worker"
    )
    for result in report.results[1:]:
        latency.rows.append(
            _latency_row(f"compact_turn per turn ({result.history.name})", result.compaction)
        )
        latency.rows.append(
            _latency_row(f"restore_image, cold storage ({result.history.name})", result.restore)
        )
    for result in report.results[1:2]:
        latency.notes.append(
            f"compact_turn compressed {result.compressed_total} images in all, "
            f"at most {result.compressed_per_turn_max} in one turn"
        )

    targets = TableSpec("Targets", ["target", "verdict"])
    targets.rows.extend([v.name, _verdict(v)] for v in report.verdicts)
    return [history, checks, latency, targets]


def summary_lines(report: VisualReport) -> list[str]:
    """The command, the task and the machine, one fact per line."""
    return [
        f"command: {report.config.command}",
        f"task: {report.turns} turns, {report.frames} screenshots 1280x800 PNG "
        f"(mean {report.png_bytes_mean / 1024:,.0f} KiB), {report.near_duplicates} planted "
        f"near-duplicates, {report.error_frames} error dialogs, seed {report.config.seed}; "
        f"drawn in {report.generate_s:.1f} s, whole run {report.total_s:.1f} s",
        *report.machine.fact_lines(),
        *report.notes,
    ]


def print_visual_report(report: VisualReport, console: Console) -> None:
    """Print the summary and one Rich table per measurement."""
    print_tables(summary_lines(report), visual_tables(report), console)


def visual_markdown(report: VisualReport) -> str:
    """The tables as Markdown (for docs/benchmarks.md)."""
    return "\n".join(
        [f"- {line}" for line in summary_lines(report)]
        + ["", *tables_markdown(visual_tables(report))]
    )
