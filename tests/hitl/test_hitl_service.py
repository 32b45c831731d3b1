"""Marking is idempotent (reruns, crashes, races), resolving clears, flags are per user."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from agentctx import ContextEngine
from agentctx.errors import InvalidInput, SessionNotFound
from agentctx.hitl import HitlConfig, HitlFlag, HitlService, install_hitl
from hitl.hitl_support import call_tool, flag_of, hitl_events, needed_events


def _three_failures(engine: ContextEngine, user_id: str = "u1") -> Any:
    session = engine.create_session(user_id=user_id)
    with session.turn():
        for _ in range(3):
            call_tool(session, "click", ok=False)
    return session


def test_evaluating_again_records_no_second_hitl_event(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig())
    session = _three_failures(engine)
    marked = flag_of(hitl, "u1", session.id)
    assert marked is not None and marked.needed
    for _ in range(2):
        assert hitl.evaluate("u1", session.id) == marked
    engine.jobs.run_pending()
    assert len(hitl_events(session)) == 1
    # More failures while it waits for a human change nothing either.
    with session.turn():
        call_tool(session, "click", ok=False)
    assert hitl.evaluate("u1", session.id) == marked
    assert len(hitl_events(session)) == 1


@pytest.fixture
def quiet_engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """An engine whose triggers run only when evaluated explicitly (no turn-end job)."""
    with ContextEngine(url=db_url, home=home, hitl={"enabled": False}) as engine:
        yield engine


def test_a_crash_between_the_event_and_the_flag_is_repaired_by_the_rerun(
    quiet_engine: ContextEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The hitl event is written first; if writing the flag dies, the rerun finds the
    same event under its idempotency key and writes the flag for it."""
    engine = quiet_engine
    hitl = engine.hitl
    session = _three_failures(engine)

    def crash(self: HitlService, **kwargs: Any) -> bool:
        raise RuntimeError("killed before the flag was written")

    with monkeypatch.context() as patched:
        patched.setattr(HitlService, "_mark", crash)
        with pytest.raises(RuntimeError):
            hitl.evaluate("u1", session.id)
    (written,) = hitl_events(session)
    assert hitl.needs_human("u1") == []
    flag = hitl.evaluate("u1", session.id)
    assert flag.needed
    assert flag.hitl_event_id == written.event_id
    assert hitl_events(session) == [written]


def test_racing_evaluators_record_one_event(quiet_engine: ContextEngine) -> None:
    engine = quiet_engine
    hitl = engine.hitl
    session = _three_failures(engine)
    barrier = threading.Barrier(4)
    results: list[HitlFlag] = []
    errors: list[BaseException] = []

    def evaluate() -> None:
        barrier.wait()
        try:
            results.append(hitl.evaluate("u1", session.id))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=evaluate) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert len(results) == 4
    assert all(r.needed for r in results)
    assert len({r.hitl_event_id for r in results}) == 1
    assert len(hitl_events(session)) == 1


def test_resolve_clears_and_the_triggers_start_over(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig())
    session = _three_failures(engine)
    marked = flag_of(hitl, "u1", session.id)
    assert marked is not None
    resolved = hitl.resolve("u1", session.id, "fixed the selector, write to ops@example.com")
    assert resolved.status == "resolved"
    assert resolved.resolved_at is not None
    assert resolved.note is not None and "[EMAIL]" in resolved.note
    assert "ops@example.com" not in resolved.note
    assert hitl.needs_human("u1") == []
    needed, done = hitl_events(session)
    assert needed.event_id == marked.hitl_event_id
    assert done.payload["status"] == "resolved"
    assert done.payload["event_ids"] == [marked.hitl_event_id]
    assert done.payload["turn_id"] == marked.turn_id
    assert "[EMAIL]" in done.payload["note"]
    # A retried resolve changes nothing.
    assert hitl.resolve("u1", session.id, "again") == resolved
    assert len(hitl_events(session)) == 2
    # The failures before the resolution no longer count: two more do not mark ...
    with session.turn():
        call_tool(session, "click", ok=False)
        call_tool(session, "click", ok=False)
    assert not flag_of(hitl, "u1", session.id).needed
    # ... a third does, with a new hitl event.
    with session.turn():
        call_tool(session, "click", ok=False)
    again = flag_of(hitl, "u1", session.id)
    assert again.needed and again.hitl_event_id != marked.hitl_event_id
    assert again.note is None and again.resolved_at is None
    assert len(needed_events(session)) == 2
    assert [f.session_id for f in hitl.needs_human("u1")] == [session.id]


def test_resolving_a_session_that_was_never_marked_is_refused(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig())
    session = engine.create_session(user_id="u1")
    session.add_message("user", "hello")
    with pytest.raises(InvalidInput):
        hitl.resolve("u1", session.id, "nothing to do")
    hitl.evaluate("u1", session.id)
    with pytest.raises(InvalidInput):
        hitl.resolve("u1", session.id, "nothing to do")
    assert hitl_events(session) == []


def test_flags_belong_to_their_user(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig())
    mine = _three_failures(engine, "u1")
    theirs = _three_failures(engine, "u2")
    assert [f.session_id for f in hitl.needs_human("u1")] == [mine.id]
    assert [f.session_id for f in hitl.needs_human("u2")] == [theirs.id]
    for call in (hitl.evaluate, hitl.repro):
        with pytest.raises(SessionNotFound):
            call("u1", theirs.id)
    with pytest.raises(SessionNotFound):
        hitl.resolve("u1", theirs.id, "not mine")
    assert flag_of(hitl, "u2", theirs.id).needed


def test_a_deleted_session_leaves_the_list_and_its_job_is_a_no_op(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig())
    session = _three_failures(engine)
    assert hitl.needs_human("u1")
    session.delete()
    assert hitl.needs_human("u1") == []
    assert hitl.flag("u1", session.id) is None
    with pytest.raises(SessionNotFound):
        hitl.evaluate("u1", session.id)


@pytest.mark.parametrize("lost", ["the progress", "the whole row"])
def test_progress_lost_to_a_power_cut_is_checked_again_with_the_same_result(
    quiet_engine: ContextEngine, lost: str
) -> None:
    """The checker's progress (checked seq and streaks, one row written together) is
    committed without a disk sync of its own: a power cut may take it back to what it
    was, or take the first one away. The same events are then checked again, and the
    session is marked once, at the same failure."""
    engine = quiet_engine
    hitl = engine.hitl
    session = engine.create_session(user_id="u1")
    with session.turn():
        for _ in range(2):
            call_tool(session, "click", ok=False)
    assert not hitl.evaluate("u1", session.id).needed  # two failures: not yet
    with engine.db.write() as conn:  # what a power cut leaves
        if lost == "the whole row":
            conn.execute(text("DELETE FROM hitl_flags WHERE user_id = 'u1'"))
        else:
            conn.execute(
                text("UPDATE hitl_flags SET checked_seq = 0, streaks = '{}' WHERE user_id = 'u1'")
            )
    assert not hitl.evaluate("u1", session.id).needed  # counted again: still two
    with session.turn():
        call_tool(session, "click", ok=False)
    flag = hitl.evaluate("u1", session.id)
    assert flag.needed and flag.trigger == "tool_failures"
    assert len(needed_events(session)) == 1
