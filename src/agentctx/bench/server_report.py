"""Rendering of ``agentctx bench server`` results: Rich tables and Markdown."""

from __future__ import annotations

from rich.console import Console

from agentctx.bench.report import TableSpec, print_tables, tables_markdown
from agentctx.bench.server import BackendRun, ServerBenchReport
from agentctx.bench.server_load import BATCH_SIZE, CONTEXT_BUDGET, DUPLICATE_EVERY, IMAGE_EVERY


def _ms(value: float) -> str:
    return f"{value:.2f}" if value < 100 else f"{value:,.0f}"


def _label(run: BackendRun) -> str:
    kind = "PostgreSQL" if run.backend == "postgres" else "SQLite"
    return f"{kind}, {run.replicas} replica{'s' if run.replicas > 1 else ''}"


def server_tables(report: ServerBenchReport) -> list[TableSpec]:
    """Throughput, latency per route, the log audit, the foreign reader, the invariants."""
    load = TableSpec(
        "Throughput and CPU in the timed window",
        [
            "backend",
            "clients",
            "window s",
            "requests",
            "requests/s",
            "events stored/s",
            "errors",
            "CPU s: replicas",
            "CPU s: PostgreSQL",
            "CPU s: load generator",
            "machine busy",
        ],
    )
    latency = TableSpec(
        "Latency per route (ms, as the client sees it)",
        ["backend", "route", "requests", "errors", "p50", "p95", "p99", "max"],
    )
    audit = TableSpec(
        "The stored log after the run",
        [
            "backend",
            "sessions",
            "acknowledged events",
            "stored",
            "lost",
            "duplicated",
            "stored, answer lost",
            "foreign events",
            "seq gaps",
            "verify ok",
            "deliberate resends answered with the same event",
        ],
    )
    foreign = TableSpec(
        "The foreign reader (its own key, other users' sessions)",
        ["backend", "probe", "attempts", "answers", "succeeded"],
    )
    verdicts = TableSpec("Invariants", ["backend", "verdict"])
    for run in report.runs:
        name = _label(run)
        cpu = run.cpu
        load.rows.append(
            [
                name,
                f"{run.clients}",
                f"{run.elapsed_s:.1f}",
                f"{run.requests:,}",
                f"{run.requests_per_s:,.1f}",
                f"{run.events_per_s:,.1f}",
                f"{sum(run.errors.values())}",
                " + ".join(f"{s:.1f}" for s in cpu.replicas_s),
                "-" if cpu.postgres_s is None else f"{cpu.postgres_s:.1f}",
                f"{cpu.load_generator_s:.1f}",
                f"{cpu.machine_busy:.0%}",
            ]
        )
        load.notes.extend(f"{name}: {label}: {count}" for label, count in run.errors.items())
        for route in run.routes:
            lat = route.latency
            latency.rows.append(
                [
                    name,
                    route.route,
                    f"{route.requests:,}",
                    f"{route.errors}",
                    _ms(lat.p50_ms),
                    _ms(lat.p95_ms),
                    _ms(lat.p99_ms),
                    _ms(lat.max_ms),
                ]
            )
        i = run.integrity
        audit.rows.append(
            [
                name,
                f"{i.sessions}",
                f"{i.acked:,}",
                f"{i.stored:,}",
                f"{i.lost}",
                f"{i.duplicated}",
                f"{i.unacked_stored}",
                f"{i.other}",
                f"{i.seq_broken}",
                f"{i.verify_ok}/{i.sessions}",
                f"{i.duplicates_same_event}/{i.duplicates_sent}",
            ]
        )
        for probe, statuses in run.isolation.statuses.items():
            answers = ", ".join(f"{status}: {n}" for status, n in statuses.items())
            succeeded = sum(n for status, n in statuses.items() if status.startswith("2"))
            foreign.rows.append([name, probe, f"{sum(statuses.values())}", answers, f"{succeeded}"])
        foreign.notes.append(
            f"{name}: {run.isolation.in_window} probes during the timed window, "
            f"{run.isolation.attempts - run.isolation.in_window} in the sweep after it "
            f"(every probe against each of the {run.clients} sessions)"
        )
        if not run.isolation.own_session_ok:
            foreign.notes.append(f"{name}: the reader could not read its own session")
        failures = run.failures
        verdicts.rows.append([name, "FAIL: " + "; ".join(failures) if failures else "PASS"])
    load.notes.append(
        "requests: client requests answered in the window (the foreign reader's are not "
        "counted); errors: non-2xx answers and transport failures"
    )
    audit.notes.append(
        "acknowledged: appends answered 201; lost: acknowledged but missing, or stored under "
        "another event id; duplicated: events beyond the first under one idempotency key; "
        "verify: GET /verify ok with every stored event checked"
    )
    verdicts.notes.append(
        "PASS needs 0 lost, 0 duplicated, 0 foreign events, no seq gap, every session "
        "verified, 0 foreign reads that succeeded"
    )
    return [load, latency, audit, foreign, verdicts]


def summary_lines(report: ServerBenchReport) -> list[str]:
    """The command, the workload and the machine, one fact per line."""
    config = report.config
    return [
        f"command: {config.command or 'agentctx bench server'}",
        f"workload: {config.clients} clients for {config.seconds:g} s per backend, each its "
        f"own user, key and session, one request at a time, rotating over the replicas; per "
        f"8 ops: 5 single appends, 1 batch of {BATCH_SIZE}, 2 context windows "
        f"(budget {CONTEXT_BUDGET}, the last message as query); every {IMAGE_EVERY}th op a "
        f"PNG screenshot; every {DUPLICATE_EVERY}th single append sent twice with its key; "
        f"plus 1 foreign reader; whole run {report.total_s:.0f} s",
        "replicas, PostgreSQL and the load generator (one asyncio process, httpx) all share "
        f"this machine's {report.machine.nproc} cores",
        *report.machine.fact_lines(),
        *_postgres_line(report),
    ]


def _postgres_line(report: ServerBenchReport) -> list[str]:
    machine = report.machine
    if machine.postgres is None:
        return []
    settings = ", ".join(f"{k}={v}" for k, v in machine.postgres_settings.items())
    return [f"PostgreSQL {machine.postgres} ({settings})"]


def print_server_report(report: ServerBenchReport, console: Console) -> None:
    """Print the summary and one Rich table per measurement."""
    print_tables(summary_lines(report), server_tables(report), console)


def server_markdown(report: ServerBenchReport) -> str:
    """The tables as Markdown (for docs/benchmarks.md)."""
    return "\n".join(
        [f"- {line}" for line in summary_lines(report)]
        + ["", *tables_markdown(server_tables(report))]
    )
