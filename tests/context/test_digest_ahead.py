"""The next slide's digest made ahead (:mod:`agentctx.context.digest_ahead`): the window
that slides finds it made, it is the digest the window would have made, and an erasure
or a deleted session under way leaves nothing behind."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from agentctx import ContextEngine
from agentctx.context import builder as builder_module
from agentctx.context import lines
from agentctx.context.digest_ahead import PENDING_SESSIONS, DigestsAhead
from agentctx.sessions.session import Session

BUDGET = 2000


def _turn(session: Session, k: int) -> None:
    with session.turn() as turn:
        turn.add_message("user", f"Look up order ORD-{k:04d} please.")
        call = turn.add_tool_call("get_order", {"order_id": f"ORD-{k:04d}"}, call_id=f"c{k}")
        payload = {"order_id": f"ORD-{k:04d}", "carrier": f"CR-{k % 7}", "notes": "x " * 300}
        turn.add_tool_result(call.call_id, content=json.dumps(payload))
        turn.add_message("assistant", f"Order ORD-{k:04d} is on its way.")


@pytest.fixture
def made_on_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The name of the thread each compact block is made on (not found kept)."""
    names: list[str] = []
    real = lines._compact_block

    def recording(*args: Any, **kwargs: Any) -> Any:
        names.append(threading.current_thread().name)
        return real(*args, **kwargs)

    monkeypatch.setattr(lines, "_compact_block", recording)
    yield names


def _history_start(session: Session, window: Any) -> int | None:
    recent = next(s for s in window.report.sections if s.name == "recent")
    seqs = {e.event_id: e.seq for e in session.events()}
    return min((seqs[i] for i in recent.event_ids), default=None)


def _digest(window: Any) -> tuple[str, ...]:
    return next(s for s in window.report.sections if s.name == "summary").event_ids


def test_the_window_that_slides_finds_its_digest_made_ahead(
    quick_engine: ContextEngine, made_on_threads: list[str]
) -> None:
    session = quick_engine.create_session("u1", "desk")
    ahead = quick_engine.context_builder._digests
    key = (session.user_id, session.id)
    found_ahead = made_here = 0
    previous_start = None
    for k in range(40):
        _turn(session, k)
        guess = ahead._asked.get(key)
        made_on_threads.clear()
        window = session.build_context(query="order status", budget=BUDGET)
        here = made_on_threads.count("MainThread")
        start = _history_start(session, window)
        if _digest(window) and start != previous_start and guess is not None:
            if start == guess[0]:
                assert here == 0  # the slide was guessed: its digest was made ahead
                found_ahead += 1
            else:
                made_here += 1
        previous_start = start
        assert ahead.wait_idle(30)
    assert found_ahead >= 5, (found_ahead, made_here)
    assert found_ahead > made_here


