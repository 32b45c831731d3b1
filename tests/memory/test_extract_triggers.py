"""Event triggers of extraction (seed 003 A.1.3) on events a real engine stored."""
# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

from agentctx import ContextEngine
from agentctx.events import EventType
from agentctx.memory.extract import SIGNALS, extraction_signals


def test_each_trigger_and_a_quiet_turn(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    with session.turn() as quiet:
        quiet.add_message("user", "hello")
        call = quiet.add_tool_call("search", {"q": "x"})
        quiet.add_tool_result(call.call_id, content="ok")
        quiet.add_event(EventType.REFLECTION, "confidence: 0.9, the answer was complete")
        quiet.add_message("assistant", "hi", metadata={"confidence": 0.8})
    with session.turn() as failing:
        call = failing.add_tool_call("search", {"q": "y"})
        failing.add_tool_result(call.call_id, content="boom", is_error=True)
    with session.turn() as unsure:
        unsure.add_message("assistant", "maybe?", metadata={"confidence": 0.2})
    with session.turn() as unsure_reflection:
        unsure_reflection.add_event(EventType.REFLECTION, "置信度：0.3，答案可能不完整")
    with session.turn() as payload_reflection:
        payload_reflection.add_event(EventType.REFLECTION, payload={"confidence": 0.1})
    with session.turn() as reflective:
        reflective.add_event(EventType.REFLECTION, "confidence 0.7: fine")
        reflective.add_event(EventType.REFLECTION, "confidence 0.8: still fine")
    with session.turn() as ending:
        ending.add_event(EventType.FINAL, "here is the itinerary")
    with session.turn() as erroring:
        erroring.add_event(EventType.ERROR, payload={"error_type": "Timeout", "message": "x"})

    def signals(turn_id: str) -> set[str]:
        return extraction_signals(session.events(turn_id=turn_id))

    assert signals(quiet.turn_id) == set()
    assert signals(failing.turn_id) == {"error"}
    assert signals(unsure.turn_id) == {"low_confidence"}
    assert signals(unsure_reflection.turn_id) == {"low_confidence"}
    assert signals(payload_reflection.turn_id) == {"low_confidence"}
    assert signals(reflective.turn_id) == {"repeated_reflection"}
    assert signals(ending.turn_id) == {"final"}
    assert signals(erroring.turn_id) == {"error"}
    # Over the whole session every signal shows, but one reflection per turn never repeats.
    assert extraction_signals(session.events()) == set(SIGNALS)
    assert extraction_signals(
        [e for e in session.events() if e.turn_id != reflective.turn_id]
    ) == set(SIGNALS) - {"repeated_reflection"}
