"""Each trigger marks a session exactly when it should, and not one event before."""

from __future__ import annotations

from pathlib import Path

from agentctx import ContextEngine
from agentctx.events import EventType
from agentctx.hitl import HitlConfig, install_hitl
from agentctx.hitl.triggers import TriggerState, scan
from hitl.hitl_support import call_tool, flag_of, hitl_events, needed_events


def test_consecutive_tool_failures_fire_at_n_and_not_before(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig(consecutive_tool_failures=3))
    session = engine.create_session(user_id="u1")
    with session.turn():
        first = call_tool(session, "click", ok=False)
        second = call_tool(session, "click", ok=False)
    # N - 1 failures: evaluated at the turn's end, nothing marked.
    assert hitl.needs_human("u1") == []
    assert hitl_events(session) == []
    assert flag_of(hitl, "u1", session.id).status == "none"
    with session.turn() as turn:
        third = call_tool(session, "click", ok=False)
    flags = hitl.needs_human("u1")
    assert [f.session_id for f in flags] == [session.id]
    flag = flags[0]
    assert flag.trigger == "tool_failures"
    assert flag.event_ids == (first.event_id, second.event_id, third.event_id)
    assert flag.turn_id == turn.turn_id
    assert "'click' failed 3 times" in (flag.reason or "")
    (event,) = hitl_events(session)
    assert event.payload == {
        "status": "needed",
        "trigger": "tool_failures",
        "reason": flag.reason,
        "event_ids": [first.event_id, second.event_id, third.event_id],
        "turn_id": turn.turn_id,
    }
    assert flag.hitl_event_id == event.event_id


def test_a_success_of_the_tool_resets_its_run_but_other_tools_do_not(
    engine: ContextEngine,
) -> None:
    hitl = install_hitl(engine, HitlConfig(consecutive_tool_failures=3))
    reset = engine.create_session(user_id="u1")
    with reset.turn():
        call_tool(reset, "click", ok=False)
        call_tool(reset, "click", ok=False)
        call_tool(reset, "click", ok=True)
        call_tool(reset, "click", ok=False)
        call_tool(reset, "click", ok=False)
    assert not flag_of(hitl, "u1", reset.id).needed
    assert hitl_events(reset) == []

    mixed = engine.create_session(user_id="u1")
    with mixed.turn():
        call_tool(mixed, "click", ok=False)
        call_tool(mixed, "type", ok=True)  # another tool's success: click's run goes on
        call_tool(mixed, "type", ok=False)
        call_tool(mixed, "click", ok=False)
        last = call_tool(mixed, "click", ok=False)
    flag = flag_of(hitl, "u1", mixed.id)
    assert flag.needed
    assert flag.event_ids[-1] == last.event_id
    assert len(flag.event_ids) == 3
    assert [f.session_id for f in hitl.needs_human("u1")] == [mixed.id]


def test_results_of_calls_evaluated_earlier_are_named_by_their_call(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig(consecutive_tool_failures=2))
    session = engine.create_session(user_id="u1")
    calls = [session.add_tool_call("scroll", {"dy": i}) for i in range(2)]
    hitl.evaluate("u1", session.id)  # the calls are behind the evaluation from now on
    session.add_tool_result(calls[0].call_id, content="no page", is_error=True)
    assert not flag_of(hitl, "u1", session.id).needed
    session.add_tool_result(calls[1].call_id, content="no page", is_error=True)
    flag = flag_of(hitl, "u1", session.id)
    assert flag.needed
    assert "'scroll'" in (flag.reason or "")


def test_parse_failure_fires_on_the_parse_error_only(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig())
    session = engine.create_session(user_id="u1")
    session.add_event("error", payload={"error_type": "timeout", "message": "slow"})
    session.add_event("error", payload={"error_code": "llm_unavailable"})
    assert not flag_of(hitl, "u1", session.id).needed
    with session.turn() as turn:
        session.add_message("assistant", "{not json")
        bad = session.add_event(
            "error", payload={"error_type": "parse_error", "message": "expected '}'"}
        )
    flag = flag_of(hitl, "u1", session.id)
    assert flag.needed
    assert flag.trigger == "parse_failure"
    assert flag.event_ids == (bad.event_id,)
    assert flag.turn_id == turn.turn_id
    assert "expected '}'" in (flag.reason or "")

    # Seed 003's names count too.
    other = engine.create_session(user_id="u1")
    other.add_event("error", payload={"error_code": "reflector_parse_failed"})
    assert flag_of(hitl, "u1", other.id).trigger == "parse_failure"


def test_parse_failure_can_be_switched_off(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig(parse_failure=False))
    session = engine.create_session(user_id="u1")
    session.add_event("error", payload={"error_type": "parse_error"})
    assert not hitl.evaluate("u1", session.id).needed


def test_low_confidence_fires_below_the_threshold_only(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig(min_confidence=0.5))
    session = engine.create_session(user_id="u1")
    session.add_message("assistant", "probably", metadata={"confidence": 0.5})  # not below
    session.add_message("assistant", "sure", metadata={"confidence": True})  # not a number
    session.add_event("reflection", payload={"confidence": "low"})  # not a number
    assert not flag_of(hitl, "u1", session.id).needed
    low = session.add_event("reflection", "steps missing", payload={"confidence": 0.49})
    flag = flag_of(hitl, "u1", session.id)
    assert flag.needed
    assert flag.trigger == "low_confidence"
    assert flag.event_ids == (low.event_id,)
    assert "0.49" in (flag.reason or "")

    from_metadata = engine.create_session(user_id="u1")
    from_metadata.add_message("assistant", "a guess", metadata={"confidence": 0.1})
    assert flag_of(hitl, "u1", from_metadata.id).trigger == "low_confidence"


def test_switched_off_triggers_and_a_disabled_job(engine: ContextEngine) -> None:
    hitl = install_hitl(
        engine, HitlConfig(consecutive_tool_failures=0, min_confidence=None, enabled=True)
    )
    session = engine.create_session(user_id="u1")
    with session.turn():
        for _ in range(5):
            call_tool(session, "click", ok=False)
        session.add_message("assistant", "no idea", metadata={"confidence": 0.0})
    assert not hitl.evaluate("u1", session.id).needed


def test_with_the_job_disabled_only_an_explicit_evaluation_marks(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, hitl={"enabled": False}) as engine:
        hitl = engine.hitl
        session = engine.create_session(user_id="u1")
        with session.turn():
            for _ in range(3):
                call_tool(session, "click", ok=False)
        assert hitl.flag("u1", session.id) is None  # never evaluated
        assert hitl.evaluate("u1", session.id).needed
        assert len(needed_events(session)) == 1


def test_scan_counts_runs_across_calls_and_ignores_hitl_events(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    with session.turn():
        call_tool(session, "click", ok=False)
        call_tool(session, "click", ok=False)
    events = session.events()
    config = HitlConfig(consecutive_tool_failures=3)
    state = TriggerState()
    assert scan(events, state, config) == []
    assert len(state.streaks["click"]) == 2
    session.add_event("hitl", payload={"confidence": 0.0, "status": "needed"})
    with session.turn():
        call_tool(session, "click", ok=False)
    rest = session.events(start_seq=events[-1].seq + 1)
    assert any(e.type is EventType.HITL for e in rest)
    known = {e.call_id: "click" for e in events if e.type is EventType.TOOL_CALL and e.call_id}
    (finding,) = scan(rest, TriggerState.from_json(state.to_json()), config, known_calls=known)
    assert finding.trigger == "tool_failures"
