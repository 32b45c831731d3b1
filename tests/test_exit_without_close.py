"""A program that ends without closing its engine exits cleanly: the engine is closed at
exit (agentctx.at_exit) before the interpreter finalizes, so no background thread runs
native code (the model's load, a forward pass) while the process tears its libraries
down. Without it such programs aborted, crashed or hung: 14 of 20 during the model's
load, 6 of 10 while events were embedded. Each case runs in fresh interpreters, several
times, at several moments."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from agentctx import ContextEngine, at_exit


def run_program(code: str, tmp: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        check=False,
        capture_output=True,
        text=True,
        timeout=240,
        cwd=tmp,
        # The defaults a program gets (the suite's own run jobs inline).
        env={k: v for k, v in os.environ.items() if not k.startswith("AGENTCTX_")},
    )


def assert_clean_exit(done: subprocess.CompletedProcess[str]) -> None:
    # A negative code is a signal: SIGABRT (-6) and SIGSEGV (-11) are what it was.
    assert done.returncode == 0, (done.returncode, done.stderr[-3000:])
    assert "Fatal Python error" not in done.stderr


@pytest.mark.parametrize("pause", [0.0, 0.05, 0.15, 0.3])
def test_a_program_ending_while_the_model_loads_exits_cleanly(tmp_path: Path, pause: float) -> None:
    done = run_program(
        f"""
        import time
        from agentctx import ContextEngine
        engine = ContextEngine(url="sqlite:///{tmp_path}/a.db", home="{tmp_path}/home")
        assert engine.model_warmup is not None and engine.model_warmup.state == "loading"
        time.sleep({pause})
        print("leaving", engine.model_warmup.state)
        """,
        tmp_path,
    )
    assert_clean_exit(done)
    assert "leaving" in done.stdout


@pytest.mark.parametrize("pause", [0.0, 0.02, 0.1, 0.3])
def test_a_program_ending_while_events_are_embedded_exits_cleanly_and_keeps_them(
    tmp_path: Path, pause: float
) -> None:
    url, home = f"sqlite:///{tmp_path}/a.db", tmp_path / "home"
    done = run_program(
        f"""
        import time
        from agentctx import ContextEngine
        engine = ContextEngine(url="{url}", home="{home}")
        assert engine.model_warmup.wait(120)
        session = engine.create_session(user_id="u", agent_id="a", session_id="s")
        for i in range(40):
            session.add_message("user", f"the quick brown fox jumps over the lazy dog {{i}} " * 60)
        time.sleep({pause})
        print("leaving", engine.embedding.stats.steps)
        """,
        tmp_path,
    )
    assert_clean_exit(done)
    with ContextEngine(url=url, home=home, jobs="manual") as engine:
        session = engine.get_session("s", "u")
        assert [e.seq for e in session.events()] == list(range(1, 41))
        assert session.verify().ok


@pytest.mark.parametrize("close", [True, False])
def test_a_burst_of_user_texts_leaves_no_thread_running_after_close(
    tmp_path: Path, close: bool
) -> None:
    """Each user text starts its embedding as the next window's query. A burst of them
    with no window between (an import) once queued one embedding each: the helper thread
    was still embedding them after close, and when the backlog outlasted close's wait
    the process aborted at exit. Now at most a few wait, and close (or the exit) ends
    the helper before it returns."""
    done = run_program(
        f"""
        import threading
        from agentctx import ContextEngine, at_exit
        engine = ContextEngine(url="sqlite:///{tmp_path}/a.db", home="{tmp_path}/home")
        assert engine.model_warmup.wait(120)
        session = engine.create_session(user_id="u", agent_id="a", session_id="s")
        for i in range(300):
            session.add_message("user", f"Could you check order {{i}} for me, please?")
        if {close}:
            engine.close()
        else:
            at_exit.close_open_engines()  # what the exit runs
        print("threads", sorted(t.name for t in threading.enumerate()))
        """,
        tmp_path,
    )
    assert_clean_exit(done)
    assert "threads ['MainThread']" in done.stdout, done.stdout


def test_a_program_ending_during_the_libraries_preload_exits_cleanly(tmp_path: Path) -> None:
    """The preload alone (a model loaded by hand on a thread of one's own): the
    interpreter waits for a dlopen under way, and starts none once it is exiting."""
    for pause in (0.0, 0.05, 0.1):
        done = run_program(
            f"""
            import threading, time
            from agentctx.llm import native_preload
            threading.Thread(target=native_preload.preload_torch, daemon=True).start()
            time.sleep({pause})
            """,
            tmp_path,
        )
        assert_clean_exit(done)
    done = run_program(
        """
        from agentctx.llm import native_preload
        native_preload._wait_for_preload()  # what exit runs first
        print(native_preload.preload_torch())
        """,
        tmp_path,
    )
    assert_clean_exit(done)
    assert done.stdout.strip() == "[]"  # none starts once the interpreter is exiting


class Recorder:
    def __init__(self, fail: bool = False) -> None:
        self.closed_with: list[float] = []
        self.fail = fail

    def close(self, *, timeout: float = 10.0) -> None:
        self.closed_with.append(timeout)
        if self.fail:
            raise RuntimeError("close failed")


@pytest.fixture
def exit_list(monkeypatch: pytest.MonkeyPatch) -> None:
    """A list of open engines of the test's own: the process's belongs to other tests."""
    monkeypatch.setattr(at_exit, "_open", {})


@pytest.mark.usefixtures("exit_list")
def test_open_engines_are_closed_once_and_a_failure_spares_the_others() -> None:
    failing, kept, done_already = Recorder(fail=True), Recorder(), Recorder()
    for engine in (failing, kept, done_already):
        at_exit.close_at_exit(engine)
    at_exit.closed(done_already)
    assert at_exit.close_open_engines(timeout=3.0) == 1  # the failing one is logged
    assert failing.closed_with == [3.0] and kept.closed_with == [3.0]
    assert done_already.closed_with == []
    assert at_exit.close_open_engines() == 0  # nothing twice


@pytest.mark.usefixtures("exit_list")
def test_an_engine_dropped_by_the_program_is_not_kept_alive() -> None:
    dropped, kept = Recorder(), Recorder()
    at_exit.close_at_exit(dropped)
    at_exit.close_at_exit(kept)
    del dropped
    gc.collect()
    assert at_exit.close_open_engines() == 1 and kept.closed_with == [10.0]


@pytest.mark.usefixtures("exit_list")
def test_a_forked_child_leaves_its_parents_engines_alone() -> None:
    parent = Recorder()
    at_exit.close_at_exit(parent)
    pid = os.fork()
    if pid == 0:  # the child: its exit must not close the parent's engine
        code = 0 if at_exit.close_open_engines() == 0 else 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    assert parent.closed_with == []
    assert at_exit.close_open_engines() == 1 and parent.closed_with == [10.0]


def test_close_removes_the_engine_from_the_exit_list(tmp_path: Path) -> None:
    engine = ContextEngine(url=f"sqlite:///{tmp_path}/a.db", home=tmp_path / "home", jobs="manual")
    assert id(engine) in at_exit._open
    engine.close()
    assert id(engine) not in at_exit._open
