"""Visual compaction under concurrency and crashes.

Guarantees (``agentctx.compaction.visual.compactor``): a turn's flags are written in
one transaction from a pure function of its events, so racing runs end in the same
flags, each process frame compressed once (no placeholder twice); the job queue never
runs two jobs of one session at once; a crash mid-write leaves the turn as it was, and
the rerun compresses it right with no image lost.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from visual_screens import BIG, distinct_screens, open_engine, placeholders, screen_turn

from agentctx import ContextEngine, Job
from agentctx.compaction.visual import VISUAL_JOB, VisualCompaction
from agentctx.engine import TURN_END_PREFIX
from agentctx.sessions.session import Session

CHILD = Path(__file__).parent / "visual_crash_child.py"


def frames_for(turn: int, count: int = 5) -> list[bytes]:
    """``count`` distinct screens, none shared with another turn (below 5 turns)."""
    return distinct_screens(turn * 6, count)


def assert_compacted(engine: ContextEngine, session: Session, turns: int) -> None:
    """Every ended turn: first and last kept, the middle compressed, each placeholder once,
    every image restorable."""
    images = session.images()
    by_turn: dict[str | None, list[str | None]] = {}
    for frame in images:
        by_turn.setdefault(frame.turn_id, []).append(frame.frame)
    assert len(by_turn) == turns
    for kinds in by_turn.values():
        assert kinds == ["anchor", *["process"] * (len(kinds) - 2), "result"]
    process = [f.image_id for f in images if f.frame == "process"]
    assert all(f.is_compressed == (f.frame == "process") for f in images)
    shown = placeholders(session.build_context(budget=BIG, strategy="full"))
    assert shown == process and len(set(shown)) == len(shown)
    for frame in images:
        assert engine.restore_image(frame.image_id, user_id=session.user_id)


def wait_for(condition: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def test_two_threads_compacting_one_ended_turn(db_url: str, home: Path) -> None:
    with open_engine(db_url, home) as engine:  # jobs="manual": the test runs compaction
        session = engine.create_session(user_id="u1")
        turn_id, _ = screen_turn(session, frames_for(0, 6))
        barrier = threading.Barrier(2)
        results: list[VisualCompaction] = []
        errors: list[BaseException] = []

        def compact() -> None:
            try:
                barrier.wait()
                results.append(engine.visual.compact_turn("u1", session.id, turn_id))
            except BaseException as exc:  # reported below
                errors.append(exc)

        threads = [threading.Thread(target=compact) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        assert [(r.images, r.kept, r.compressed) for r in results] == [(6, 2, 4)] * 2
        assert 4 <= sum(r.newly_compressed for r in results) <= 8
        assert_compacted(engine, session, 1)
        # Once settled, a rerun changes nothing.
        assert engine.visual.compact_turn("u1", session.id, turn_id).newly_compressed == 0


def test_run_pending_from_two_threads(db_url: str, home: Path) -> None:
    """Jobs of several sessions and turns, claimed by two threads: each turn compacted
    by exactly one run, never two jobs of one session at once."""
    with open_engine(db_url, home) as engine:
        sessions = [engine.create_session(user_id="u1") for _ in range(3)]
        for index, session in enumerate(sessions):
            for turn in range(2):
                screen_turn(session, frames_for(index * 2 + turn, 4))
        kind = TURN_END_PREFIX + VISUAL_JOB
        lock = threading.Lock()
        running: set[str] = set()
        overlaps: list[str] = []
        runs: list[str] = []

        def watched(job: Job) -> None:
            assert job.session_id is not None and job.turn_id is not None
            with lock:
                if job.session_id in running:
                    overlaps.append(job.session_id)
                running.add(job.session_id)
                runs.append(job.turn_id)
            try:
                time.sleep(0.02)  # widen the window for an overlap
                engine.visual.on_turn_end(job)
            finally:
                with lock:
                    running.discard(job.session_id)

        engine.jobs.register(kind, watched)
        threads = [threading.Thread(target=engine.jobs.run_pending) for _ in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert overlaps == []
        assert len(runs) == len(set(runs)) == 6  # each turn's job ran exactly once
        assert "pending" not in engine.jobs.counts()
        for session in sessions:
            assert_compacted(engine, session, 2)


def test_background_worker_compacts_turns_as_they_end(db_url: str, home: Path) -> None:
    with open_engine(db_url, home, jobs="background") as engine:
        session = engine.create_session(user_id="u1")
        for turn in range(3):
            screen_turn(session, frames_for(turn, 4))
            engine.jobs.notify()
        wait_for(
            lambda: sum(f.is_compressed for f in session.images()) == 6,
            timeout=20,
            what="the worker to compact three turns",
        )
        wait_for(
            lambda: not {"pending", "running"} & set(engine.jobs.counts()),
            timeout=20,
            what="the queue to drain",
        )
        assert_compacted(engine, session, 3)


def test_crash_in_the_middle_of_the_frame_write(db_url: str, home: Path) -> None:
    """A process dies after writing half of a turn's frames, before commit: nothing of
    it is visible; the job runs again once its lease ends and compacts every turn right."""
    with open_engine(db_url, home) as engine:
        session = engine.create_session(user_id="u1")
        for turn in range(2):
            screen_turn(session, frames_for(turn, 6))
        before = session.images()
        child = subprocess.run(
            [sys.executable, str(CHILD), db_url, str(home)],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert child.returncode == 3, child.stderr
        assert child.stdout.strip() == "dying"
        # Atomic: the half written before the crash never committed.
        assert session.images() == before
        assert not any(f.is_compressed or f.frame for f in before)
        assert placeholders(session.build_context(budget=BIG, strategy="full")) == []
        # The crashed job's lease (1 s) ends; the rerun completes it and the other turn.
        time.sleep(1.2)
        stats = engine.jobs.run_pending()
        assert stats.failed == 0 and stats.done >= 2
        assert_compacted(engine, session, 2)
        for frame in session.images():
            assert engine.restore_image(frame.image_id, user_id="u1")
