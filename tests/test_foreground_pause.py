"""Background work steps aside while the agent's call is under way.

A background thread that runs Python (summaries, folds, indexing words) shares the
interpreter lock with the agent's thread; at its safe points (before a transaction, in
the loops that read text) it waits while a ``foreground`` call (a window, an append, a
turn's end) is under way: never inside a transaction, at most ``FOREGROUND_MAX_WAIT`` at
a time, and within ``WAITING_SHARE`` of its time.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from agentctx import ContextEngine, priority
from agentctx.priority import (
    foreground,
    foreground_busy,
    foreground_call,
    in_transaction,
    mark_background_thread,
    yield_to_foreground,
)


def in_background(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Run ``work`` on a background thread; its result lands in the list."""
    results: list[object] = []

    def run() -> None:
        mark_background_thread()
        results.append(work())

    thread = threading.Thread(target=run)
    thread.start()
    return thread, results


def test_a_background_thread_waits_until_the_foreground_call_returns() -> None:
    with foreground():
        assert foreground_busy()
        thread, waited = in_background(lambda: yield_to_foreground(max_wait=5.0))
        time.sleep(0.2)
        assert thread.is_alive()  # still waiting: the call is under way
    thread.join(5)
    assert not foreground_busy()
    assert not thread.is_alive() and 0.15 < float(waited[0]) < 2.0  # type: ignore[arg-type]


def test_nothing_waits_without_a_foreground_call_nor_on_a_foreground_thread() -> None:
    thread, waited = in_background(lambda: yield_to_foreground(max_wait=5.0))
    thread.join(5)
    assert waited == [0.0]
    with foreground():
        started = time.perf_counter()
        assert yield_to_foreground(max_wait=5.0) == 0.0  # this thread is the foreground
        assert time.perf_counter() - started < 0.05


def test_a_thread_inside_a_transaction_never_waits() -> None:
    def inside() -> float:
        with in_transaction():
            return yield_to_foreground(max_wait=5.0)

    with foreground():
        thread, waited = in_background(inside)
        thread.join(5)
    assert waited == [0.0]


def test_a_foreground_call_that_never_ends_is_waited_out_in_bounded_steps() -> None:
    """Each wait ends by ``max_wait``; over time a thread waits at most its share."""
    with foreground():

        def many() -> tuple[float, float]:
            started = time.monotonic()
            waited = sum(yield_to_foreground(max_wait=0.05) for _ in range(40))
            return waited, time.monotonic() - started

        thread, results = in_background(many)
        # Busy work between waits, as a background job does.
        thread.join(30)
    waited, elapsed = results[0]  # type: ignore[misc]
    assert 0 < waited <= priority.WAITING_CREDIT + priority.WAITING_SHARE * elapsed + 0.05


def test_a_foreground_call_decorated_marks_its_whole_run() -> None:
    @foreground_call
    def call(x: int) -> tuple[int, bool]:
        return x + 1, foreground_busy()

    assert call(1) == (2, True)
    assert not foreground_busy()


def test_foreground_marked_by_a_background_thread_pauses_nobody() -> None:
    def mark_and_probe() -> bool:
        with foreground():
            return foreground_busy()

    thread, busy = in_background(mark_and_probe)
    thread.join(5)
    assert busy == [False]


