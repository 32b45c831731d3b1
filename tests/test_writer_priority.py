"""The agent's writes go before background writes that wait for SQLite's writer with them.

Background threads (indexing, job bookkeeping, window records) mark themselves; when
the writer is released, a waiting foreground thread gets it first.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from sqlalchemy import text

from agentctx import ContextEngine
from agentctx.priority import ForegroundFirstLock, is_background_thread, mark_background_thread


def _waiter(
    take: Callable[[], None], background: bool, order: list[str], name: str
) -> threading.Thread:
    def run() -> None:
        if background:
            mark_background_thread()
        take()
        order.append(name)

    thread = threading.Thread(target=run, name=name)
    thread.start()
    return thread


def _until_waiting(lock: ForegroundFirstLock, foreground: int, background: int) -> None:
    """Until that many threads of each kind wait for ``lock`` (10 s at most)."""
    deadline = time.monotonic() + 10
    while lock.waiting != (foreground, background):
        assert time.monotonic() < deadline, lock.waiting
        time.sleep(0.005)


def test_a_waiting_foreground_thread_goes_first() -> None:
    lock = ForegroundFirstLock()
    order: list[str] = []

    def take() -> None:
        with lock:
            time.sleep(0.01)

    lock.acquire()
    background = [_waiter(take, True, order, f"background-{i}") for i in range(3)]
    _until_waiting(lock, 0, 3)  # the background threads wait first
    foreground = _waiter(take, False, order, "foreground")
    _until_waiting(lock, 1, 3)
    lock.release()
    for thread in [*background, foreground]:
        thread.join(5)
    assert order[0] == "foreground", order
    assert sorted(order[1:]) == ["background-0", "background-1", "background-2"]


def test_a_background_thread_takes_a_free_lock_at_once() -> None:
    lock = ForegroundFirstLock()
    order: list[str] = []
    thread = _waiter(lock.acquire, True, order, "background")
    thread.join(5)
    assert order == ["background"]
    lock.release()


def test_the_lock_excludes_every_other_holder() -> None:
    lock = ForegroundFirstLock()
    inside = 0
    overlaps = 0

    def work(background: bool) -> None:
        nonlocal inside, overlaps
        if background:
            mark_background_thread()
        for _ in range(200):
            with lock:
                inside += 1
                overlaps += inside > 1
                time.sleep(0)
                inside -= 1

    threads = [threading.Thread(target=work, args=(i % 2 == 0,)) for i in range(6)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert overlaps == 0
    assert inside == 0


def test_releasing_an_unlocked_lock_raises() -> None:
    with pytest.raises(RuntimeError):
        ForegroundFirstLock().release()


def test_the_waiting_threads_are_counted_by_kind() -> None:
    lock = ForegroundFirstLock()
    assert lock.waiting == (0, 0)
    lock.acquire()
    order: list[str] = []
    threads = [
        _waiter(lambda: (lock.acquire(), lock.release()), True, order, "background"),
        _waiter(lambda: (lock.acquire(), lock.release()), False, order, "foreground"),
    ]
    _until_waiting(lock, 1, 1)
    lock.release()
    for thread in threads:
        thread.join(5)
    assert lock.waiting == (0, 0)
    assert order == ["foreground", "background"]


def test_marking_is_per_thread() -> None:
    seen: list[bool] = []
    thread = threading.Thread(target=lambda: (mark_background_thread(), seen.append(True)))
    thread.start()
    thread.join(5)
    assert seen == [True]
    assert not is_background_thread()


def test_the_agents_append_commits_before_background_writes_waiting_with_it(
    tmp_path: Path,
) -> None:
    """On SQLite: while the writer is held, background writers and then the agent ask
    for it; the agent's write commits first: each background write, in its own
    transaction, already sees the agent's event."""
    engine = ContextEngine(url=f"sqlite:///{tmp_path / 'a.db'}", home=tmp_path, jobs="manual")
    try:
        with engine.db.write() as conn:
            conn.execute(text("CREATE TABLE probe (who TEXT, events_seen INTEGER)"))
        session = engine.create_session(user_id="u1")
        done: list[str] = []

        def writer(who: str) -> Callable[[], None]:
            def write() -> None:
                with engine.db.write(durable=False) as conn:
                    conn.execute(
                        text(
                            "INSERT INTO probe (who, events_seen) SELECT :w, count(*) "
                            "FROM events WHERE user_id = 'u1' AND session_id = :s"
                        ),
                        {"w": who, "s": session.id},
                    )

            return write

        lock = engine.db._thread_lock  # the writer's queue in this process
        assert isinstance(lock, ForegroundFirstLock)
        with engine.db.write():  # the writer is busy
            background = [_waiter(writer(f"index-{i}"), True, done, f"index-{i}") for i in range(2)]
            _until_waiting(lock, 0, 2)
            agent = _waiter(
                lambda: session.add_message("user", "the agent's step"), False, done, "agent"
            )
            _until_waiting(lock, 1, 2)
        for thread in [*background, agent]:
            thread.join(10)
        assert sorted(done) == ["agent", "index-0", "index-1"]
        with engine.db.read() as conn:
            seen = dict(conn.execute(text("SELECT who, events_seen FROM probe")).all())
        assert seen == {"index-0": 1, "index-1": 1}, seen
        assert [e.text for e in session.events()] == ["the agent's step"]
    finally:
        engine.close()
