"""The same behaviour tests against the embedded ContextEngine and a RemoteEngine.

``api`` is either the engine itself or a RemoteEngine talking to a real server that
serves that engine, on SQLite and on PostgreSQL: moving an agent to the server
changes the line that makes the engine and nothing else.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentctx import (
    BlobNotFound,
    ContextEngine,
    ContextWindow,
    EventDraft,
    EventType,
    InvalidEvent,
    InvalidInput,
    MemoryNotFound,
    OptedOut,
    SessionNotFound,
    StaleMemory,
    StaleSession,
    TextPart,
    TurnError,
)
from agentctx.client import RemoteEngine
from client.media import noise_png
from server.live import serve

Api = Any  # ContextEngine | RemoteEngine: the tests call only what both have


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """The shared fixture's engine with the hashing embedder (no model to load)."""
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as eng:
        yield eng


@pytest.fixture(params=["embedded", "remote"])
def api(request: pytest.FixtureRequest, engine: ContextEngine) -> Iterator[Api]:
    if request.param == "embedded":
        yield engine
        return
    with serve(engine) as live, RemoteEngine(live.url, live.key("u1", "u2")) as remote:
        yield remote


def test_turn_with_tool_calls_and_images_reads_back(api: Api) -> None:
    session = api.create_session("u1", "helper")
    shot, failed = noise_png(1), noise_png(2)
    with session.turn(author="planner") as turn:
        turn.add_message("user", "Book the cheapest flight", metadata={"k": "v"})
        call = turn.add_tool_call("screenshot", {"region": "full"})
        turn.add_tool_result(call.call_id, content="ok", images=[shot])
        click = turn.add_tool_call("click", {"x": 10, "y": 20})
        turn.add_tool_result(click.call_id, "element not found", is_error=True, images=[failed])
        session.add_message("assistant", "The button is missing.")  # joins the open turn

    events = api.get_session(session.id, "u1").events()
    assert [e.type for e in events] == [
        EventType.USER_INPUT,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.AGENT_RESPONSE,
    ]
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6]
    assert {e.turn_id for e in events} == {turn.turn_id}
    assert events[0].meta.extra == {"k": "v"} and events[0].text == "Book the cheapest flight"
    assert events[1].payload == {"name": "screenshot"} and events[2].call_id == call.call_id
    assert events[4].payload == {"is_error": True} and events[4].meta.status == "error"
    images = [part for e in events for part in e.images]
    assert len(images) == 2
    assert api.restore_image(images[0].image_id, "u1") == shot
    assert session.restore_image(images[1].image_id) == failed
    assert api.get_blob(images[0].blob_id, "u1") == shot
    assert [f.image_id for f in session.images()] == [i.image_id for i in images]

    [info] = session.turns()
    assert (info.turn_id, info.status, info.event_count, info.author) == (
        turn.turn_id,
        "ok",
        6,
        "planner",
    )
    assert session.verify().ok and api.verify(session.id, "u1").events_checked == 6


def test_a_raising_block_records_the_error_and_ends_the_turn(api: Api) -> None:
    session = api.create_session("u1")
    with pytest.raises(RuntimeError, match="tool crashed"), session.turn() as turn:
        turn.add_message("user", "go")
        raise RuntimeError("tool crashed")
    assert turn.ended and turn.status == "error"
    events = session.events()
    assert [e.type for e in events] == [EventType.USER_INPUT, EventType.ERROR]
    assert events[1].payload == {"error_type": "RuntimeError", "message": "tool crashed"}
    assert events[1].turn_id == turn.turn_id
    assert session.turn_info(turn.turn_id).status == "error"
    with pytest.raises(TurnError):
        turn.add_message("user", "too late")
    with pytest.raises(TurnError):
        session.open_turn(turn.turn_id)