def test_a_background_transaction_starts_after_the_window_under_way(tmp_path: Path) -> None:
    """On a real engine: a background thread's transaction waits for the window being
    built (its own work shorter than one wait's bound), and the window is whole."""
    engine = ContextEngine(home=tmp_path, jobs="manual", embeddings={"provider": "hashing"})
    try:
        session = engine.create_session(user_id="u1")
        session.add_message("user", "find the order 4411 and refund it")
        # A first window imports and compiles what every later one uses (tens of ms on a
        # busy machine): built once before, so the window below stays within one wait.
        session.build_context(query="refund", budget=2000)
        started_read: list[float] = []
        window_done: list[float] = []
        gate = threading.Event()

        def background_read() -> int:
            gate.wait(5)
            with engine.db.read():
                started_read.append(time.perf_counter())
            return 0

        thread, _ = in_background(background_read)
        original = engine.context_builder.build

        def slow_build(*args: object, **kwargs: object) -> object:
            gate.set()
            time.sleep(0.06)  # the window's own work (under one wait's bound)
            window = original(*args, **kwargs)  # type: ignore[arg-type]
            window_done.append(time.perf_counter())
            return window

        engine.context_builder.build = slow_build  # type: ignore[method-assign]
        window = session.build_context(query="refund", budget=2000)
        thread.join(5)
        assert started_read and window_done and started_read[0] >= window_done[0]
        assert any("4411" in str(m.get("content")) for m in window.messages)
    finally:
        engine.close()


@pytest.mark.parametrize("step", ["append", "turn begin", "turn end", "window's session row"])
def test_the_agents_calls_are_foreground_calls_from_their_first_read(
    tmp_path: Path, step: str
) -> None:
    """Every database access an agent's step makes runs inside its foreground call:
    outside it, a background thread that holds the interpreter lock keeps it for the
    default switch interval (5 ms) at each hand-over (the session row a window reads
    first was once read outside it)."""
    engine = ContextEngine(home=tmp_path, jobs="manual", embeddings={"provider": "hashing"})
    seen: list[bool] = []
    try:
        session = engine.create_session(user_id="u1")
        service = engine._service
        owner, name = {
            "append": (service.preparer, "prepare_batch"),
            "turn begin": (service, "begin_turn"),
            "turn end": (service, "end_turn"),
            "window's session row": (service, "info"),
        }[step]
        if step == "window's session row":
            session.add_message("user", "hello")
        original = getattr(owner, name)

        def probe(*args: object, **kwargs: object) -> object:
            seen.append(foreground_busy())
            return original(*args, **kwargs)

        setattr(owner, name, probe)
        if step == "append":
            session.add_message("user", "hello")
        elif step == "window's session row":
            window = session.build_context(query="hello", budget=500)
            assert window.messages
        else:
            with session.turn() as turn:
                turn.add_message("user", "hello")
        assert seen and all(seen)
        assert not foreground_busy()
    finally:
        engine.close()


def test_the_switch_interval_is_short_while_a_foreground_call_is_under_way() -> None:
    # A thread that gives the interpreter lock up (a database call, a helper embedding
    # the query) gets it back within the switch interval: short while the agent waits.
    before = sys.getswitchinterval()
    assert before > priority.FOREGROUND_SWITCH_INTERVAL
    with foreground():
        assert sys.getswitchinterval() == priority.FOREGROUND_SWITCH_INTERVAL
        with foreground():  # re-entrant
            assert sys.getswitchinterval() == priority.FOREGROUND_SWITCH_INTERVAL
        assert sys.getswitchinterval() == priority.FOREGROUND_SWITCH_INTERVAL
    assert sys.getswitchinterval() == before
    with pytest.raises(RuntimeError), foreground():
        raise RuntimeError("the call failed")
    assert sys.getswitchinterval() == before


def test_overlapping_requests_for_a_short_switch_interval_restore_the_first() -> None:
    # A model's load (on its thread) and the agent's calls ask for it at overlapping
    # times: the shortest asked holds while any is under way, then the user's own.
    before = sys.getswitchinterval()
    loading = threading.Event()
    loaded = threading.Event()

    def load() -> None:
        with priority.switch_interval.at_most(0.001):
            loading.set()
            loaded.wait(10)

    loader = threading.Thread(target=load)
    call = foreground()
    call.__enter__()  # the agent's call starts first...
    loader.start()
    assert loading.wait(10)
    assert sys.getswitchinterval() == priority.FOREGROUND_SWITCH_INTERVAL
    call.__exit__(None, None, None)  # ...and ends while the load goes on
    assert sys.getswitchinterval() == 0.001
    loaded.set()
    loader.join(10)
    assert sys.getswitchinterval() == before
