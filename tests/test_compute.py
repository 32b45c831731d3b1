"""Compaction's pure computations in a worker process (``agentctx.compute``).

The worker must give what the function gives on the calling thread. It must never be
why a call fails: a worker that cannot start, never says it is ready, dies or does
not answer in time leaves the call to the calling thread, and so does a function that
raises there (the caller then sees the function's own exception). A background engine
sends its summaries and topic identification there, an inline engine does not.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.bench.stats import chat_messages
from agentctx.compaction.offline.summarize import extractive_summary
from agentctx.compaction.topics.identify import identify_offline, offline_proposals
from agentctx.compute import (
    MAX_FAILURES,
    WORKER_NICE,
    InlineCompute,
    ProcessCompute,
    shared_process_compute,
)
from agentctx.errors import InvalidInput
from agentctx.perception.hashing import hamming
from agentctx.tokens import EstimateCounter
from compaction.topics_data import POOL, TRIP

TEXTS = [*chat_messages(0, 60), *(text for _, text in TRIP + POOL)]


@pytest.fixture
def worker() -> Iterator[ProcessCompute]:
    compute = ProcessCompute()
    yield compute
    compute.close()


def test_the_worker_gives_what_the_functions_give_here(worker: ProcessCompute) -> None:
    counter = EstimateCounter()
    spans = identify_offline(TEXTS, min_topic_messages=8)
    assert len(spans) > 1
    assert worker.run(identify_offline, TEXTS, min_topic_messages=8) == spans
    assert worker.run(
        offline_proposals, TEXTS, spans, counter=counter, summary_tokens=120
    ) == offline_proposals(TEXTS, spans, counter=counter, summary_tokens=120)
    assert worker.run(
        extractive_summary, TEXTS, budget_tokens=200, counter=counter, previous="earlier"
    ) == extractive_summary(TEXTS, budget_tokens=200, counter=counter, previous="earlier")
    assert (worker.served, worker.local, worker.failures) == (3, 0, 0)


def test_the_worker_runs_at_a_lower_cpu_priority(worker: ProcessCompute) -> None:
    worker.run(identify_offline, TEXTS[:20], min_topic_messages=5)
    pid = worker.worker_pid
    assert pid is not None and pid != os.getpid()
    mine = os.getpriority(os.PRIO_PROCESS, 0)
    assert os.getpriority(os.PRIO_PROCESS, pid) == min(19, mine + WORKER_NICE)


def test_a_function_that_raises_in_the_worker_raises_its_own_exception_here(
    worker: ProcessCompute,
) -> None:
    with pytest.raises(InvalidInput, match="different lengths"):
        worker.run(hamming, "ab", "abc")
    assert (worker.served, worker.local) == (0, 1)
    assert worker.run(hamming, "ff", "0f") == 4  # the worker is still there
    assert worker.served == 1 and worker.failures == 0


def test_only_module_level_agentctx_functions_go_to_the_worker(worker: ProcessCompute) -> None:
    with pytest.raises(ValueError, match="not a module-level agentctx function"):
        worker.run(len, "abc")
    with pytest.raises(ValueError, match="not a module-level agentctx function"):
        worker.run(lambda: 1)
    # An argument that does not pickle (a generator): the call runs here.
    spans = worker.run(identify_offline, (t for t in TEXTS), min_topic_messages=8)
    assert spans == identify_offline(TEXTS, min_topic_messages=8)
    assert (worker.served, worker.local) == (0, 1)


@pytest.mark.parametrize(
    "command",
    [
        ["/nonexistent/python3"],  # cannot start
        [sys.executable, "-c", "print('not a frame at all')"],  # answers nonsense
        [sys.executable, "-c", "import sys; sys.exit(3)"],  # exits at once
    ],
)
def test_a_worker_that_cannot_start_leaves_every_call_to_this_thread(
    command: list[str],
) -> None:
    compute = ProcessCompute(command)
    expected = identify_offline(TEXTS, min_topic_messages=8)
    for _ in range(MAX_FAILURES + 2):
        assert compute.run(identify_offline, TEXTS, min_topic_messages=8) == expected
    # It gave up after MAX_FAILURES starts, and ran every call here.
    assert compute.failures == MAX_FAILURES
    assert (compute.served, compute.local) == (0, MAX_FAILURES + 2)
    assert compute.worker_pid is None


def test_a_worker_that_never_says_it_is_ready_is_stopped(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("agentctx.compute.START_TIMEOUT", 0.5)
    compute = ProcessCompute([sys.executable, "-c", "import time; time.sleep(60)"])
    started = time.monotonic()
    assert compute.run(hamming, "ff", "0f") == 4
    assert time.monotonic() - started < 5
    assert (compute.served, compute.local, compute.failures) == (0, 1, 1)


def test_a_worker_killed_between_calls_is_replaced(worker: ProcessCompute) -> None:
    assert worker.run(hamming, "ff", "0f") == 4
    first = worker.worker_pid
    assert first is not None
    os.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 5
    while worker.worker_pid is not None and time.monotonic() < deadline:
        time.sleep(0.01)
    assert worker.run(hamming, "ff", "00") == 8
    assert worker.worker_pid not in (None, first)
    assert worker.served == 2 and worker.failures == 1


def test_a_call_the_worker_does_not_answer_in_time_runs_here(
    worker: ProcessCompute, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert worker.run(hamming, "ff", "0f") == 4  # started
    first = worker.worker_pid
    monkeypatch.setattr("agentctx.compute.CALL_TIMEOUT", 0.0)
    expected = identify_offline(TEXTS * 4, min_topic_messages=8)
    assert worker.run(identify_offline, TEXTS * 4, min_topic_messages=8) == expected
    assert worker.local == 1 and worker.failures == 1
    assert worker.worker_pid is None  # stopped; the next call starts another
    assert first is not None
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)


def _wait_for(condition: Callable[[], object], seconds: float = 60.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        time.sleep(0.05)
    return False


def test_a_background_engine_archives_through_the_worker(db_url: str, home: Path) -> None:
    shared = shared_process_compute()
    before = shared.served
    topics = {"enabled": True, "min_archive_messages": 20, "keep_recent_messages": 10}
    with ContextEngine(
        url=db_url,
        home=home,
        jobs="background",
        embeddings={"provider": "hashing"},
        topics={**topics, "context_limit": 1200},
        thread_summary={"enabled": True, "every_messages": 10},
    ) as engine:
        session = engine.create_session(user_id="u1")
        for role, text in TRIP + POOL:
            session.add_message(role, text)
        assert _wait_for(lambda: engine.topics.topics("u1", session.id))
        assert _wait_for(lambda: shared.served > before)
        stored = engine.topics.topics("u1", session.id)
        assert stored[0].first_seq == 1 and stored[0].summary
    assert shared.worker_pid is not None


@pytest.mark.parametrize(
    ("settings", "kind"),
    [
        ({"jobs": "inline"}, InlineCompute),
        ({"jobs": "manual"}, InlineCompute),
        ({"jobs": "background", "compaction_process": False}, InlineCompute),
        ({"jobs": "background"}, ProcessCompute),
    ],
)
def test_only_background_jobs_compute_in_the_worker(
    db_url: str, home: Path, settings: dict[str, object], kind: type
) -> None:
    with ContextEngine(
        url=db_url, home=home, embeddings={"provider": "hashing"}, **settings
    ) as engine:
        for compactor in (engine.topics, engine.thread_summaries, engine.folds):
            assert type(compactor._compute) is kind


def test_the_worker_exits_when_its_parent_is_killed(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        "import os, time\n"
        "from agentctx.compute import ProcessCompute\n"
        "from agentctx.perception.hashing import hamming\n"
        "compute = ProcessCompute()\n"
        "assert compute.run(hamming, 'ff', '0f') == 4 and compute.served == 1\n"
        "print(compute.worker_pid, flush=True)\n"
        "time.sleep(120)\n",
        encoding="utf-8",
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
    parent = subprocess.Popen(
        [sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env
    )
    assert parent.stdout is not None
    worker = int(parent.stdout.readline())
    os.kill(worker, 0)  # running
    parent.kill()  # no chance to close anything itself
    parent.wait()
    assert _wait_for(lambda: not _alive(worker), seconds=30)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A child of the killed parent is reparented; once it exits nobody may reap it at
    # once, so a zombie counts as gone.
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False
