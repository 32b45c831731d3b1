"""``agentctx bench store`` in quick mode: real SQLite files, a real PostgreSQL, the real peer."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pgserver
import pytest
from typer.testing import CliRunner

from agentctx.bench.report import store_markdown
from agentctx.bench.stats import Latency, chat_messages, percentile
from agentctx.bench.store import StoreConfig, StoreReport, run_store_benchmark
from agentctx.bench.targets import (
    BATCH_MIN_EVENTS_PER_S,
    POSTGRES_MAX_RATIO,
    Target,
    evaluate_targets,
)
from agentctx.cli.bench import bench_app
from conftest import new_pg_database

PEER = "peer-sqlitesession"


def tiny(**overrides: object) -> StoreConfig:
    """Quick mode, trimmed further so the whole file stays within seconds."""
    values: dict[str, object] = {
        "single_appends": 100,
        "batches": 2,
        "appends_per_thread": 10,
        "sizes": [1_000, 2_000],
        "reads": 50,
        "disk_sessions": 8,
    }
    values.update(overrides)
    return StoreConfig.quick(**values)


def assert_latency(latency: Latency, count: int) -> None:
    assert latency.count == count
    assert 0 < latency.p50_ms <= latency.p95_ms <= latency.p99_ms <= latency.max_ms
    assert latency.p50_ms <= latency.max_ms and latency.mean_ms > 0


def assert_complete(report: StoreReport, config: StoreConfig) -> None:
    keys = list(report.systems)
    assert len(report.single) == len(report.batched) == len(report.concurrent) == len(keys)
    assert len(report.reads) == len(keys) * len(config.sizes)
    for single in report.single:
        assert_latency(single.latency, config.single_appends)
    # (e) for each agentctx backend, never the peer
    ours = [key for key in keys if key.startswith("agentctx-")]
    assert [(e.system, e.hook) for e in report.beside_jobs] == [
        *((key, False) for key in ours),
        *((key, True) for key in ours),
    ]
    for beside in report.beside_jobs:
        assert beside.finished_jobs == config.finished_jobs
        # With the hook every append's job ran inline before the append returned.
        expected_jobs = config.single_appends + config.single_warmup if beside.hook else 0
        assert beside.jobs_run == expected_jobs
        assert_latency(beside.latency, config.single_appends)
    for batch in report.batched:
        assert batch.events == config.batches * config.batch_size
        assert batch.events_per_s == pytest.approx(batch.events / batch.seconds)
        assert_latency(batch.batch_latency, config.batches)
    for run in report.concurrent:
        assert run.threads == config.threads
        assert run.events == config.threads * config.appends_per_thread
        assert run.expected == config.threads * (
            config.appends_per_thread + config.warmup_per_thread
        )
        assert run.stored == run.expected and run.order_ok, run.detail
        assert run.events_per_s > 0
        assert_latency(run.latency, run.events)
        if run.system != PEER:
            assert run.chain_verified is True, run.detail
            assert f"seq 1..{run.expected} gap-free" in run.detail
    for read in report.reads:
        assert read.size in config.sizes and read.limit == config.read_limit
        assert read.fill_events_per_s > 0
        assert_latency(read.latency, config.reads)
    ours = [key for key in keys if key != PEER]
    against_sqlite = {
        ("agentctx-postgresql", metric) for metric in ("single_vs_sqlite", "read_vs_sqlite")
    }
    assert {(t.system, t.metric) for t in report.targets} == {
        (key, metric) for key in ours for metric in ("single", "batched", "read", "disk")
    } | (against_sqlite if "agentctx-postgresql" in ours else set())
    # (f) for each agentctx backend: every event embedded twice, vectors within the bound
    assert [d.system for d in report.disk] == ours
    for disk in report.disk:
        assert disk.sessions == config.disk_sessions
        assert 20 * disk.sessions <= disk.events <= 60 * disk.sessions
        assert disk.vectors == 2 * disk.events
        assert disk.raw_vector_bytes_per_session == disk.vectors * 384 * 4 / disk.sessions
        assert 0 < disk.vector_bytes_per_session <= disk.vector_bound
    for target in report.targets:
        if target.metric == "disk":
            assert target.passed is True, target
    machine = report.machine
    assert machine.nproc >= 1 and machine.cpu_model and machine.python
    assert machine.sqlite == sqlite3.sqlite_version


SQLITE_CONFIG = tiny(backends=["sqlite"])


@pytest.fixture(scope="module")
def sqlite_report() -> StoreReport:
    return run_store_benchmark(SQLITE_CONFIG)


def test_store_quick_sqlite_against_peer(sqlite_report: StoreReport) -> None:
    config, report = SQLITE_CONFIG, sqlite_report

    assert list(report.systems) == ["agentctx-sqlite", PEER]
    assert report.peer_key == PEER
    assert_complete(report, config)
    assert report.machine.agentctx_settings["sqlite_synchronous"] == "FULL"
    assert report.machine.peer is not None and report.machine.peer_sqlite_synchronous is not None
    by_metric = {t.metric: t for t in report.targets}
    # The ratio target is judged against the peer measured in this same run.
    single = {r.system: r.latency.p50_ms for r in report.single}
    assert by_metric["single"].figure == pytest.approx(single["agentctx-sqlite"] / single[PEER])
    assert by_metric["single"].passed is (by_metric["single"].figure <= 1.5)
    # No 100k-event session in a quick run: the read target is not measured, not passed.
    assert by_metric["read"].passed is None and "100,000" in by_metric["read"].note
    markdown = store_markdown(report)
    assert "agentctx (sqlite)" in markdown and "openai-agents SQLiteSession" in markdown
    assert "(e) Single appends beside a session's finished jobs" in markdown
    assert "(f) Disk per short session, with its vectors" in markdown


def test_store_quick_postgresql(pg_server: pgserver.PostgresServer) -> None:
    config = tiny(
        backends=["postgresql"], peer=False, pg_url=new_pg_database(pg_server), sizes=[1_000]
    )
    report = run_store_benchmark(config)

    assert list(report.systems) == ["agentctx-postgresql"]
    assert report.peer_key is None
    assert_complete(report, config)
    assert report.machine.postgres is not None and report.machine.postgres.startswith("16")
    assert report.machine.postgres_settings["fsync"] in ("on", "off")
    single = next(t for t in report.targets if t.metric == "single")
    assert single.passed is None and single.note == "the peer was not measured"
    # Without SQLite in the run there is nothing to compare PostgreSQL with.
    for metric in ("single_vs_sqlite", "read_vs_sqlite"):
        target = next(t for t in report.targets if t.metric == metric)
        assert target.passed is None and target.figure is None


def test_cli_store_writes_json_and_prints_tables(tmp_path: Path) -> None:
    out = tmp_path / "store.json"
    markdown = tmp_path / "store.md"
    result = CliRunner().invoke(
        bench_app,
        [
            "store",
            "--quick",
            "--backend",
            "sqlite",
            "--no-peer",
            "--sizes",
            "1000",
            "--dir",
            str(tmp_path),
            "--out",
            str(out),
            "--markdown",
            str(markdown),
        ],
    )
    assert result.exit_code == 0, result.output
    for title in ("Single-append latency", "Batched-append", "Concurrent", "newest events"):
        assert title in result.output
    report = StoreReport.model_validate(json.loads(out.read_text()))
    config = StoreConfig.quick(backends=["sqlite"], peer=False, sizes=[1_000])
    assert report.config == config.model_copy(update={"workdir": tmp_path})
    assert_complete(report, report.config)
    assert "| agentctx (sqlite) |" in markdown.read_text()
    # The temporary databases are removed afterwards.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["store.json", "store.md"]


def test_cli_store_rejects_bad_sizes() -> None:
    result = CliRunner().invoke(bench_app, ["store", "--sizes", "10,abc"])
    assert result.exit_code != 0
    assert "comma-separated integers" in result.output
    too_small = CliRunner().invoke(bench_app, ["store", "--quick", "--sizes", "50"])
    assert too_small.exit_code != 0
    assert "read_limit" in too_small.output


def test_targets_judge_each_bound_and_never_pass_what_was_not_measured(
    sqlite_report: StoreReport,
) -> None:
    report = sqlite_report.model_copy(deep=True)
    batched = next(r for r in report.batched if r.system == "agentctx-sqlite")
    read = next(r for r in report.reads if r.system == "agentctx-sqlite")
    peer_single = next(r for r in report.single if r.system == PEER)
    ours_single = next(r for r in report.single if r.system == "agentctx-sqlite")

    def judge(metric: str) -> Target:
        return next(t for t in evaluate_targets(report) if t.metric == metric)

    # Move the measured figures to either side of each bound and re-judge.
    for rate, expected in ((BATCH_MIN_EVENTS_PER_S, True), (BATCH_MIN_EVENTS_PER_S - 1, False)):
        batched.events_per_s = rate
        assert judge("batched").passed is expected
    read.size = 100_000
    for p95, expected in ((1.0, True), (1.001, False)):
        read.latency.p95_ms = p95
        assert judge("read").passed is expected and judge("read").figure == p95
    peer_single.latency.p50_ms = 2.0
    for p50, expected in ((3.0, True), (3.01, False)):
        ours_single.latency.p50_ms = p50
        assert judge("single").passed is expected
    report.peer_key = None
    del report.systems[PEER]
    assert judge("single").passed is None


def test_postgresql_is_judged_against_sqlite_of_the_same_run(sqlite_report: StoreReport) -> None:
    report = sqlite_report.model_copy(deep=True)
    # The SQLite figures, copied as a PostgreSQL backend's, then moved around the bound.
    sqlite_single = next(r for r in report.single if r.system == "agentctx-sqlite")
    sqlite_read = next(r for r in report.reads if r.system == "agentctx-sqlite")
    sqlite_read.size = 100_000
    pg_single = sqlite_single.model_copy(deep=True, update={"system": "agentctx-postgresql"})
    pg_read = sqlite_read.model_copy(deep=True, update={"system": "agentctx-postgresql"})
    report.single.append(pg_single)
    report.reads.append(pg_read)
    report.systems["agentctx-postgresql"] = "agentctx (postgresql)"

    def judge(metric: str) -> Target:
        found = [t for t in evaluate_targets(report) if t.metric == metric]
        assert [t.system for t in found] == ["agentctx-postgresql"]  # judged for PostgreSQL only
        return found[0]

    base_p50, base_p95 = sqlite_single.latency.p50_ms, sqlite_read.latency.p95_ms
    for factor, expected in ((POSTGRES_MAX_RATIO, True), (POSTGRES_MAX_RATIO * 1.01, False)):
        pg_single.latency.p50_ms = base_p50 * factor
        pg_read.latency.p95_ms = base_p95 * factor
        single, read = judge("single_vs_sqlite"), judge("read_vs_sqlite")
        assert single.passed is expected and single.figure == pytest.approx(factor)
        assert read.passed is expected and read.figure == pytest.approx(factor)
    # A read of another size does not count.
    pg_read.size = 2_000
    assert judge("read_vs_sqlite").passed is None
    report.targets = evaluate_targets(report)
    markdown = store_markdown(report)
    assert "single-append p50 <= 2x SQLite's" in markdown


def test_corpus_and_percentiles() -> None:
    texts = chat_messages(0, 5_000)
    assert len(set(texts)) == len(texts)
    assert 150 <= sum(map(len, texts)) / len(texts) <= 250
    assert chat_messages(10, 3) == texts[10:13]
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == 2.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 95) == 4.0
    with pytest.raises(ValueError):
        percentile([], 50)
