"""``examples/adk_agent.py`` runs as documented and says what it shows."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_the_adk_example_runs_offline_and_reports_the_window(tmp_path: Path) -> None:
    env = {
        **os.environ,
        "PYTHONPATH": str(ROOT / "src"),
        "TMPDIR": str(tmp_path),  # the example's engine lives in a temporary directory
    }
    done = subprocess.run(
        [sys.executable, str(ROOT / "examples" / "adk_agent.py")],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out = done.stdout
    assert "tool call   get_weather({'city': 'Lisbon'})" in out
    assert "tool result {'report': 'sunny and 24C in Lisbon'}" in out
    assert "agent  > The tool reported 24C." in out
    window = re.search(r"received the agentctx window: (\d+) tokens\n\(budget (\d+)\)", out)
    assert window is not None and 0 < int(window.group(1)) <= int(window.group(2))
    assert "the first turn's tool result (24C) is in it: True" in out
    assert "ADK reads back 12 events" in out and "'user:home': 'Porto'" in out
    assert "hash chain verified: True" in out
    assert re.search(r"- User prefers window seats\s+\(preference\)", out)
    assert not list(tmp_path.glob("agentctx-adk-*"))  # the example cleaned up after itself
