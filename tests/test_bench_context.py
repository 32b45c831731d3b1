"""``agentctx bench context`` end to end on small histories."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from agentctx.bench.context import ContextBenchConfig, run_context_benchmark
from agentctx.cli.main import app


def test_context_benchmark_times_windows_at_each_size() -> None:
    report = run_context_benchmark(ContextBenchConfig(sizes=[60, 240], budget=800, queries=5))
    assert [r.events for r in report.results] == [60, 240]
    for result in report.results:
        assert result.latency.count == 5
        assert 0 < result.latency.p50_ms <= result.latency.p95_ms
        assert 0 < result.tokens_mean <= 800
        # Each window less its index lookup: pointwise smaller, so every percentile is.
        outside = result.outside_search
        assert outside is not None and outside.count == 5
        assert 0 < outside.p50_ms < result.latency.p50_ms
        assert outside.p95_ms < result.latency.p95_ms
    assert report.growth > 0 and report.outside_growth is not None
    assert report.verdicts[0].startswith(("PASS", "FAIL"))
    assert "outside the index lookup" in report.verdicts[0]
    assert "lookup included" in report.verdicts[1]


def test_context_benchmark_command_writes_markdown(tmp_path: Path) -> None:
    out = tmp_path / "context.md"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "context",
            "--sizes",
            "40",
            "--queries",
            "3",
            "--budget",
            "600",
            "--markdown",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    text = out.read_text(encoding="utf-8")
    assert "build_context latency" in text and "| 40 |" in text
