"""``agentctx bench agentstep``: the generated coding session, the peers' trim, and a tiny
run of every subject through the command line (the hashing embedder, set in the
environment, stands in for the local model)."""

from __future__ import annotations

import dataclasses
import io
import json
import re
import sys
from pathlib import Path

import pytest
from PIL import Image
from typer.testing import CliRunner

from agentctx.bench.agentstep import WINDOW_KINDS, result_of
from agentctx.bench.agentstep_data import (
    MAX_OUTPUT,
    MIN_OUTPUT,
    generate_agent_session,
    session_fingerprint,
)
from agentctx.bench.agentstep_peers import (
    SCREENSHOT_TOKENS,
    CallSample,
    Piece,
    SubjectRun,
    trim_newest,
)
from agentctx.cli.main import app
from agentctx.tokens import TiktokenCounter

COUNTER = TiktokenCounter("o200k_base")


def test_session_is_seeded_real_tool_output() -> None:
    session = generate_agent_session(8, seed=3)
    assert session == generate_agent_session(8, seed=3)
    assert session != generate_agent_session(8, seed=4)
    # The fingerprint names what is replayed: the same session gives the same one, and
    # any output that differs (another set of installed packages) another.
    fingerprint = session_fingerprint(session)
    assert re.fullmatch(r"[0-9a-f]{16}", fingerprint)
    assert fingerprint == session_fingerprint(generate_agent_session(8, seed=3))
    assert fingerprint != session_fingerprint(generate_agent_session(8, seed=4))
    first = session[0]
    edited = dataclasses.replace(first.steps[0], text=(first.steps[0].output() + " "), data=None)
    changed = [dataclasses.replace(first, steps=(edited, *first.steps[1:])), *session[1:]]
    assert session_fingerprint(changed) != fingerprint
    steps = [step for turn in session for step in turn.steps]
    assert all(1 <= len(turn.steps) <= 3 for turn in session)
    for step in steps:
        if step.image is None:
            assert MIN_OUTPUT <= len(step.output()) <= MAX_OUTPUT, step.name
    shots = [step.image for step in steps if step.image is not None]
    assert len(shots) == 2  # turns 4 and 8
    assert Image.open(io.BytesIO(shots[0])).size == (1280, 800)
    reads = [step for step in steps if step.name == "read_file"]
    assert reads, "a coding session reads files"
    # The text is the installed file's own beginning, not made up.
    relative = reads[0].arguments["path"]
    located = [Path(entry) / relative for entry in sys.path if (Path(entry) / relative).is_file()]
    assert located and located[0].read_text(encoding="utf-8").startswith(reads[0].text or "-")
    assert all(s.data["matches"] for s in steps if s.name == "search")


def test_trim_keeps_the_newest_whole_and_calls_with_their_results() -> None:
    pieces = [
        Piece(("user", "first request " * 50)),
        Piece(("read_file", '{"path": "a.py"}'), call_id="c1"),
        Piece(("x = 1\n" * 400,), answers="c1"),
        Piece(("user", "second request")),
        Piece(("screenshot", "{}"), call_id="c2"),
        Piece(("Screenshot of the editor.",), images=1, answers="c2"),
    ]
    kept, tokens = trim_newest(pieces, 2000, COUNTER)
    assert tokens <= 2000
    assert kept == pieces[3:]  # the read and its 2,400-token result do not fit: nothing older
    assert tokens > SCREENSHOT_TOKENS
    everything, total = trim_newest(pieces, 100_000, COUNTER)
    assert everything == pieces and total < 100_000
    # The newest result alone is over the budget: it is cut, never dropped.
    cut, tokens = trim_newest(pieces[:3], 600, COUNTER)
    assert [p.call_id for p in cut] == ["c1", None] and cut[1].answers == "c1"
    assert tokens <= 600
    assert len(cut[1].texts[0]) < len(pieces[2].texts[0])


