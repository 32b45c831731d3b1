"""Turns: contextvars scoping, turn-end hooks through durable jobs, legacy events, async API."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from pathlib import Path

import pytest
from sqlalchemy import select

from agentctx import (
    AsyncContextEngine,
    ContextEngine,
    EventDraft,
    EventType,
    Job,
    SessionNotFound,
    TextPart,
    TurnError,
)
from agentctx.storage.schema import jobs


def test_events_in_a_turn_share_its_id_and_outside_form_their_own(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    with session.turn(author="planner") as turn:
        turn.add_message("user", "find a hotel")
        session.add_message("assistant", "on it")  # through the session: joins the open turn
        call = turn.add_tool_call("search", {"q": "hotel"})
        turn.add_tool_result(call.call_id, content="3 hotels")
    single = session.add_message("user", "thanks")
    events = session.events()
    assert {e.turn_id for e in events[:4]} == {turn.turn_id}
    assert single.turn_id not in (None, turn.turn_id)
    turns = session.turns()
    assert [(t.status, t.first_seq, t.last_seq, t.event_count) for t in turns] == [
        ("ok", 1, 4, 4),
        ("ok", 5, 5, 1),
    ]
    assert turns[0].author == "planner" and turns[0].ended_at is not None
    assert turns[1].request_id is not None and turns[1].request_id == single.request_id
    assert events[0].request_id == turn.request_id != single.request_id
    assert session.events(turn_id=turn.turn_id) == events[:4]
    assert [e.type for e in session.events(types=["tool_call", EventType.TOOL_RESULT])] == [
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
    ]


def test_exception_in_a_turn_records_an_error_event(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    with pytest.raises(RuntimeError, match="model timed out"), session.turn() as turn:
        turn.add_message("user", "go")
        raise RuntimeError("model timed out")
    last = session.events()[-1]
    assert last.type == EventType.ERROR and last.turn_id == turn.turn_id
    assert last.payload == {"error_type": "RuntimeError", "message": "model timed out"}
    assert session.turns()[0].status == "error"
    with pytest.raises(TurnError):
        turn.add_message("user", "after the end")
    session.add_message("user", "the session goes on")  # no turn is left open
    assert session.turns()[-1].event_count == 1


def test_a_session_erased_under_an_open_turn_names_the_real_cause(engine: ContextEngine) -> None:
    """Another thread erases the user while a turn is open. The write that follows
    raises SessionNotFound, and leaving the block does not replace it with the failure
    to record it or to end the turn (noted on it instead); ending such a turn names the
    missing session too, and the other users' sessions are untouched."""
    session = engine.create_session(user_id="u1")
    kept = engine.create_session(user_id="u2")
    kept.add_message("user", "still here")
    with pytest.raises(SessionNotFound) as raised, session.turn() as turn:
        turn.add_message("user", "book the 9:40 flight")
        engine.delete_user_data("u1")
        turn.add_message("assistant", "booking it")
    notes = getattr(raised.value, "__notes__", [])
    assert len(notes) == 1 and f"turn {turn.turn_id} could not be ended" in notes[0]
    assert "SessionNotFound" in notes[0]

    other = engine.create_session(user_id="u3")
    with pytest.raises(SessionNotFound), other.turn():  # the block went well; the session did not
        other.add_message("user", "hello")
        engine.delete_user_data("u3")
    doomed_session = engine.create_session(user_id="u4")
    with (
        pytest.raises(ValueError, match="the agent's own error") as own,
        doomed_session.turn() as doomed,
    ):
        engine.delete_user_data("u4")
        raise ValueError("the agent's own error")
    assert f"turn {doomed.turn_id}" in own.value.__notes__[0]
    assert [e.text for e in kept.events()] == ["still here"] and kept.verify().ok


def test_an_async_turn_keeps_the_blocks_exception(engine: ContextEngine) -> None:
    async def scenario() -> None:
        aengine = AsyncContextEngine(engine)
        session = await aengine.create_session("u1")
        with pytest.raises(SessionNotFound) as raised:
            async with session.turn():
                await session.add_message("user", "hello")
                await asyncio.to_thread(engine.delete_user_data, "u1")
                await session.add_message("assistant", "hi")
        assert "could not be ended" in raised.value.__notes__[0]
        other = await aengine.create_session("u2")
        async with other.turn():  # nothing was left open in this context
            await other.add_message("user", "a new turn")

    asyncio.run(scenario())


def test_nested_turn_on_the_same_session_is_refused(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    other = engine.create_session(user_id="u1")
    with session.turn() as turn:
        with pytest.raises(TurnError):
            session.turn()
        with other.turn() as other_turn:  # another session may have its own turn
            other.add_message("user", "x")
        session.add_message("user", "y")
    assert other.events()[0].turn_id == other_turn.turn_id
    assert session.events()[0].turn_id == turn.turn_id


def test_the_current_turn_follows_contextvars_not_threads(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    results: dict[str, str | None] = {}
    with session.turn() as turn:
        context = contextvars.copy_context()

        def in_copied_context() -> None:
            results["copied"] = session.add_message("user", "from a worker").turn_id

        def in_fresh_thread() -> None:
            results["fresh"] = session.add_message("user", "unrelated").turn_id

        worker = threading.Thread(target=context.run, args=(in_copied_context,))
        worker.start()
        worker.join()
        other = threading.Thread(target=in_fresh_thread)
        other.start()
        other.join()
    assert results["copied"] == turn.turn_id
    assert results["fresh"] not in (None, turn.turn_id)


def test_legacy_events_have_no_turn(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    old = session.import_legacy(
        EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text="from 2019"),)),
        EventDraft(type=EventType.AGENT_RESPONSE, parts=(TextPart(text="hello"),)),
    )
    assert [e.turn_id for e in old] == [None, None]
    assert session.turns() == []
    assert [e.text for e in session.events()] == ["from 2019", "hello"]
    assert session.verify().ok


