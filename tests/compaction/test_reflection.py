"""Reflections: the agent's inner voice on each assistant message, never in the history.

On SQLite and PostgreSQL: the offline reflection and its signals, the turn-end job,
idempotent writes (reruns, a worker killed inside the write, two workers racing),
the chat model through a real local OpenAI-format server (a good answer, a malformed
one, a failing endpoint, each failure reported), and that a reflection shows up
neither in ``session.events()`` nor in any context window.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, func, select

from agentctx import ContextEngine
from agentctx.compaction.reflection import Reflection, ReflectionConfig, Reflector
from agentctx.context.render import event_text
from agentctx.errors import InvalidInput
from agentctx.events import EventType
from agentctx.jobs import Job
from agentctx.llm.config import llm_from_config
from agentctx.sessions.session import Session
from agentctx.storage.schema import reflections
from llm.openai_chat_server import ChatServer, Reply, start_chat_server

ON = ReflectionConfig(enabled=True)
INNER = "INNER-VOICE-7f3a: the refund answer skipped the damaged-box case"


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(
        url=db_url, home=home, jobs="manual", embeddings={"provider": "hashing"}
    ) as engine:
        yield engine


def reflector(engine: ContextEngine, **kwargs: Any) -> Reflector:
    kwargs.setdefault("config", ON)
    llm = kwargs.pop("llm", None)
    return Reflector(engine.db, engine._service.events, engine.token_counter(), llm, **kwargs)


def stored(engine: ContextEngine) -> int:
    with engine.db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(reflections)).scalar_one())


def refund_turn(session: Session, answer: str) -> int:
    """A turn: a question, a tool call and result, and the answer; returns the answer's seq."""
    with session.turn() as turn:
        turn.add_message("user", "What is the refund policy for damaged laptops?")
        call = turn.add_tool_call("lookup_policy", {"topic": "refunds"})
        turn.add_tool_result(call.call_id, content="Refunds within 30 days; damaged: replace.")
        event = turn.add_message("assistant", answer)
    return event.seq


def turn_job(session: Session, turn_id: str | None) -> Job:
    return Job(
        job_id=1,
        kind="turn_end:reflection",
        user_id=session.user_id,
        session_id=session.id,
        turn_id=turn_id,
        payload={},
        attempts=1,
    )


# The offline reflection ---------------------------------------------------------------


def test_offline_reflection_sees_a_question_the_answer_left_open(eng: ContextEngine) -> None:
    session = eng.create_session(user_id="u1")
    seq = refund_turn(session, "I'm not sure. Could you clarify which order you mean?")
    reflection = reflector(eng).reflect("u1", session.id, seq)
    assert reflection is not None
    assert reflection.method == "offline"
    assert reflection.open_question is True
    assert reflection.confidence == pytest.approx(0.3)
    assert "laptops" in reflection.keywords
    assert "left the question open" in reflection.thought
    assert "refund policy for damaged laptops" in reflection.intent_next
    answer = session.events(types=[EventType.AGENT_RESPONSE])[0]
    assert reflection.answer_tokens == eng.token_counter().count(event_text(answer))
    assert (reflection.seq, reflection.event_id) == (seq, answer.event_id)


def test_offline_reflection_on_an_answered_question_and_on_a_statement(
    eng: ContextEngine,
) -> None:
    session = eng.create_session(user_id="u1")
    seq = refund_turn(session, "Damaged laptops are replaced; refunds run for 30 days.")
    session.add_message("user", "Book the cheapest flight to Oslo on Friday")
    done = session.add_event(EventType.FINAL, "Booked SK 4021 for 89 EUR.", role="assistant")
    r = reflector(eng)
    answered = r.reflect("u1", session.id, seq)
    statement = r.reflect("u1", session.id, done.seq)
    assert answered is not None and statement is not None
    assert answered.open_question is False and answered.confidence == pytest.approx(0.6)
    assert "addressed it" in answered.thought
    assert statement.open_question is False
    assert "oslo" in " ".join(statement.keywords).lower()
    assert [x.seq for x in r.reflections("u1", session.id)] == [seq, done.seq]


def test_only_assistant_messages_get_a_reflection(eng: ContextEngine) -> None:
    session = eng.create_session(user_id="u1")
    seq = refund_turn(session, "Replaced, or refunded within 30 days.")
    r = reflector(eng)
    with pytest.raises(InvalidInput):
        r.reflect("u1", session.id, 1)  # the user's message
    assert r.reflect("u1", session.id, 999) is None
    assert [e.seq for e in r.pending("u1", session.id)] == [seq]
    assert stored(eng) == 0


# The turn-end job and idempotency ------------------------------------------------------