def test_every_subject_measured_and_peers_within_budget(tmp_path: Path) -> None:
    out = tmp_path / "agentstep.json"
    result = CliRunner().invoke(
        app,
        [
            "bench",
            "agentstep",
            "--turns",
            "3",
            "--budget",
            "4000",
            "--workdir",
            str(tmp_path),
            "--out",
            str(out),
        ],
        # The engine's defaults, not the tests' inline jobs.
        env={
            "AGENTCTX_EMBEDDINGS": '{"provider": "hashing"}',
            "COLUMNS": "200",
            "AGENTCTX_JOBS": None,
        },
    )
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert re.fullmatch(r"[0-9a-f]{16}", report["session"]["fingerprint"])
    calls = report["session"]["model_calls"]
    assert calls == 3 + sum(report["session"]["tool_calls"].values())
    subjects = {s["key"]: s for s in report["subjects"]}
    assert set(subjects) == {
        "agentctx-default",
        "agentctx-compaction",
        "openai-agents",
        "google-adk",
    }
    for subject in subjects.values():
        assert subject["measured"], subject["note"]
        assert subject["calls"] == calls
        assert subject["window"]["count"] + len(subject["loading_calls_ms"]) == calls
        assert 0 < subject["window"]["p50_ms"] <= subject["step"]["p50_ms"] * 1.0001
        assert subject["first_call_ms"] > 0 and subject["start_ms"] > 0
        kinds = subject["window_by_kind"]
        assert kinds["after the user's message"]["count"] <= 3  # one per turn, if counted
        assert sum(k["count"] for k in kinds.values()) == subject["window"]["count"]
        steps = subject["step_by_kind"]
        assert {k: v["count"] for k, v in steps.items()} == {
            k: v["count"] for k, v in kinds.items()
        }
        assert subject["tokens_max"] > 0
    for peer in ("openai-agents", "google-adk"):
        assert subjects[peer]["over_budget"] == 0
        assert subjects[peer]["tokens_max"] <= 4000
        assert subjects[peer]["turn_end"] is None
    for ours in ("agentctx-default", "agentctx-compaction"):
        assert subjects[ours]["turn_end"]["count"] == 3
        assert subjects[ours]["facts"]["embedder"].startswith("hashing")
        assert subjects[ours]["facts"]["jobs"] == "background"
        assert subjects[ours]["facts"]["model precision"] == "-"  # no local model
        assert sum(subjects[ours]["dense"].values()) == calls
        judged = [t for t in report["targets"] if t["subject"] == ours]
        assert len(judged) == 4 and all(t["figure"] is not None for t in judged)
        assert {r["peer"] for r in report["ratios"] if r["subject"] == ours} == {
            "openai-agents",
            "google-adk",
        }
    assert "Targets" in result.output
    assert "by what they follow" in result.output
    assert not list(tmp_path.glob("agentctx-agentstep-*")), "the databases are removed"


def test_windows_are_split_by_what_they_follow() -> None:
    """A turn's first call follows the user's message; a call during the model's load is
    left out of both kinds, as of the window's figures."""
    samples = [
        CallSample(turn=0, window_s=0.010, step_s=0.011, tokens=1, loading=True),
        CallSample(turn=0, window_s=0.002, step_s=0.003, tokens=1),
        CallSample(turn=1, window_s=0.030, step_s=0.031, tokens=1),
        CallSample(turn=1, window_s=0.004, step_s=0.005, tokens=1),
        CallSample(turn=1, window_s=0.006, step_s=0.007, tokens=1),
        CallSample(turn=2, window_s=0.050, step_s=0.051, tokens=1),
    ]
    run = SubjectRun(calls=samples)
    result = result_of("agentctx-default", run, budget=100)
    first, later = (result.window_by_kind[k] for k in WINDOW_KINDS)
    assert (first.count, later.count) == (2, 3)
    assert first.max_ms == pytest.approx(50.0) and later.max_ms == pytest.approx(6.0)
    first_step, later_step = (result.step_by_kind[k] for k in WINDOW_KINDS)
    assert first_step.max_ms == pytest.approx(51.0) and later_step.max_ms == pytest.approx(7.0)
