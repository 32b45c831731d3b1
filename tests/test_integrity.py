"""Tamper evidence, ordering, compare-and-set and idempotency, on both backends."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from agentctx import (
    ContextEngine,
    EventDraft,
    EventMeta,
    EventType,
    IdempotencyConflict,
    InvalidEvent,
    StaleSession,
    TextPart,
)


def _draft(body: str, **kwargs: object) -> EventDraft:
    return EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text=body),), **kwargs)  # type: ignore[arg-type]


def _session_with_events(engine: ContextEngine, count: int = 6):  # type: ignore[no-untyped-def]
    session = engine.create_session(user_id="u1", agent_id="helper")
    session.append(*[_draft(f"message {i}") for i in range(count)])
    return session


def _sql(engine: ContextEngine, statement: str, **params: object) -> None:
    with engine.db.engine.begin() as conn:
        conn.execute(text(statement), params)


def test_seq_is_gap_free_and_hash_chained(engine: ContextEngine) -> None:
    session = _session_with_events(engine, 5)
    session.add_message("assistant", "reply")
    events = session.events()
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6]
    assert len({e.hash for e in events}) == 6
    assert session.refresh().last_hash == events[-1].hash
    report = session.verify()
    assert report.ok and report.events_checked == 6 and report.first_bad_seq is None


@pytest.mark.parametrize("column", ["parts", "payload", "meta"])
def test_modified_event_row_fails_verify_at_that_seq(engine: ContextEngine, column: str) -> None:
    session = _session_with_events(engine)
    new_value = '[{"kind": "text", "text": "forged"}]' if column == "parts" else '{"forged": true}'
    cast = "CAST(:v AS JSONB)" if engine.db.dialect == "postgresql" else ":v"
    _sql(
        engine,
        f"UPDATE events SET {column} = {cast} WHERE session_id = :s AND seq = 4",
        v=new_value,
        s=session.id,
    )
    report = session.verify()
    assert not report.ok
    assert report.first_bad_seq == 4
    assert engine.verify(session.id, user_id="u1").first_bad_seq == 4


def test_modified_scalar_column_fails_verify(engine: ContextEngine) -> None:
    session = _session_with_events(engine)
    _sql(
        engine,
        "UPDATE events SET type = 'agent_response' WHERE session_id = :s AND seq = 2",
        s=session.id,
    )
    assert session.verify().first_bad_seq == 2


def test_removed_event_fails_verify(engine: ContextEngine) -> None:
    session = _session_with_events(engine)
    _sql(engine, "DELETE FROM events WHERE session_id = :s AND seq = 3", s=session.id)
    report = session.verify()
    assert not report.ok and report.first_bad_seq == 3
    assert "missing" in (report.reason or "")


def test_removed_tail_fails_verify(engine: ContextEngine) -> None:
    session = _session_with_events(engine)
    _sql(engine, "DELETE FROM events WHERE session_id = :s AND seq = 6", s=session.id)
    report = session.verify()
    assert not report.ok and report.first_bad_seq == 6


def test_reordered_events_fail_verify(engine: ContextEngine) -> None:
    session = _session_with_events(engine)
    # Swap seq 2 and 3 through a free temporary value.
    _sql(engine, "UPDATE events SET seq = 1000 WHERE session_id = :s AND seq = 2", s=session.id)
    _sql(engine, "UPDATE events SET seq = 2 WHERE session_id = :s AND seq = 3", s=session.id)
    _sql(engine, "UPDATE events SET seq = 3 WHERE session_id = :s AND seq = 1000", s=session.id)
    assert session.verify().first_bad_seq == 2


def test_rehashing_one_event_is_caught_by_the_next(engine: ContextEngine) -> None:
    """Recomputing the hash of a forged event still breaks the chain at the next event."""
    from agentctx.storage.chain import chain_hash

    session = _session_with_events(engine)
    events = session.events()
    forged = events[2].model_dump(mode="python")
    forged["parts"] = [{"kind": "text", "text": "forged"}]
    new_hash = chain_hash(events[1].hash, forged)
    cast = "CAST(:p AS JSONB)" if engine.db.dialect == "postgresql" else ":p"
    _sql(
        engine,
        f"UPDATE events SET parts = {cast}, hash = :h WHERE session_id = :s AND seq = 3",
        p='[{"kind": "text", "text": "forged"}]',
        h=new_hash,
        s=session.id,
    )
    assert session.verify().first_bad_seq == 4


def test_stale_state_write_changes_nothing(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1", state={"step": 1})
    other = engine.get_session(session.id, user_id="u1")
    session.update_state({"step": 2})
    assert session.state_version == 1
    events_before = session.refresh().last_seq
    with pytest.raises(StaleSession) as caught:
        other.update_state({"step": 99})  # other still holds version 0
    assert caught.value.expected == 0 and caught.value.actual == 1
    fresh = engine.get_session(session.id, user_id="u1")
    assert fresh.state == {"step": 2}
    assert fresh.state_version == 1
    assert fresh.info.last_seq == events_before
    assert fresh.verify().ok


def test_state_update_is_logged_as_a_state_delta_event(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    session.update_state({"a": 1})
    session.update_state({"b": 2})
    session.update_state({"c": 3}, replace=True)
    assert session.state == {"c": 3}
    deltas = session.events(types=[EventType.STATE_DELTA])
    assert [d.payload["state_version"] for d in deltas] == [1, 2, 3]
    assert deltas[2].payload["replace"] is True


def test_append_with_expected_last_seq(engine: ContextEngine) -> None:
    session = _session_with_events(engine, 3)
    session.append(_draft("ok"), expected_last_seq=3)
    with pytest.raises(StaleSession):
        session.append(_draft("late"), expected_last_seq=3)
    assert [e.text for e in session.events(start_seq=4)] == ["ok"]


def test_retried_append_stores_once(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    first = session.add_message("user", "pay the invoice", idempotency_key="req-42")
    again = session.add_message("user", "pay the invoice", idempotency_key="req-42")
    assert again.event_id == first.event_id and again.seq == first.seq
    assert len(session.events()) == 1
    # A retry of a batch with a stale expected seq still returns the stored events.
    batch = [_draft("a", idempotency_key="b-1"), _draft("b", idempotency_key="b-2")]
    stored = session.append(*batch, expected_last_seq=1)
    replay = session.append(*batch, expected_last_seq=1)
    assert [e.seq for e in replay] == [e.seq for e in stored] == [2, 3]
    assert len(session.events()) == 3
    assert session.verify().ok


def test_repeated_event_id_stores_once(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    first = session.append(_draft("hello", event_id="evt-1"))[0]
    again = session.append(_draft("hello", event_id="evt-1"))[0]
    assert first == again
    assert len(session.events()) == 1


def test_reused_key_for_other_content_is_a_conflict(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    session.add_message("user", "pay 10", idempotency_key="k")
    with pytest.raises(IdempotencyConflict):
        session.add_message("user", "pay 1000", idempotency_key="k")
    assert [e.text for e in session.events()] == ["pay 10"]


def test_batch_is_all_or_nothing(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    session.add_message("user", "before")
    bad = EventDraft(type=EventType.TOOL_RESULT, call_id="nope", parts=(TextPart(text="x"),))
    with pytest.raises(InvalidEvent):
        session.append(_draft("one"), _draft("two"), bad)
    assert [e.text for e in session.events()] == ["before"]
    assert session.verify().ok


def test_tool_results_must_answer_a_call_once(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    with pytest.raises(InvalidEvent, match="unknown call_id"):
        session.add_tool_result("call_missing", content="x")
    with pytest.raises(InvalidEvent, match="needs the call_id"):
        session.add_tool_result(None, content="x")
    with session.turn() as turn:
        call = turn.add_tool_call("search", {"q": "flights"})
        with pytest.raises(InvalidEvent, match="no tool_result yet"):
            turn.add_tool_call("search", {"q": "x"}, call_id=call.call_id)
        result = turn.add_tool_result(call.call_id, content="3 results")
        with pytest.raises(InvalidEvent, match="already has a tool_result"):
            turn.add_tool_result(call.call_id, content="again")
    assert result.call_id == call.call_id
    assert result.meta.tool_name == "search"
    assert result.meta.status == "ok"


def test_a_call_id_is_used_again_once_its_call_has_its_result(engine: ContextEngine) -> None:
    """Real transcripts reuse a call id after its result came back: the second call is
    accepted, and its result links to it (the latest unanswered call with that id)."""
    session = engine.create_session(user_id="u1")
    with session.turn() as turn:
        turn.add_tool_call("search_direct", {"q": "JFK-SEA"}, call_id="call_1")
        turn.add_tool_result("call_1", content="no direct flights")
        turn.add_tool_call("search_onestop", {"q": "JFK-SEA"}, call_id="call_1")
        second = turn.add_tool_result("call_1", content="HAT057 via ATL")
        with pytest.raises(InvalidEvent, match="already has a tool_result"):
            turn.add_tool_result("call_1", content="a third answer")
    assert second.meta.tool_name == "search_onestop"
    # A batch may reuse the id too, call and result in order.
    reused = session.append(
        EventDraft(type=EventType.TOOL_CALL, call_id="call_1", meta=EventMeta(tool_name="book")),
        EventDraft(type=EventType.TOOL_RESULT, call_id="call_1", parts=(TextPart(text="ok"),)),
    )
    assert reused[1].meta.tool_name == "book"
    window = session.build_context(budget=4000)
    tool_messages = [m for m in window.messages if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == ["no direct flights", "HAT057 via ATL", "ok"]
    assert session.verify().ok


def test_call_and_result_in_one_batch(engine: ContextEngine) -> None:
    from agentctx import EventMeta, JsonPart

    session = engine.create_session(user_id="u1")
    call = EventDraft(
        type=EventType.TOOL_CALL,
        call_id="c1",
        parts=(JsonPart(data={"q": 1}),),
        payload={"name": "lookup"},
        meta=EventMeta(tool_name="lookup"),
    )
    result = EventDraft(type=EventType.TOOL_RESULT, call_id="c1", parts=(TextPart(text="ok"),))
    stored = session.append(call, result)
    assert [e.type for e in stored] == [EventType.TOOL_CALL, EventType.TOOL_RESULT]
    assert stored[1].meta.tool_name == "lookup"
