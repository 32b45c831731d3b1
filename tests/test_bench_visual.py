"""``agentctx bench visual``: a short run of the real benchmark, checked for what it claims."""

from __future__ import annotations

import hashlib
import io
import itertools
import json
from pathlib import Path

from PIL import Image
from typer.testing import CliRunner

from agentctx.bench.visual import VisualBenchConfig, VisualReport, run_visual_benchmark
from agentctx.bench.visual_frames import HEIGHT, WIDTH, generate_task
from agentctx.bench.visual_report import visual_markdown
from agentctx.bench.visual_writes import HIDPI_FRAMES, hidpi, photographed
from agentctx.cli.bench import bench_app
from agentctx.perception import hamming, perceptual_hashes


def test_task_is_deterministic_with_planted_frames() -> None:
    first = generate_task(3, seed=7)
    again = generate_task(3, seed=7)
    other = generate_task(3, seed=8)
    frames = [f for t in first for f in t.frames]
    assert [hashlib.sha256(f.png).digest() for f in frames] == [
        hashlib.sha256(f.png).digest() for t in again for f in t.frames
    ]
    assert frames[0].png != other[0].frames[0].png
    for turn in first:
        assert 3 <= len(turn.frames) <= 10
        assert turn.frames[0].first and turn.frames[-1].last
        assert not turn.frames[0].near_duplicate and not turn.frames[-1].near_duplicate
    with Image.open(io.BytesIO(frames[0].png)) as image:
        assert image.size == (WIDTH, HEIGHT) and image.format == "PNG"
    # A planted near-duplicate hashes close to its previous frame, yet is other bytes.
    for previous, frame in itertools.pairwise(frames):
        if frame.near_duplicate:
            distance = hamming(
                perceptual_hashes(previous.png).phash, perceptual_hashes(frame.png).phash
            )
            assert distance <= 4
            assert previous.png != frame.png


def test_short_run_measures_real_figures(tmp_path: Path) -> None:
    report = run_visual_benchmark(VisualBenchConfig(turns=4, seed=0))
    naive, defaults = report.results[0], report.results[1]
    assert report.frames == naive.history.images == defaults.history.images
    # The naive engine sends every screenshot whole and compresses nothing.
    assert naive.history.placeholders == 0 and naive.duplicates_caught == 0
    assert naive.history.inline == report.frames
    # The defaults: first, last and error frames sent whole, the rest placeholders.
    assert defaults.kept_expected > 0
    assert defaults.kept_in_window == defaults.kept_expected
    assert defaults.kept_by_frames_full == defaults.kept_by_frames > 0
    assert defaults.history.placeholders > 0
    assert defaults.restored_ok == defaults.placeholder_ids == defaults.history.placeholders
    assert defaults.history.tokens < naive.history.tokens
    assert defaults.saving == 1 - defaults.history.tokens / naive.history.tokens
    assert defaults.planted_duplicates > 0
    assert defaults.duplicates_caught == defaults.planted_duplicates
    assert defaults.compaction is not None and defaults.compaction.count == 4
    assert defaults.compressed_total == defaults.history.placeholders
    writes = report.writes
    assert writes.hash_png.count == writes.hash_jpeg.count == report.frames
    assert writes.hash_png_hidpi.count == min(report.frames, HIDPI_FRAMES)
    assert writes.append_in_turn.count == writes.append_own_turn.count == report.frames
    # The appended frames carry a photograph: far larger than the flat UI's PNG.
    assert writes.append_png_bytes_mean > 2 * report.png_bytes_mean
    names = [v.name for v in report.verdicts]
    assert any("2560x1600" in name for name in names)
    assert any("append at 1280x800, in a turn" in name for name in names)
    # The report round-trips through its JSON and renders as Markdown.
    again = VisualReport.model_validate_json(report.model_dump_json())
    assert again == report
    markdown = visual_markdown(report)
    assert "History image tokens" in markdown and f"{naive.history.tokens:,}" in markdown


def test_cli_writes_json_and_markdown(tmp_path: Path) -> None:
    out, md = tmp_path / "visual.json", tmp_path / "visual.md"
    result = CliRunner().invoke(
        bench_app,
        ["visual", "--turns", "2", "--seed", "3", "--out", str(out), "--markdown", str(md)],
    )
    assert result.exit_code == 0, result.output
    data = json.loads(out.read_text())
    assert data["config"] == {"turns": 2, "seed": 3, "command": data["config"]["command"]}
    assert data["turns"] == 2
    assert md.read_text().startswith("- command:")


def test_write_path_frames_are_deterministic_and_keep_near_duplicates() -> None:
    frames = [f for t in generate_task(3, seed=7) for f in t.frames]
    first = frames[0].png
    assert photographed(first, 1) == photographed(first, 1)
    assert photographed(first, 1) != photographed(first, 2)
    assert len(photographed(first, 1)) > 2 * len(first)  # the photograph does not compress
    with Image.open(io.BytesIO(hidpi(first))) as image:
        assert image.size == (2 * WIDTH, 2 * HEIGHT) and image.format == "PNG"
    # The same scene at twice the size hashes alike; a planted near-duplicate with the
    # same photograph as its previous frame stays near it.
    assert hamming(perceptual_hashes(first).phash, perceptual_hashes(hidpi(first)).phash) <= 4
    for previous, frame in itertools.pairwise(frames):
        if frame.near_duplicate:
            distance = hamming(
                perceptual_hashes(photographed(previous.png, 5)).phash,
                perceptual_hashes(photographed(frame.png, 5)).phash,
            )
            assert distance <= 4