def test_writes_outside_a_turn_and_turns_spanning_calls(api: Api) -> None:
    session = api.create_session("u1")
    first = session.add_message("user", "hello")
    second = session.add_message("assistant", "hi")
    assert first.turn_id != second.turn_id  # each a one-event turn of its own
    assert [t.status for t in session.turns()] == ["ok", "ok"]

    begun = session.begin_turn(request_id="req-7")
    reopened = api.get_session(session.id, "u1").open_turn(begun.turn_id)
    event = reopened.add_message("user", "from another process")
    assert event.turn_id == begun.turn_id and event.request_id == "req-7"
    reopened.end()
    assert session.turn_info(begun.turn_id).status == "ok"

    with session.turn(), pytest.raises(TurnError):
        session.turn()  # one open turn per session in a context


def test_state_compare_and_set_conflicts_raise_stale_session(api: Api) -> None:
    session = api.create_session("u1", state={"step": 1})
    a = api.get_session(session.id, "u1")
    b = api.get_session(session.id, "u1")
    assert a.update_state({"step": 2, "page": "search"}) == {"step": 2, "page": "search"}
    assert a.state_version == 1
    with pytest.raises(StaleSession) as stale:
        b.update_state({"step": 3})
    assert (stale.value.expected, stale.value.actual) == (0, 1)
    assert b.refresh().state == {"step": 2, "page": "search"}
    assert b.update_state({"step": 3}, replace=True) == {"step": 3}

    head = b.refresh().last_seq
    b.add_message("user", "first", expected_last_seq=head)
    with pytest.raises(StaleSession) as stale:
        a.add_message("user", "second", expected_last_seq=head)
    assert (stale.value.expected, stale.value.actual) == (head, head + 1)

    task = b.set_task("book a flight", steps_done=["search"])
    assert b.task == task and b.update_task(finding="cheapest is 99").findings == (
        "cheapest is 99",
    )
    assert api.get_session(session.id, "u1").task == b.task


def test_another_users_session_does_not_exist(api: Api) -> None:
    session = api.create_session("u1")
    event = session.add_message("user", "look", images=[noise_png(3)])
    with pytest.raises(SessionNotFound) as missing:
        api.get_session(session.id, "u2")
    assert missing.value.session_id == session.id
    with pytest.raises(SessionNotFound):
        api.delete_session(session.id, "u2")
    with pytest.raises(BlobNotFound):
        api.restore_image(event.images[0].image_id, "u2")
    assert api.list_sessions("u2").items == []
    assert api.get_session(session.id, "u1").id == session.id


def test_listing_paging_and_deleting_sessions(api: Api) -> None:
    ids = [api.create_session("u1", "lister").id for _ in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        page = api.list_sessions("u1", agent_id="lister", limit=2, cursor=cursor)
        seen += [s.session_id for s in page.items]
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert seen == ids
    session = api.get_session(ids[0], "u1")
    session.add_message("user", "bye")
    report = session.delete()
    assert (report.sessions, report.events) == (1, 1)
    with pytest.raises(SessionNotFound):
        api.get_session(ids[0], "u1")


def test_event_filters_and_pages(api: Api) -> None:
    session = api.create_session("u1")
    with session.turn() as turn:
        for i in range(4):
            call = turn.add_tool_call("step", {"i": i})
            turn.add_tool_result(call.call_id, f"done {i}")
    session.add_message("user", "after")
    assert [e.seq for e in session.events(limit=3)] == [1, 2, 3]
    assert [e.seq for e in session.events(last=2)] == [8, 9]
    assert [e.seq for e in session.events(start_seq=4, end_seq=6)] == [4, 5, 6]
    assert [e.seq for e in session.events(types=["tool_call"], last=2)] == [5, 7]
    assert len(session.events(turn_id=turn.turn_id)) == 8
    assert [e.seq for e in session.events(types=[EventType.USER_INPUT])] == [9]
    with pytest.raises(InvalidInput):
        session.events(limit=1, last=1)


def test_batches_are_all_or_nothing_and_errors_keep_their_class(api: Api) -> None:
    session = api.create_session("u1")
    drafts = [
        EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text="a"),)),
        EventDraft(type=EventType.AGENT_RESPONSE, parts=(TextPart(text="b"),)),
    ]
    assert [e.seq for e in session.append(*drafts)] == [1, 2]
    with pytest.raises(InvalidEvent):
        session.add_tool_result("call_nobody_made", "orphan")
    with pytest.raises(InvalidEvent):
        session.add_message("robot", "no such role")
    with pytest.raises(InvalidInput):
        api.create_session("u1", session_id="not a valid id!")
    assert len(session.events()) == 2