def test_the_turn_end_job_reflects_each_assistant_message_once(eng: ContextEngine) -> None:
    r = reflector(eng)
    eng.on_turn_end("reflection", r.on_turn_end)
    session = eng.create_session(user_id="u1")
    with session.turn() as turn:
        turn.add_message("user", "Compare the two laptop offers?")
        first = turn.add_message("assistant", "The first is cheaper.")
        last = turn.add_event(EventType.FINAL, "Pick the first offer.", role="assistant")
    assert eng.jobs.run_pending().done == 2  # the reflection's and the search index's
    assert [x.seq for x in r.reflections("u1", session.id)] == [first.seq, last.seq]
    assert r.pending("u1", session.id) == []
    before = r.reflections("u1", session.id)
    # The job run again (a retry, a second worker): nothing is rewritten.
    r.on_turn_end(turn_job(session, turn.turn_id))
    assert r.reflections("u1", session.id) == before
    assert stored(eng) == 2
    # A job without a turn catches up whatever is pending.
    missed = session.add_message("assistant", "Also: the warranty is two years.")
    eng.jobs.run_pending()
    r.on_turn_end(turn_job(session, None))
    assert [x.seq for x in r.reflections("u1", session.id)] == [first.seq, last.seq, missed.seq]


def test_disabled_reflections_write_nothing(eng: ContextEngine) -> None:
    r = reflector(eng, config=ReflectionConfig())
    session = eng.create_session(user_id="u1")
    refund_turn(session, "Replaced, or refunded within 30 days.")
    turn_id = session.events()[-1].turn_id
    r.on_turn_end(turn_job(session, turn_id))
    assert stored(eng) == 0


class KilledDuringWrite(Reflector):
    """Dies after its row is inserted, before the transaction commits."""

    def _insert(self, conn: Connection, reflection: Reflection) -> None:
        super()._insert(conn, reflection)
        raise KeyboardInterrupt("killed")


def test_a_worker_killed_inside_the_write_leaves_nothing_and_the_rerun_writes_once(
    eng: ContextEngine,
) -> None:
    session = eng.create_session(user_id="u1")
    seq = refund_turn(session, "Replaced, or refunded within 30 days.")
    killed = KilledDuringWrite(eng.db, eng._service.events, eng.token_counter(), None, config=ON)
    with pytest.raises(KeyboardInterrupt):
        killed.reflect("u1", session.id, seq)
    assert stored(eng) == 0
    r = reflector(eng)
    first = r.reflect("u1", session.id, seq)
    again = r.reflect("u1", session.id, seq)
    assert first is not None and again == first
    assert stored(eng) == 1


class RacingReflector(Reflector):
    """Waits, with a computed reflection, until the other worker has one too."""

    def __init__(self, engine: ContextEngine, gate: threading.Barrier) -> None:
        super().__init__(engine.db, engine._service.events, engine.token_counter(), config=ON)
        self.gate = gate

    def commit(self, reflection: Reflection) -> Reflection | None:
        self.gate.wait(10)
        return super().commit(reflection)


