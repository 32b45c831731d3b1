"""Concurrency guarantees of the append path, on SQLite and PostgreSQL.

Many threads and many processes write one session at once; the log must come out
gap-free, duplicate-free and verifiable, every reader must see it in order, and
compare-and-set and idempotent retries must hold under contention.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from agentctx import (
    ContextEngine,
    Event,
    EventDraft,
    EventType,
    Session,
    StaleSession,
    TextPart,
)
from procs.appender import append_tagged

WRITERS = 16
PER_WRITER = 500
PROCS = Path(__file__).parent / "procs"
FULL_READ_EVERY = 2.0  # seconds between whole-log reads of the reader thread
BARRIER_TIMEOUT = 60  # last resort: a stuck thread fails the test instead of hanging it


def check_tagged_log(session: Session, writers: int, per_writer: int) -> None:
    """Exactly writers*per_writer events, seq 1..N, each writer's events in its own order."""
    events = session.events()
    total = writers * per_writer
    assert len(events) == total
    assert [e.seq for e in events] == list(range(1, total + 1))
    assert len({e.event_id for e in events}) == total
    by_writer: dict[int, list[int]] = {}
    for event in events:
        by_writer.setdefault(event.meta.extra["writer"], []).append(event.meta.extra["n"])
    assert sorted(by_writer) == list(range(writers))
    for writer, ns in by_writer.items():
        # Each writer's events appear in the order it wrote them, each exactly once.
        assert ns == list(range(per_writer)), f"writer {writer} out of order"
    report = session.verify()
    assert report.ok, report
    assert report.events_checked == total
    assert session.refresh().last_seq == total


class OrderedReader(threading.Thread):
    """Reads the log over and over while writers run; every read must be in seq order."""

    def __init__(self, session: Session, total: int) -> None:
        super().__init__(name="reader", daemon=True)
        self.session = session
        self.total = total
        self.stop = threading.Event()
        self.error: BaseException | None = None
        self.tail_reads_mid = 0  # reads that saw the log part-written
        self.full_reads_mid = 0

    def run(self) -> None:
        try:
            high = 0
            next_full = 0.0
            while not self.stop.is_set():
                tail = [e.seq for e in self.session.events(last=50)]
                if tail:
                    # Contiguous, strictly increasing, ending where the log ends (never behind
                    # what an earlier read already saw).
                    assert tail == list(range(tail[0], tail[0] + len(tail))), tail
                    assert len(tail) == min(50, tail[-1]), tail
                    assert tail[-1] >= high
                    high = tail[-1]
                    self.tail_reads_mid += high < self.total
                # Whole-log reads cost more as the log grows: one as soon as there is
                # something to read, then spaced out in time.
                if high and time.monotonic() >= next_full:
                    seqs = [e.seq for e in self.session.events()]
                    assert seqs == list(range(1, len(seqs) + 1))
                    assert len(seqs) >= high
                    high = len(seqs)
                    self.full_reads_mid += high < self.total
                    next_full = time.monotonic() + FULL_READ_EVERY
                time.sleep(0.02)
        except BaseException as exc:
            self.error = exc

    def finish(self) -> None:
        """Stop reading; re-raise what the reader found wrong."""
        self.stop.set()
        self.join(60)
        if self.error is not None:
            raise self.error

    def check_overlap(self) -> None:
        """The reader really ran while the log was being written."""
        assert self.tail_reads_mid >= 3
        assert self.full_reads_mid >= 1


def run_threads(
    count: int, target: Callable[[int], Any], barriers: tuple[threading.Barrier, ...] = ()
) -> list[Any]:
    """Run ``target(i)`` in ``count`` threads; re-raise the first failure.

    A failing thread breaks ``barriers`` so the others fail fast instead of waiting.
    """

    def guarded(index: int) -> Any:
        try:
            return target(index)
        except BaseException:
            for barrier in barriers:
                barrier.abort()
            raise

    with ThreadPoolExecutor(max_workers=count) as pool:
        futures = [pool.submit(guarded, i) for i in range(count)]
        return [future.result(timeout=120) for future in futures]


