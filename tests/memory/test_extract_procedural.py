"""Procedural statistics from the tool calls and results a real engine stored."""

from __future__ import annotations

import pytest

from agentctx import ContextEngine
from agentctx.events import Event, EventType
from agentctx.memory.extract import PROCEDURAL_VERSION, extract_procedural
from agentctx.memory.models import MemoryKind, ProceduralData
from agentctx.sessions.session import Session


def booking_turn(
    session: Session, ask: str, *, fail: bool = False, retry: bool = False
) -> list[Event]:
    with session.turn() as turn:
        written = [turn.add_message("user", ask)]
        searches = 2 if retry else 1
        for _ in range(searches):
            call = turn.add_tool_call("search_flights", {"to": ask.rsplit(maxsplit=1)[-1]})
            written += [call, turn.add_tool_result(call.call_id, content="3 offers")]
        call = turn.add_tool_call("open_offer", {"offer": 1})
        written += [call, turn.add_tool_result(call.call_id, content="offer AB123, 420 EUR")]
        call = turn.add_tool_call("book", {"offer": 1})
        if fail:
            result = turn.add_tool_result(
                call.call_id, content="Error: no seats available on flight AB123", is_error=True
            )
        else:
            result = turn.add_tool_result(call.call_id, content="booked, ref XY7")
        written += [call, result]
        turn.add_message("assistant", "done" if not fail else "sorry, that failed")
    return written


def test_statistics_per_task_and_path_over_several_turns(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    first = booking_turn(session, "Book a flight to Tokyo")
    failed = booking_turn(session, "Please book a flight to Osaka", fail=True)
    retried = booking_turn(session, "book a flight to Paris", retry=True)
    weather: list[Event] = []
    with pytest.raises(RuntimeError), session.turn() as turn:
        weather.append(turn.add_message("user", "Check the weather in Rome"))
        call = turn.add_tool_call("get_weather", {"city": "Rome"})
        weather += [call, turn.add_tool_result(call.call_id, content="sunny, 24C")]
        raise RuntimeError("upstream timeout")
    session.add_message("user", "thanks, that is all")  # a turn without tools: no candidate

    events = session.events()
    weather.append(next(e for e in events if e.type == EventType.ERROR))
    found = extract_procedural(events)

    assert [c.subject for c in found] == [
        "book flight: search_flights → open_offer → book",
        "check weather: get_weather",
    ]
    booking, forecast = found
    assert booking.kind is MemoryKind.PROCEDURAL
    assert ProceduralData.model_validate(booking.data) == ProceduralData(
        scenario="book flight",
        tools=("search_flights", "open_offer", "book"),
        successes=2,
        failures=1,
        failure_reasons={"no seats available on flight": 1},
        best_iterations=3,  # the Tokyo turn's three calls beat the Paris turn's four
    )
    assert booking.content == (
        "For 'book flight': search_flights → open_offer → book worked 2/3 (67%); "
        "most common failure: no seats available on flight"
    )
    expected_ids = [
        e.event_id for e in first + failed + retried if e.type != EventType.AGENT_RESPONSE
    ]
    assert [s.event_id for s in booking.sources] == expected_ids
    assert all(s.extractor_version == PROCEDURAL_VERSION for s in booking.sources)
    assert booking.ts == retried[-1].ts

    # The weather turn's only tool result was fine, but the turn ended in an error.
    assert ProceduralData.model_validate(forecast.data) == ProceduralData(
        scenario="check weather",
        tools=("get_weather",),
        successes=0,
        failures=1,
        failure_reasons={"runtime error": 1},
        best_iterations=None,
    )
    assert forecast.content == (
        "For 'check weather': get_weather worked 0/1 (0%); most common failure: runtime error"
    )
    assert [s.event_id for s in forecast.sources] == [e.event_id for e in weather]
    assert booking.confidence > forecast.confidence  # three runs say more than one


def test_rerun_gives_the_same_candidates_and_secrets_stay_out(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    key = "sk-proj-AbCdEf1234567890abcdefGHIJKL"
    with session.turn() as turn:
        turn.add_message("user", f"deploy the app with key {key}")
        call = turn.add_tool_call("deploy", {"env": "prod"})
        turn.add_tool_result(call.call_id, content=f"Error: key {key} rejected", is_error=True)
    events = session.events()
    found = extract_procedural(events)
    assert found == extract_procedural(events)
    (candidate,) = found
    data = ProceduralData.model_validate(candidate.data)
    # The task label and the failure reason are read from redacted text, secrets dropped.
    assert (data.scenario, data.failures, data.failure_reasons) == ("deploy", 1, {"error": 1})
    assert key not in candidate.model_dump_json()
