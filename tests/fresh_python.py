"""Running a script in a fresh interpreter, for tests that need a process of their own
(nothing imported or loaded yet, a model cache of its own)."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path


def run_python(
    script: str, *args: str, cwd: Path | None = None, timeout: float = 300
) -> subprocess.CompletedProcess[str]:
    """``script`` (dedented) run by a fresh interpreter with ``args``, in ``cwd``; it
    must succeed (the assertion shows the end of its stderr)."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=cwd,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done