def test_turn_end_hooks_run_once_per_turn(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home) as engine:
        seen: list[tuple[str | None, str | None]] = []

        def hook(job: Job) -> None:
            seen.append((job.session_id, job.turn_id))

        engine.on_turn_end("record", hook)
        session = engine.create_session(user_id="u1")
        with session.turn() as turn:
            turn.add_message("user", "a")
            turn.add_message("assistant", "b")
        single = session.add_message("user", "c")
        assert seen == [(session.id, turn.turn_id), (session.id, single.turn_id)]
        with engine.db.read() as conn:
            statuses = [row.status for row in conn.execute(select(jobs.c.status))]
        assert statuses == ["done", "done"]


def test_manual_jobs_wait_for_run_pending(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, jobs="manual") as engine:
        ran: list[str | None] = []
        engine.on_turn_end("compact", lambda job: ran.append(job.turn_id))
        session = engine.create_session(user_id="u1")
        with session.turn() as turn:
            turn.add_message("user", "a")
        assert ran == []
        # The hook's job and the search index's (which embeds the turn's events).
        assert engine.jobs.counts() == {"pending": 2}
        stats = engine.jobs.run_pending()
        assert stats.done == 2 and ran == [turn.turn_id]
        assert engine.jobs.run_pending().done == 0


def test_background_worker_runs_jobs(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, jobs="background") as engine:
        done = threading.Event()
        engine.on_turn_end("notify", lambda job: done.set())
        session = engine.create_session(user_id="u1")
        session.add_message("user", "hi")
        # The worker runs the turn's jobs in order; the search index's job may load the
        # embedding model first.
        assert done.wait(120)


def test_async_api_does_not_block_the_loop(engine: ContextEngine, png: bytes) -> None:
    async def scenario() -> tuple[int, list[str | None], str]:
        aengine = AsyncContextEngine(engine)
        session = await aengine.create_session("u1", "helper")
        ticks = 0

        async def ticker() -> None:
            nonlocal ticks
            while True:
                ticks += 1
                await asyncio.sleep(0)

        task = asyncio.create_task(ticker())
        async with session.turn() as turn:
            await turn.add_message("user", "hello")
            await session.add_message("assistant", "joined via the session")  # same task: same turn
            call = await turn.add_tool_call("screenshot", {})
            await turn.add_tool_result(call.call_id, content="ok", images=[png])
        await session.update_state({"done": True})
        events = await session.events()
        task.cancel()
        again = await aengine.get_session(session.id, "u1")
        with pytest.raises(SessionNotFound):
            await aengine.get_session(session.id, "intruder")
        assert (await again.verify()).ok
        return ticks, [e.turn_id for e in events[:4]], turn.turn_id

    ticks, turn_ids, turn_id = asyncio.run(scenario())
    assert ticks > 0
    assert turn_ids == [turn_id] * 4


def test_two_async_tasks_keep_their_turns_apart(engine: ContextEngine) -> None:
    async def scenario() -> dict[str, set[str | None]]:
        aengine = AsyncContextEngine(engine)
        sessions = [await aengine.create_session("u1") for _ in range(2)]

        async def worker(index: int) -> set[str | None]:
            session = sessions[index]
            async with session.turn():
                for n in range(5):
                    await session.add_message("user", f"task {index} message {n}")
                    await asyncio.sleep(0.001)
            return {e.turn_id for e in await session.events()}

        first, second = await asyncio.gather(worker(0), worker(1))
        return {"first": first, "second": second}

    result = asyncio.run(scenario())
    assert len(result["first"]) == 1 and len(result["second"]) == 1
    assert result["first"] != result["second"]


def test_abandoned_turns_are_closed_by_sweep(engine: ContextEngine) -> None:
    from datetime import timedelta

    from sqlalchemy import update

    from agentctx.events import utcnow
    from agentctx.storage.schema import turns

    session = engine.create_session(user_id="u1")
    turn = session.turn()
    turn.add_message("user", "the process dies here")
    with engine.db.write() as conn:
        conn.execute(update(turns).values(started_at=utcnow() - timedelta(hours=2)))
    time.sleep(0.01)
    report = engine.sweep()
    assert report.abandoned_turns == 1
    info = session.turns()[0]
    assert info.status == "abandoned" and info.event_count == 1
    with pytest.raises(TurnError):  # the process holding the turn cannot write into it
        turn.add_message("user", "too late")
    with pytest.raises(TurnError):
        turn.end()
    assert len(session.events()) == 1