def test_build_context_and_formats(api: Api) -> None:
    session = api.create_session("u1")
    with session.turn() as turn:
        turn.add_message("user", "Find flights to Lisbon")
        call = turn.add_tool_call("search", {"to": "LIS"})
        turn.add_tool_result(call.call_id, "3 flights, cheapest 99 EUR", images=[noise_png(4)])
        turn.add_message("assistant", "The cheapest is 99 EUR.")
    window = session.build_context("cheapest flight", 4000, system_prompt="You book travel.")
    assert isinstance(window, ContextWindow)
    assert window.messages[0] == {"role": "system", "content": "You book travel."}
    assert any(m.get("content") == "The cheapest is 99 EUR." for m in window.messages)
    assert window.tokens == window.report.tokens <= 4000
    assert len(window.report.included_event_ids) == 4
    anthropic = window.to_anthropic()
    assert anthropic["messages"][0]["role"] == "user"


def test_memory_add_search_update_and_delete(api: Api) -> None:
    memory = api.memory.add("u1", "The user prefers window seats", keywords=["seat"])
    api.memory.add("u1", "The user lives in Porto")
    hits = api.memory.search("u1", "window seat preference", limit=5)
    assert hits[0].memory.memory_id == memory.memory_id
    assert api.memory.search("u2", "window seat") == []
    assert api.memory.get("u1", memory.memory_id).content == memory.content
    with pytest.raises(MemoryNotFound):
        api.memory.get("u2", memory.memory_id)

    updated = api.memory.update(
        "u1", memory.memory_id, content="The user prefers aisle seats", expected_version=1
    )
    assert updated.version == 2
    with pytest.raises(StaleMemory) as stale:
        api.memory.update("u1", memory.memory_id, confidence=0.5, expected_version=1)
    assert (stale.value.expected, stale.value.actual) == (1, 2)
    assert [c.action for c in api.memory.history("u1", memory.memory_id)] == ["create", "update"]
    assert len(api.memory.list("u1")) == 2
    assert api.memory.delete("u1", memory.memory_id).status == "deleted"
    assert [m.memory_id for m in api.memory.list("u1", status="deleted")] == [memory.memory_id]
    every = api.memory.list("u1", status=None)
    assert len(every) == 2 and memory.memory_id == every[0].memory_id  # newest update first

    assert api.memory.opted_out("u1") is False
    api.memory.set_opt_out("u1", declarative=True)
    assert api.memory.opted_out("u1") is True
    with pytest.raises(OptedOut):
        api.memory.add("u1", "The user has a cat")


def test_one_engine_shared_by_threads_keeps_a_gapless_log(api: Api) -> None:
    """Thread safety: threads appending through one engine (one connection pool)
    produce one gapless log holding every message once."""
    session = api.create_session("u1")
    errors: list[BaseException] = []

    def write(worker: int) -> None:
        try:
            handle = api.get_session(session.id, "u1")
            for i in range(5):
                handle.add_message("user", f"w{worker} m{i}")
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(w,)) for w in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    events = session.events()
    assert [e.seq for e in events] == list(range(1, 21))
    assert sorted(e.text for e in events) == sorted(
        f"w{w} m{i}" for w in range(4) for i in range(5)
    )
    assert session.verify().ok


def test_a_conversation_is_imported_the_same_way(api: Api) -> None:
    session = api.create_session("u1", "airline")
    report = session.import_messages(
        [
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Find my booking"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c1",
                        "type": "function",
                        "function": {"name": "find", "arguments": "{}"},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "c1", "content": "ABC123"},
        ]
    )
    events = api.get_session(session.id, "u1").events()
    assert [e.type for e in events] == [
        EventType.SYSTEM,
        EventType.USER_INPUT,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
    ]
    assert len(report.turn_ids) == 1 and events[3].turn_id == report.turn_ids[0]
    assert events[3].meta.tool_name == "find"
