"""Rendering a ``StoreReport``: Rich tables for the terminal, Markdown for docs/benchmarks.md.

Both come from the same ``TableSpec`` rows, so the figures in the docs are the ones printed.
Ratios are always agentctx / peer; each column says which direction is better.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.table import Table
from rich.text import Text

from agentctx.bench.store import StoreReport
from agentctx.bench.targets import Target


@dataclass
class TableSpec:
    """One table: a title, column headers, rows of cells, and notes under it."""

    title: str
    columns: list[str]
    rows: list[list[str]] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _ms(value: float) -> str:
    return f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _rate(value: float) -> str:
    return f"{value:,.0f}"


def _ratio(ours: float | None, peer: float | None) -> str:
    if ours is None or not peer:
        return "-"
    return f"{ours / peer:.2f}x"


def _kib(value: float) -> str:
    return f"{value / 1024:,.1f} KiB"


def _verdict(target: Target | None) -> str:
    if target is None:
        return ""
    if target.passed is None:
        return f"n/a ({target.note})"
    figure = target.figure or 0.0
    if target.unit == "bytes":
        verdict = "PASS" if target.passed else "FAIL"
        return f"{verdict} ({_kib(figure)} {target.direction} {_kib(target.bound)})"
    ratio = target.unit.startswith("x ")  # a multiple of the peer's or of SQLite's figure
    shown = (
        f"{figure:.2f}x"
        if ratio
        else (_rate(figure) if target.unit == "events/s" else f"{_ms(figure)} ms")
    )
    bound = (
        f"{target.bound:g}x"
        if ratio
        else (_rate(target.bound) if target.unit == "events/s" else f"{target.bound:g} ms")
    )
    return f"{'PASS' if target.passed else 'FAIL'} ({shown} {target.direction} {bound})"


def store_tables(report: StoreReport) -> list[TableSpec]:
    """The tables of a store run: one per metric, then the targets."""
    label = report.systems
    peer = report.peer_key
    targets = {(t.metric, t.system): t for t in report.targets}

    single = TableSpec(
        "(a) Single-append latency, one message per call",
        ["system", "p50 ms", "p95 ms", "p99 ms", "p50 vs peer (lower=better)", "target"],
    )
    peer_single = next((r for r in report.single if r.system == peer), None)
    for r in report.single:
        single.rows.append(
            [
                label[r.system],
                _ms(r.latency.p50_ms),
                _ms(r.latency.p95_ms),
                _ms(r.latency.p99_ms),
                _ratio(r.latency.p50_ms, peer_single.latency.p50_ms if peer_single else None),
                _verdict(targets.get(("single", r.system))),
            ]
        )
    if report.single:
        single.notes.append(f"{report.single[0].latency.count:,} measured appends per system.")

    batched = TableSpec(
        "(b) Batched-append throughput",
        [
            "system",
            "events/s",
            "batch p50 ms",
            "batch p95 ms",
            "vs peer (higher=better)",
            "target",
        ],
    )
    peer_batched = next((r for r in report.batched if r.system == peer), None)
    for b in report.batched:
        batched.rows.append(
            [
                label[b.system],
                _rate(b.events_per_s),
                _ms(b.batch_latency.p50_ms),
                _ms(b.batch_latency.p95_ms),
                _ratio(b.events_per_s, peer_batched.events_per_s if peer_batched else None),
                _verdict(targets.get(("batched", b.system))),
            ]
        )
    if report.batched:
        first = report.batched[0]
        batched.notes.append(f"{first.batches} batches of {first.batch_size:,} events per system.")

    concurrent = TableSpec(
        "(c) Concurrent single-message appends into one shared session",
        [
            "system",
            "events/s",
            "p50 ms",
            "p95 ms",
            "events/s vs peer (higher=better)",
            "p95 vs peer (lower=better)",
            "log check",
        ],
    )
    peer_conc = next((r for r in report.concurrent if r.system == peer), None)
    for c in report.concurrent:
        concurrent.rows.append(
            [
                label[c.system],
                _rate(c.events_per_s),
                _ms(c.latency.p50_ms),
                _ms(c.latency.p95_ms),
                _ratio(c.events_per_s, peer_conc.events_per_s if peer_conc else None),
                _ratio(c.latency.p95_ms, peer_conc.latency.p95_ms if peer_conc else None),
                c.detail,
            ]
        )
    if report.concurrent:
        concurrent.notes.append(
            f"{report.concurrent[0].threads} writer threads, "
            f"{report.concurrent[0].events:,} measured appends per system."
        )

    reads = TableSpec(
        "(d) Reading the newest events as history grows",
        [
            "system",
            "events in session",
            "p50 ms",
            "p95 ms",
            "p95 vs peer (lower=better)",
            "fill events/s",
            "target",
        ],
    )
    peer_reads = {r.size: r for r in report.reads if r.system == peer}
    for d in report.reads:
        peer_row = peer_reads.get(d.size)
        reads.rows.append(
            [
                label[d.system],
                f"{d.size:,}",
                _ms(d.latency.p50_ms),
                _ms(d.latency.p95_ms),
                _ratio(d.latency.p95_ms, peer_row.latency.p95_ms if peer_row else None),
                _rate(d.fill_events_per_s),
                _verdict(targets.get(("read", d.system))) if d.size == 100_000 else "",
            ]
        )
    if report.reads:
        first_read = report.reads[0]
        reads.notes.append(
            f"newest {first_read.limit} events, {first_read.latency.count:,} reads per size; "
            "sessions filled with batched appends."
        )
    for d in report.reads:
        if d.plan:
            reads.notes.append(f"plan, {label[d.system]} at {d.size:,}: {d.plan}")

    beside = TableSpec(
        "(e) Single appends beside a session's finished jobs",
        [
            "system",
            "finished jobs",
            "turn-end job",
            "p50 ms",
            "p95 ms",
            "p50 vs (a) (lower=better)",
        ],
    )
    alone = {r.system: r.latency.p50_ms for r in report.single}
    for e in report.beside_jobs:
        beside.rows.append(
            [
                label[e.system],
                f"{e.finished_jobs:,}",
                "queued and run inline" if e.hook else "none",
                _ms(e.latency.p50_ms),
                _ms(e.latency.p95_ms),
                _ratio(e.latency.p50_ms, alone.get(e.system)),
            ]
        )
    if report.beside_jobs:
        beside.notes.append(
            "the same appends as (a), into a session whose turn-end jobs left that many "
            "finished jobs (kept until the session is deleted); with a turn-end job, each "
            "append also queues a no-op job that it claims and runs inline."
        )

    summary = TableSpec("Targets", ["target", "system", "verdict"])
    for t in report.targets:
        summary.rows.append([t.name, label[t.system], _verdict(t)])
    tables = [single, batched, concurrent, reads]
    if report.beside_jobs:
        tables.append(beside)
    if report.disk:
        tables.append(_disk_table(report, label))
    return [*tables, summary]


def _disk_table(report: StoreReport, label: dict[str, str]) -> TableSpec:
    """(f) Disk bytes per short session."""
    disk = TableSpec(
        "(f) Disk per short session, with its vectors",
        ["system", "sessions", "total", "events", "vectors", "raw vectors", "other", "target"],
    )
    targets = {t.system: t for t in report.targets if t.metric == "disk"}
    for d in report.disk:
        disk.rows.append(
            [
                label[d.system],
                f"{d.sessions:,}",
                _kib(d.bytes_per_session),
                _kib(d.event_bytes_per_session),
                _kib(d.vector_bytes_per_session),
                _kib(d.raw_vector_bytes_per_session),
                _kib(d.other_bytes_per_session),
                _verdict(targets.get(d.system)),
            ]
        )
    first = report.disk[0]
    disk.notes.append(
        f"growth of a fresh database per session, {first.sessions:,} sessions of "
        f"{first.events / max(first.sessions, 1):.0f} events on average ({first.data} texts), "
        f"each event embedded twice ({first.dimensions} dimensions: alone and after the "
        "event before); vectors: the vector tables and their sign codes and int8 copies."
    )
    return disk


def _style(cell: str) -> str:
    if cell.startswith("PASS"):
        return "green"
    return "red" if cell.startswith("FAIL") else ""


def machine_lines(report: StoreReport) -> list[str]:
    """The machine and settings, one fact per line."""
    m = report.machine
    lines = [
        f"CPU: {m.cpu_model}, {m.nproc} cores; memory: {m.memory_gb} GB",
        f"OS: {m.platform}; filesystem of the data: {m.filesystem}",
        f"Python {m.python}; SQLite {m.sqlite}; agentctx {m.agentctx}"
        + (f" (git {m.revision})" if m.revision else ""),
        f"load average (1/5/15 min) at start: {m.load_average_start}, at end: {m.load_average_end}",
    ]
    if m.agentctx_settings:
        lines.append(
            "agentctx settings: "
            + ", ".join(f"{key}={value}" for key, value in m.agentctx_settings.items())
        )
    if m.postgres:
        settings = ", ".join(f"{key}={value}" for key, value in m.postgres_settings.items())
        lines.append(f"PostgreSQL {m.postgres} ({settings})")
    if m.peer:
        lines.append(f"peer: {m.peer}, SQLite synchronous={m.peer_sqlite_synchronous}")
    lines.extend(report.notes)
    return lines


def print_tables(lines: Sequence[str], specs: Sequence[TableSpec], console: Console) -> None:
    """Print summary lines, then each table with its notes (PASS green, FAIL red)."""
    for line in lines:
        console.print(line, markup=False, highlight=False)
    for spec in specs:
        table = Table(title=spec.title, title_justify="left")
        for column in spec.columns:
            table.add_column(column, overflow="fold")
        for row in spec.rows:
            table.add_row(*(Text(cell, style=_style(cell)) for cell in row))
        console.print(table)
        for note in spec.notes:
            console.print(f"  {note}", markup=False, highlight=False)


def tables_markdown(specs: Sequence[TableSpec]) -> list[str]:
    """Each table as a Markdown section: heading, table, notes."""
    out = []
    for spec in specs:
        out.append(f"#### {spec.title}\n")
        out.append("| " + " | ".join(spec.columns) + " |")
        out.append("|" + "|".join("---" for _ in spec.columns) + "|")
        out.extend("| " + " | ".join(row) + " |" for row in spec.rows)
        out.append("")
        out.extend(f"- {note}" for note in spec.notes)
        if spec.notes:
            out.append("")
    return out


def print_store_report(report: StoreReport, console: Console) -> None:
    """Print the machine facts and one Rich table per metric."""
    print_tables(machine_lines(report), store_tables(report), console)


def store_markdown(report: StoreReport) -> str:
    """The tables as Markdown (for docs/benchmarks.md)."""
    return "\n".join(tables_markdown(store_tables(report)))
