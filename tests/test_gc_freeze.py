"""The first engine of a process freezes what is loaded by then out of full
collections, once; ``embeddings.freeze_gc`` off leaves the collector alone."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import gc, sys, tempfile
    from agentctx import ContextEngine
    settings = {"provider": "hashing", "freeze_gc": sys.argv[1] == "on"}
    def engine():
        home = tempfile.mkdtemp()
        return ContextEngine(url=f"sqlite:///{home}/db.sqlite", home=home, embeddings=settings)
    first = engine()
    after_first = gc.get_freeze_count()
    kept = [[i] for i in range(50_000)]  # live objects made after the first engine
    second = engine()
    print(after_first, gc.get_freeze_count(), len(gc.get_objects()))
    """
)


def _run(setting: str) -> tuple[int, int, int]:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, setting],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    first, second, tracked = (int(x) for x in done.stdout.split()[-3:])
    return first, second, tracked


def test_the_first_engine_freezes_once_and_the_setting_turns_it_off() -> None:
    first, second, tracked = _run("on")
    assert first > 20_000  # the engine's libraries and modules
    # The second engine froze nothing more: a second freeze would have taken the 50,000
    # lists made in between (the count moves a little as frozen objects are freed).
    assert abs(second - first) < 5000
    assert tracked >= 50_000  # what came later is still in the collector's sight
    off_first, off_second, off_tracked = _run("off")
    assert off_first == off_second == 0
    assert off_tracked > first  # everything stays in the collector's sight