@pytest.mark.slow
def test_threads_append_one_session(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1", agent_id="writer")
    start = threading.Barrier(WRITERS, timeout=BARRIER_TIMEOUT)
    reader = OrderedReader(engine.get_session(session.id, user_id="u1"), WRITERS * PER_WRITER)

    def write(writer: int) -> int:
        handle = engine.get_session(session.id, user_id="u1")  # one handle per thread
        start.wait()
        return append_tagged(handle, writer, PER_WRITER)

    reader.start()
    try:
        writes = run_threads(WRITERS, write, (start,))
    finally:
        reader.finish()
    assert sum(writes) < WRITERS * PER_WRITER  # batches were really mixed in
    check_tagged_log(session, WRITERS, PER_WRITER)
    reader.check_overlap()


@pytest.mark.slow
def test_processes_append_one_session(engine: ContextEngine, db_url: str, home: Path) -> None:
    session = engine.create_session(user_id="u1", agent_id="writer")
    children = [
        subprocess.Popen(
            [
                sys.executable,
                str(PROCS / "appender.py"),
                db_url,
                str(home),
                "u1",
                session.id,
                str(writer),
                str(PER_WRITER),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        for writer in range(WRITERS)
    ]
    reader = OrderedReader(engine.get_session(session.id, user_id="u1"), WRITERS * PER_WRITER)
    try:
        for child in children:
            assert child.stdout is not None
            assert child.stdout.readline().strip() == "ready"
        reader.start()
        for child in children:  # every writer is connected: release them together
            assert child.stdin is not None
            child.stdin.write("go\n")
            child.stdin.flush()
        outputs = [child.communicate(timeout=120)[0] for child in children]
    finally:
        for child in children:
            if child.poll() is None:
                child.kill()
                child.wait()
        reader.finish()
    assert [child.returncode for child in children] == [0] * WRITERS
    assert all(out.strip() == "done" for out in outputs)
    check_tagged_log(session, WRITERS, PER_WRITER)
    reader.check_overlap()


def test_state_compare_and_set_one_winner_per_version(engine: ContextEngine) -> None:
    threads, rounds = 8, 15
    session = engine.create_session(user_id="u1", agent_id="cas")
    read_phase = threading.Barrier(threads, timeout=BARRIER_TIMEOUT)
    write_phase = threading.Barrier(threads, timeout=BARRIER_TIMEOUT)
    wins: list[list[tuple[int, int]]] = [[] for _ in range(threads)]  # (round, new version)
    losses: list[list[tuple[int, StaleSession]]] = [[] for _ in range(threads)]

    def contend(index: int) -> None:
        handle = engine.get_session(session.id, user_id="u1")
        for round_no in range(rounds):
            read_phase.wait()  # the previous round is fully committed
            version = handle.refresh().state_version
            write_phase.wait()  # everyone read the same version; now race
            try:
                handle.update_state(
                    {f"r{round_no}": index, f"t{index}r{round_no}": True},
                    expected_version=version,
                )
                wins[index].append((round_no, handle.state_version))
            except StaleSession as exc:
                losses[index].append((round_no, exc))

    run_threads(threads, contend, (read_phase, write_phase))
    all_wins = sorted(win for per_thread in wins for win in per_thread)
    # Exactly one winner per round, and the winners produced versions 1..rounds in order.
    assert [round_no for round_no, _ in all_wins] == list(range(rounds))
    assert [version for _, version in all_wins] == list(range(1, rounds + 1))
    all_losses = [loss for per_thread in losses for loss in per_thread]
    assert len(all_losses) == rounds * (threads - 1)
    for round_no, exc in all_losses:
        assert exc.expected == round_no
        assert exc.actual == round_no + 1

    info = session.refresh()
    assert info.state_version == rounds
    winner_of = {
        round_no: index for index, per_thread in enumerate(wins) for round_no, _ in per_thread
    }
    for round_no in range(rounds):
        assert info.state[f"r{round_no}"] == winner_of[round_no]
        for index in range(threads):
            # A loser's change is absent, the winner's present.
            assert info.state.get(f"t{index}r{round_no}") is (
                True if index == winner_of[round_no] else None
            )
    deltas = session.events(types=[EventType.STATE_DELTA])
    assert [e.payload["state_version"] for e in deltas] == list(range(1, rounds + 1))
    assert session.verify().ok


def test_append_expected_last_seq_one_winner(engine: ContextEngine) -> None:
    racers, rounds = 2, 20
    session = engine.create_session(user_id="u1", agent_id="cas")
    read_phase = threading.Barrier(racers, timeout=BARRIER_TIMEOUT)
    write_phase = threading.Barrier(racers, timeout=BARRIER_TIMEOUT)
    outcomes: list[list[tuple[int, int, Event | StaleSession]]] = [[] for _ in range(racers)]

    def race(index: int) -> None:
        handle = engine.get_session(session.id, user_id="u1")
        for round_no in range(rounds):
            read_phase.wait()
            last = handle.refresh().last_seq
            write_phase.wait()
            try:
                event = handle.add_message(
                    "user",
                    f"racer {index} round {round_no}",
                    metadata={"racer": index, "round": round_no},
                    expected_last_seq=last,
                )
                outcomes[index].append((round_no, last, event))
            except StaleSession as exc:
                outcomes[index].append((round_no, last, exc))

    run_threads(racers, race, (read_phase, write_phase))
    stored = session.events()
    assert [e.seq for e in stored] == list(range(1, rounds + 1))
    for round_no in range(rounds):
        results = [per_racer[round_no] for per_racer in outcomes]
        assert all(last == round_no for _, last, _ in results)
        won = [r for _, _, r in results if isinstance(r, Event)]
        lost = [r for _, _, r in results if isinstance(r, StaleSession)]
        assert len(won) == 1 and len(lost) == racers - 1
        assert won[0].seq == round_no + 1
        assert stored[round_no].event_id == won[0].event_id
        assert all(exc.expected == round_no and exc.actual == round_no + 1 for exc in lost)
    assert session.verify().ok


def test_idempotent_retries_race_to_one_event(engine: ContextEngine) -> None:
    threads, keys = 8, 6
    session = engine.create_session(user_id="u1", agent_id="retry")
    start = threading.Barrier(threads, timeout=BARRIER_TIMEOUT)
    single: list[list[Event]] = [[] for _ in range(threads)]
    batches: list[list[list[Event]]] = [[] for _ in range(threads)]

    def retry(index: int) -> None:
        handle = engine.get_session(session.id, user_id="u1")
        for key in range(keys):
            start.wait()
            single[index].append(
                handle.add_message("user", f"request {key}", idempotency_key=f"k{key}")
            )
            start.wait()
            drafts = [
                EventDraft(
                    type=EventType.USER_INPUT,
                    parts=(TextPart(text=f"batch {key} item {i}"),),
                    idempotency_key=f"b{key}-{i}",
                )
                for i in range(3)
            ]
            batches[index].append(handle.append(*drafts))

    run_threads(threads, retry, (start,))
    stored = session.events()
    assert len(stored) == keys * 4
    assert [e.seq for e in stored] == list(range(1, keys * 4 + 1))
    by_key = {e.idempotency_key: e for e in stored}
    assert len(by_key) == keys * 4
    for key in range(keys):
        answers = {(single[i][key].event_id, single[i][key].seq) for i in range(threads)}
        expected = by_key[f"k{key}"]
        assert answers == {(expected.event_id, expected.seq)}
        for i in range(threads):
            got = [(e.event_id, e.seq, e.hash) for e in batches[i][key]]
            want = [(by_key[f"b{key}-{j}"].event_id, by_key[f"b{key}-{j}"].seq) for j in range(3)]
            assert [g[:2] for g in got] == want
            assert [g[2] for g in got] == [by_key[f"b{key}-{j}"].hash for j in range(3)]
    assert session.verify().ok