def test_two_workers_racing_store_one_reflection_and_both_return_it(
    eng: ContextEngine,
) -> None:
    session = eng.create_session(user_id="u1")
    seq = refund_turn(session, "Replaced, or refunded within 30 days.")
    gate = threading.Barrier(2)
    results: list[Reflection | None] = []
    workers = [RacingReflector(eng, gate) for _ in range(2)]
    threads = [
        threading.Thread(target=lambda w=w: results.append(w.reflect("u1", session.id, seq)))
        for w in workers
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert stored(eng) == 1
    assert len(results) == 2 and results[0] == results[1]  # the loser returns the stored one
    assert results[0] == reflector(eng).reflection("u1", session.id, seq)


# The chat model --------------------------------------------------------------------------


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with start_chat_server() as running:
        yield running


def server_llm(server: ChatServer) -> Any:
    return llm_from_config(
        {
            "provider": "openai",
            "base_url": server.url,
            "api_key": "sk-test",
            "fast_model": "test-model",
            "max_retries": 0,
            "timeout": 5,
        }
    )


GOOD = {
    "thought": INNER,
    "user_state": "worried about a broken laptop",
    "intent_next": "ask whether the box was damaged on arrival",
    "confidence": 0.4,
}


def test_the_llm_writes_the_reflection_and_it_never_enters_history_or_windows(
    eng: ContextEngine, server: ChatServer
) -> None:
    server.script(Reply.json(GOOD))
    r = reflector(eng, llm=server_llm(server), config=ReflectionConfig(enabled=True))
    session = eng.create_session(user_id="u1")
    seq = refund_turn(session, "Damaged laptops are replaced within 30 days.")
    events_before = session.events()
    reflection = r.reflect("u1", session.id, seq)
    assert reflection is not None
    assert reflection.method == "llm:openai:test-model"
    assert (reflection.thought, reflection.user_state, reflection.intent_next) == (
        GOOD["thought"],
        GOOD["user_state"],
        GOOD["intent_next"],
    )
    assert reflection.confidence == pytest.approx(0.4)
    assert reflection.open_question is False and reflection.keywords
    # The model read the exchange: the question, the tool result, the answer.
    [request] = server.requests
    asked = request["messages"][-1]["content"]
    assert "refund policy for damaged laptops" in asked
    assert "Refunds within 30 days" in asked and "replaced within 30 days" in asked
    assert request.get("max_tokens", request.get("max_completion_tokens")) == 200

    # Not in the history: the same events, none of them carrying the reflection.
    events_after = session.events()
    assert [e.event_id for e in events_after] == [e.event_id for e in events_before]
    assert not any(INNER in event_text(e) for e in events_after)
    assert session.verify().ok
    # Not in any window, plain or built for a query close to it (the query itself is
    # shown in the window, so it cannot quote the reflection).
    for query in (None, "refund damaged laptop", "inner voice damaged-box case"):
        window = session.build_context(query=query, budget=4000)
        assert INNER not in json.dumps(window.messages)
        assert INNER not in json.dumps(window.to_anthropic(), default=str)
        assert "INNER-VOICE" not in json.dumps(window.messages)
    assert r.reflections("u1", session.id) == [reflection]


@pytest.mark.parametrize(
    ("replies", "code"),
    [
        # Malformed: not JSON, then JSON missing required fields (asked once more each time).
        (
            (Reply.text("I think it went fine."), Reply.json({"thought": "ok"})),
            "llm_response_invalid",
        ),
        ((Reply.server_error(),), "llm_unavailable"),
    ],
)
def test_a_failing_llm_falls_back_to_offline_and_the_failure_is_reported(
    eng: ContextEngine, server: ChatServer, replies: tuple[Reply, ...], code: str
) -> None:
    server.script(*replies)
    reported: list[tuple[str, str, str, str]] = []

    def on_failure(user_id: str, session_id: str, job: str, exc: Exception) -> None:
        # As the engine wires it: an error event in the session (outside the write).
        eng.get_session(session_id, user_id=user_id).add_event(
            EventType.ERROR, payload={"job": job, "code": getattr(exc, "code", "")}
        )
        reported.append((user_id, session_id, job, getattr(exc, "code", "")))

    r = reflector(eng, llm=server_llm(server), on_llm_failure=on_failure)
    session = eng.create_session(user_id="u1")
    seq = refund_turn(session, "I'm not sure, can you tell me the order number?")
    reflection = r.reflect("u1", session.id, seq)
    assert reflection is not None
    assert reflection.method == f"offline (llm failed: {code})"
    assert reflection.open_question is True and reflection.thought
    assert reported == [("u1", session.id, "reflection", code)]
    [error] = session.events(types=[EventType.ERROR])
    assert error.payload == {"job": "reflection", "code": code}
    # A rerun finds the reflection stored: no second model call, no second report.
    calls = len(server.requests)
    assert r.reflect("u1", session.id, seq) == reflection
    assert len(server.requests) == calls and len(reported) == 1


def test_deleting_the_session_or_the_user_removes_reflections(eng: ContextEngine) -> None:
    r = reflector(eng)
    doomed = eng.create_session(user_id="u1")
    other = eng.create_session(user_id="u2")
    for session in (doomed, other):
        r.reflect(session.user_id, session.id, refund_turn(session, "Replaced."))
    doomed.delete()
    assert r.reflections("u1", doomed.id) == []
    assert len(r.reflections("u2", other.id)) == 1
    eng.delete_user_data("u2")
    assert stored(eng) == 0


def test_the_engine_reflects_after_each_turn_when_enabled(db_url: str, home: Path) -> None:
    with ContextEngine(
        url=db_url,
        home=home,
        jobs="inline",
        reflection={"enabled": True},
        embeddings={"provider": "hashing"},
    ) as engine:
        session = engine.create_session(user_id="u1")
        seq = refund_turn(session, "I do not know whether the refund was sent.")
        refund_turn(session, "The refund of 40 euros was sent on Monday.")
        stored_reflections = session.reflections()
        assert stored_reflections[0].seq == seq
        assert len(stored_reflections) == 2
        assert stored_reflections[0].open_question and not stored_reflections[1].open_question
        assert all(r.method == "offline" for r in stored_reflections)
