"""``agentctx bench server``: a short real run (a replica process, real HTTP, SQLite) and
the audit that decides whether events were lost or duplicated."""

from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from agentctx.bench.server import ServerBenchReport, check_session
from agentctx.bench.server_load import APPEND, BATCH, CONTEXT
from agentctx.bench.server_report import server_markdown
from agentctx.cli.main import app


def test_check_session_finds_lost_duplicated_foreign_events_and_seq_gaps() -> None:
    acked = {"c1-0": "e1", "c1-1": "e2", "c1-2:0": "e3", "c1-2:1": "e4", "c1-3": "e5"}
    sent = {"c1-0", "c1-1", "c1-2", "c1-3", "c1-4"}
    clean = [(1, "c1-0", "e1"), (2, "c1-1", "e2"), (3, "c1-2:0", "e3"), (4, "c1-2:1", "e4")]
    clean += [(5, "c1-3", "e5"), (6, "c1-4", "e6")]  # c1-4: stored, its answer was lost
    ok = check_session(acked, sent, clean)
    assert (ok.acked, ok.stored, ok.lost, ok.duplicated) == (5, 6, 0, 0)
    assert (ok.unacked_stored, ok.other, ok.seq_ok) == (1, 0, True)

    broken = [
        (1, "c1-0", "e1"),
        (2, "c1-1", "e2"),
        (3, "c1-1", "e2b"),  # a retry stored twice
        (4, "c1-2:0", "e3"),  # c1-2:1 never stored
        (5, "c1-3", "other-id"),  # stored, but not the event the client was given
        (7, "foreign-9", "x"),  # another user's write, after a gap in seq
        (8, None, "y"),
    ]
    bad = check_session(acked, sent, broken)
    assert bad.duplicated == 1
    assert bad.lost == 2  # c1-2:1, and c1-3 (stored under another event id)
    assert bad.other == 2
    assert bad.seq_ok is False


def test_short_run_on_sqlite_keeps_every_invariant(tmp_path: Path) -> None:
    out, markdown = tmp_path / "server.json", tmp_path / "server.md"
    result = CliRunner().invoke(
        app,
        [
            *("bench", "server", "--clients", "4", "--seconds", "3", "--backend", "sqlite"),
            *("--embedder", "hashing", "--dir", str(tmp_path / "run")),
            *("--out", str(out), "--markdown", str(markdown)),
        ],
    )
    assert result.exit_code == 0, result.output
    report = ServerBenchReport.model_validate(json.loads(out.read_text()))
    assert report.passed
    (run,) = report.runs
    assert (run.backend, run.replicas, run.clients) == ("sqlite", 1, 4)
    assert run.errors == {}
    assert run.requests > 0 and run.requests_per_s > 0

    routes = {r.route: r for r in run.routes}
    assert {APPEND, BATCH, CONTEXT} <= set(routes)
    assert all(r.errors == 0 and r.latency.p50_ms > 0 for r in run.routes)

    audit = run.integrity
    assert audit.sessions == 4 and audit.verify_ok == 4
    assert audit.acked > 4  # more than the warm-up screenshots
    assert (audit.lost, audit.duplicated, audit.other, audit.seq_broken) == (0, 0, 0, 0)
    assert audit.stored == audit.acked + audit.unacked_stored
    # The deliberate resends of acknowledged appends got the first answer's event back.
    assert audit.duplicates_sent > 0
    assert audit.duplicates_same_event == audit.duplicates_sent

    foreign = run.isolation
    assert foreign.own_session_ok and foreign.in_window > 0 and foreign.succeeded == 0
    assert foreign.attempts == foreign.in_window + 4 * 10  # the sweep: 10 probes x 4 sessions
    answers = {status for statuses in foreign.statuses.values() for status in statuses}
    assert answers <= {"403", "404"}  # refused as unknown, never 401 (a broken key)
    assert "GET /v1/images/{image}" in foreign.statuses  # the warm-up stored screenshots
    assert "POST /v1/sessions/{id}/events (write)" in foreign.statuses

    assert len(run.cpu.replicas_s) == 1 and run.cpu.replicas_s[0] > 0
    assert run.cpu.postgres_s is None
    text = markdown.read_text()
    assert "| SQLite, 1 replica | PASS |" in text
    assert server_markdown(report) == text