def test_without_the_guess_the_window_that_slides_makes_its_digest(
    quick_engine: ContextEngine, made_on_threads: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The control of the test above: the same session with nothing made ahead."""
    monkeypatch.setattr(DigestsAhead, "submit", lambda *_args: False)
    session = quick_engine.create_session("u1", "desk")
    slides = made_at_slides = 0
    previous_start = None
    for k in range(40):
        _turn(session, k)
        made_on_threads.clear()
        window = session.build_context(query="order status", budget=BUDGET)
        start = _history_start(session, window)
        if _digest(window) and start != previous_start and previous_start is not None:
            slides += 1
            made_at_slides += "MainThread" in made_on_threads
        previous_start = start
    assert slides >= 5 and made_at_slides == slides


def test_a_digest_made_ahead_is_the_one_the_window_would_make(
    quick_engine: ContextEngine,
) -> None:
    session = quick_engine.create_session("u1", "desk")
    builder = quick_engine.context_builder
    shown = 0
    for k in range(30):
        _turn(session, k)
        window = session.build_context(query="order status", budget=BUDGET)
        assert builder._digests.wait_idle(30)
        builder._forget_kept()  # nothing made ahead nor kept: made again on this thread
        again = session.build_context(query="order status", budget=BUDGET)
        assert again.messages == window.messages
        shown += bool(_digest(window))
    assert shown >= 10


@pytest.fixture
def held_guess(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[tuple[threading.Event, threading.Event]]:
    """(started, release): a digest made ahead waits for ``release`` once started."""
    started, release = threading.Event(), threading.Event()
    real = builder_module.digest_of

    def held(*args: Any, **kwargs: Any) -> Any:
        if threading.current_thread().name == "agentctx-digest":
            started.set()
            assert release.wait(30)
        return real(*args, **kwargs)

    monkeypatch.setattr(builder_module, "digest_of", held)
    yield started, release
    release.set()


def _slid(quick_engine: ContextEngine, user_id: str, started: threading.Event) -> Session:
    """A session whose windows slid until a digest was guessed (and started ahead)."""
    session = quick_engine.create_session(user_id, "desk")
    for k in range(40):
        _turn(session, k)
        session.build_context(query="order status", budget=BUDGET)
        if started.wait(0.5):
            return session
    raise AssertionError("no digest was made ahead")


def test_an_erasure_while_a_digest_is_made_ahead_leaves_nothing_kept(
    quick_engine: ContextEngine, held_guess: tuple[threading.Event, threading.Event]
) -> None:
    started, release = held_guess
    builder = quick_engine.context_builder
    _slid(quick_engine, "u1", started)
    quick_engine.create_session("u2", "desk").add_message("user", "hi")
    quick_engine.delete_user_data("u2")  # clears what windows keep by text
    assert not any(len(blocks) for blocks in builder._known_blocks.values())
    release.set()
    assert builder._digests.wait_idle(30)
    # The guess under way was made from text kept before the erasure: not kept after it.
    assert not any(len(blocks) for blocks in builder._known_blocks.values())


def test_a_guess_for_a_session_deleted_meanwhile_fails_quietly(
    quick_engine: ContextEngine, held_guess: tuple[threading.Event, threading.Event]
) -> None:
    started, release = held_guess
    builder = quick_engine.context_builder
    gone = _slid(quick_engine, "u1", started)
    quick_engine.delete_session(gone.id, gone.user_id)
    release.set()
    assert builder._digests.wait_idle(30)
    kept_before = sum(len(b) for b in builder._known_blocks.values())
    started.clear()
    other = _slid(quick_engine, "u3", started)  # the thread serves the next guess
    assert builder._digests.wait_idle(30)
    assert sum(len(b) for b in builder._known_blocks.values()) > kept_before
    assert other.build_context(query="order status", budget=BUDGET).messages


def test_closing_the_engine_waits_for_the_guess_under_way(
    quick_engine: ContextEngine, held_guess: tuple[threading.Event, threading.Event]
) -> None:
    started, release = held_guess
    _slid(quick_engine, "u1", started)
    thread = quick_engine.context_builder._digests._thread
    assert thread is not None and thread.is_alive()
    threading.Timer(0.2, release.set).start()
    quick_engine.close()
    assert not thread.is_alive()


def test_the_newest_guess_per_session_is_made_once() -> None:
    ahead = DigestsAhead()
    made: list[str] = []
    gate = threading.Event()
    try:
        assert ahead.submit(("u", "blocker"), (1, 10), lambda: (gate.wait(10), None)[1])
        assert ahead.submit(("u", "s"), (5, 10), lambda: made.append("old"))
        assert ahead.submit(("u", "s"), (9, 10), lambda: made.append("new"))  # replaces it
        assert not ahead.submit(("u", "s"), (9, 10), lambda: made.append("again"))
        gate.set()
        assert ahead.wait_idle(10)
        assert made == ["new"]
        assert not ahead.submit(("u", "s"), (9, 10), lambda: made.append("again"))  # asked
        ahead.forget()
        assert ahead.submit(("u", "s"), (9, 10), lambda: made.append("after forget"))
        assert ahead.wait_idle(10)
        assert made == ["new", "after forget"]
    finally:
        ahead.close()


def test_guesses_wait_for_at_most_so_many_sessions() -> None:
    ahead = DigestsAhead()
    gate = threading.Event()
    try:
        assert ahead.submit(("u", "blocker"), (1, 1), lambda: (gate.wait(10), None)[1])
        assert ahead.wait_idle(0.05) is False  # the blocker is under way
        queued = [
            ahead.submit(("u", f"s{i}"), (1, 1), lambda: None) for i in range(PENDING_SESSIONS + 5)
        ]
        assert queued.count(True) == PENDING_SESSIONS
        gate.set()
        assert ahead.wait_idle(10)
    finally:
        ahead.close()
    assert not ahead.submit(("u", "late"), (1, 1), lambda: None)  # closed
