"""``examples/langgraph_agent.py`` runs offline, as a user would run it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_the_langgraph_example_runs(tmp_path: Path) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "langgraph_agent.py"), "--home", str(tmp_path)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = dict(line.split(": ", 1) for line in done.stdout.splitlines())
    # Every message of the graph state is in the agentctx session, once.
    assert lines["graph state"].split()[0] == lines["agentctx session"].split()[0]
    tokens = int(lines["last window"].split()[0])
    assert 0 < tokens <= 1200
    assert lines["retrieved for the last request"] == "True"
    assert lines["answer"] == "Order A1's tracking number is ZX4471."
    assert lines["memories of ann"] == "['User ships orders to Porto']"
    assert (tmp_path / "agentctx.db").exists()
