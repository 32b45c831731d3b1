"""``AgentCtxSession``: the OpenAI Agents SDK's session protocol kept in agentctx.

The runner talks to a real local HTTP server speaking OpenAI's chat completions wire
format, through the SDK's own ``OpenAIChatCompletionsModel`` and ``AsyncOpenAI``.
"""

from __future__ import annotations

import asyncio
import base64
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import pytest
from agents import (
    Agent,
    OpenAIChatCompletionsModel,
    Runner,
    SQLiteSession,
    function_tool,
    set_tracing_disabled,
)
from agents.memory import Session as SdkSession
from openai import AsyncOpenAI

from agentctx import ContextEngine, MissingExtra
from agentctx.context.task import render_pinned_instruction
from agentctx.events import BlobPart, EventType
from agentctx.integrations.openai_agents import RETRACTED_KEY, AgentCtxSession
from conftest import make_png
from integrations.tool_chat_server import ToolChatServer, Turn, start_tool_chat_server

set_tracing_disabled(True)

FOLD = {"enabled": True, "low_tokens": 1500, "high_tokens": 3000}


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        yield engine


@pytest.fixture
def server() -> Iterator[ToolChatServer]:
    with start_tool_chat_server() as srv:
        yield srv


@function_tool
def get_weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny and 24C in {city}"


def agent_for(server: ToolChatServer) -> Agent[Any]:
    client = AsyncOpenAI(base_url=server.url, api_key="sk-test", max_retries=0)
    model = OpenAIChatCompletionsModel(model="test-model", openai_client=client)
    return Agent(name="helper", instructions="Answer briefly.", model=model, tools=[get_weather])


def data_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


# The runner ------------------------------------------------------------------------------


def test_a_second_run_sends_the_first_runs_history_from_agentctx(
    eng: ContextEngine, server: ToolChatServer
) -> None:
    server.script(
        Turn(calls=[("call_w1", "get_weather", {"city": "Lisbon"})]),
        Turn(text="It is sunny in Lisbon."),
        Turn(text="You asked about the weather in Lisbon."),
    )
    agent = agent_for(server)
    session = AgentCtxSession(eng, session_id="chat-1", user_id="u1", agent_id="helper")
    assert isinstance(session, SdkSession)  # the SDK's runtime-checkable protocol

    first = asyncio.run(Runner.run(agent, "What is the weather in Lisbon?", session=session))
    assert first.final_output == "It is sunny in Lisbon."
    # Another handle (a new process, say) reads the same history from the store.
    again = AgentCtxSession(eng, session_id="chat-1", user_id="u1", agent_id="helper")
    second = asyncio.run(Runner.run(agent, "What did I ask you?", session=again))
    assert second.final_output == "You asked about the weather in Lisbon."

    # The second request: the instructions, the first run as agentctx kept it (the
    # tool call round trip included), then the new input; nothing else.
    sent = server.requests[2]["messages"]
    assert sent[0] == {"role": "system", "content": "Answer briefly."}
    assert sent[1] == {"role": "user", "content": "What is the weather in Lisbon?"}
    call = sent[2]["tool_calls"][0]
    assert sent[2]["role"] == "assistant" and len(sent[2]["tool_calls"]) == 1
    assert call["id"] == "call_w1" and call["function"]["name"] == "get_weather"
    assert json.loads(call["function"]["arguments"]) == {"city": "Lisbon"}
    assert sent[3:] == [
        {"role": "tool", "tool_call_id": "call_w1", "content": "sunny and 24C in Lisbon"},
        {"role": "assistant", "content": "It is sunny in Lisbon."},
        {"role": "user", "content": "What did I ask you?"},
    ]

    # The log is an agentctx log like any other: typed events, linked calls, a good chain.
    handle = eng.get_session("chat-1", user_id="u1")
    events = handle.events()
    assert [e.type for e in events] == [
        EventType.USER_INPUT,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.AGENT_RESPONSE,
        EventType.USER_INPUT,
        EventType.AGENT_RESPONSE,
    ]
    assert events[1].call_id == events[2].call_id == "call_w1"
    assert events[1].meta.tool_name == "get_weather"
    assert events[3].text == "It is sunny in Lisbon."
    assert handle.verify().ok


def test_the_runner_gets_the_compacted_window_not_the_whole_log(
    db_url: str, home: Path, server: ToolChatServer
) -> None:
    with ContextEngine(
        url=db_url, home=home, jobs="manual", fold=FOLD, embeddings={"provider": "hashing"}
    ) as engine:
        session = AgentCtxSession(engine, session_id="long", user_id="u1", budget=2000)
        items: list[dict[str, Any]] = []
        for i in range(24):
            items.append({"role": "user", "content": f"Question {i}: " + "details " * 40})
            items.append({"role": "assistant", "content": f"Answer {i}: " + "because " * 40})
        for start in range(0, len(items), 2):
            asyncio.run(session.add_items(items[start : start + 2]))

        server.script(Turn(text="Noted."))
        asyncio.run(Runner.run(agent_for(server), "And now?", session=session))

        sent = server.requests[0]["messages"]
        contents = [str(m.get("content")) for m in sent]
        folded = [c for c in contents if c.startswith("[Earlier conversation, folded]")]
        assert folded, "the oldest turns reach the model as a fold summary"
        # The fold stands for the old answers; the questions (key events) stay verbatim.
        assert not any(c.startswith("Answer 0:") for c in contents)
        assert any(c.startswith("Question 0:") for c in contents)
        assert any(c.startswith("Question 23:") for c in contents)  # the newest stay
        assert contents[-1] == "And now?"
        window = session.context_window()
        assert window.tokens <= 2000
        # The whole history is still there, and the SDK's tail reads see it exactly.
        tail = asyncio.run(session.get_items(limit=3))
        assert tail[0] == items[-1]
        assert tail[1] == {"content": "And now?", "role": "user"}
        assert tail[2]["role"] == "assistant" and tail[2]["content"][0]["text"] == "Noted."
        assert len(asyncio.run(session.get_items(limit=1000))) == len(items) + 2


# Items in and out ------------------------------------------------------------------------


def test_items_of_every_kind_come_back_as_they_were_added(eng: ContextEngine) -> None:
    png = make_png(seed=3)
    items: list[dict[str, Any]] = [
        {"role": "system", "content": "Be terse."},
        {
            "type": "message",
            "role": "user",
            "content": [
                {"type": "input_text", "text": "What is on this screen?"},
                {"type": "input_image", "image_url": data_url(png), "detail": "high"},
            ],
        },
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Look at the picture first."}],
        },
        {
            "type": "function_call",
            "id": "fc_1",
            "call_id": "call_1",
            "name": "zoom",
            "arguments": '{"x": 10, "y": 20}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "zoomed in"},
        {
            "type": "function_call",
            "call_id": "call_2",
            "name": "echo",
            "arguments": "not json at all",
        },
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": [
                {"type": "input_text", "text": "here is the crop"},
                {"type": "input_image", "image_url": data_url(png)},
            ],
        },
        {
            "id": "msg_1",
            "type": "message",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": "A chart.", "annotations": []}],
        },
    ]
    session = AgentCtxSession(eng, session_id="kinds", user_id="u1")
    asyncio.run(session.add_items(items))
    assert asyncio.run(session.get_items(limit=len(items))) == items
    assert asyncio.run(session.get_items(limit=2)) == items[-2:]

    events = eng.get_session("kinds", user_id="u1").events()
    assert [e.type for e in events] == [
        EventType.SYSTEM,
        EventType.USER_INPUT,
        EventType.NOTE,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.AGENT_RESPONSE,
    ]
    # Content is stored once, in parts: images as blobs, text searchable.
    assert eng.restore_image(events[1].images[0].image_id, user_id="u1") == png
    assert events[1].text == "What is on this screen?"
    assert "reasoning" in events[2].text and "Look at the picture first." in events[2].text
    assert "data:image" not in json.dumps(events[6].payload)
    # One batch, one turn.
    assert len({e.turn_id for e in events}) == 1


def test_the_window_shows_images_and_tool_pairs_in_the_sdk_format(eng: ContextEngine) -> None:
    png = make_png(seed=5)
    session = AgentCtxSession(eng, session_id="win", user_id="u1")
    asyncio.run(
        session.add_items(
            [
                {"role": "user", "content": "Take a screenshot"},
                {"type": "function_call", "call_id": "c1", "name": "shot", "arguments": "{}"},
                {
                    "type": "function_call_output",
                    "call_id": "c1",
                    "output": [
                        {"type": "input_text", "text": "done"},
                        {"type": "input_image", "image_url": data_url(png)},
                    ],
                },
            ]
        )
    )
    items = asyncio.run(session.get_items())
    assert items[0] == {"role": "user", "content": "Take a screenshot"}
    assert items[1] == {"type": "function_call", "call_id": "c1", "name": "shot", "arguments": "{}"}
    assert items[2] == {"type": "function_call_output", "call_id": "c1", "output": "done"}
    image = items[3]["content"][0]
    assert items[3]["role"] == "user" and image["type"] == "input_image"
    assert image["image_url"].startswith("data:image/")


def test_personal_data_is_redacted_before_it_is_stored(eng: ContextEngine) -> None:
    session = AgentCtxSession(eng, session_id="pii", user_id="u1")
    asyncio.run(session.add_items([{"role": "user", "content": "Mail me at ann@example.com"}]))
    stored = eng.get_session("pii", user_id="u1").events()[0]
    assert "ann@example.com" not in json.dumps(stored.model_dump(mode="json"))
    back = asyncio.run(session.get_items(limit=1))[0]
    assert "ann@example.com" not in back["content"] and "Mail me at" in back["content"]


# pop_item ---------------------------------------------------------------------------------


@pytest.mark.parametrize("pinned", [False, True])
def test_pop_item_retracts_the_newest_item_and_the_log_keeps_it(
    eng: ContextEngine, pinned: bool
) -> None:
    session = AgentCtxSession(eng, session_id="pop", user_id="u1", pinned_instruction=pinned)
    call = {"type": "function_call", "call_id": "c9", "name": "lookup", "arguments": "{}"}
    output = {"type": "function_call_output", "call_id": "c9", "output": "found it"}
    asyncio.run(
        session.add_items(
            [
                {"role": "user", "content": "first question"},
                {"role": "assistant", "content": "first answer"},
                {"role": "user", "content": "look it up"},
                call,
                output,
            ]
        )
    )
    assert asyncio.run(session.pop_item()) == output
    assert asyncio.run(session.pop_item()) == call
    assert asyncio.run(session.pop_item()) == {"role": "user", "content": "look it up"}
    assert asyncio.run(session.get_items(limit=10)) == [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
    ]
    # The window leaves the retracted items out; with the pin on, it pins the newest
    # request still standing, never the retracted one.
    conversation = [
        {"role": "user", "content": "first question"},
        {"role": "assistant", "content": "first answer"},
    ]
    items = asyncio.run(session.get_items())
    assert items[:2] == conversation and "look it up" not in str(items)
    if pinned:
        assert items[2:] == [
            {"role": "system", "content": render_pinned_instruction("first question", "active")}
        ]
    else:
        assert items[2:] == []
    # Append-only: the items are still in the log, and the retractions are events too.
    handle = eng.get_session("pop", user_id="u1")
    types = [e.type for e in handle.events()]
    assert types.count(EventType.STATE_DELTA) == 3 and len(types) == 8
    assert len(handle.state[RETRACTED_KEY]) == 3
    assert handle.verify().ok

    # Items added after a pop are the newest again.
    asyncio.run(session.add_items([{"role": "user", "content": "second question"}]))
    assert asyncio.run(session.get_items(limit=1)) == [
        {"role": "user", "content": "second question"}
    ]
    assert asyncio.run(session.pop_item()) == {"role": "user", "content": "second question"}
    asyncio.run(session.pop_item())
    asyncio.run(session.pop_item())
    assert asyncio.run(session.pop_item()) is None
    assert [i for i in asyncio.run(session.get_items()) if i.get("role") != "system"] == []


def test_racing_pops_retract_distinct_items(eng: ContextEngine) -> None:
    """Two handles pop at once: compare-and-set makes the loser retry on the next item."""
    writer = AgentCtxSession(eng, session_id="race", user_id="u1")
    asyncio.run(writer.add_items([{"role": "user", "content": f"m{i}"} for i in range(6)]))
    popped: list[Any] = []
    barrier = threading.Barrier(4)

    def pop() -> None:
        handle = AgentCtxSession(eng, session_id="race", user_id="u1")
        handle.session()
        barrier.wait()
        popped.append(handle.retract_latest())

    threads = [threading.Thread(target=pop) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(item["content"] for item in popped) == ["m2", "m3", "m4", "m5"]
    assert asyncio.run(writer.get_items(limit=10)) == [
        {"role": "user", "content": "m0"},
        {"role": "user", "content": "m1"},
    ]


# clear_session and the SDK's own expectations ---------------------------------------------


def test_clear_session_starts_again_with_the_same_id(eng: ContextEngine) -> None:
    session = AgentCtxSession(eng, session_id="clear", user_id="u1")
    asyncio.run(session.add_items([{"role": "user", "content": "forget me"}]))
    asyncio.run(session.pop_item())
    asyncio.run(session.clear_session())
    handle = eng.get_session("clear", user_id="u1")
    assert handle.events() == [] and RETRACTED_KEY not in handle.state
    assert asyncio.run(session.get_items()) == []
    asyncio.run(session.add_items([{"role": "user", "content": "hello again"}]))
    assert asyncio.run(session.get_items(limit=5)) == [{"role": "user", "content": "hello again"}]


def test_it_behaves_like_the_sdks_own_sqlite_session(eng: ContextEngine) -> None:
    """The same calls give the same answers as the SDK's reference implementation."""
    items: list[Any] = [
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": "b"},
        {"role": "user", "content": "c"},
    ]

    async def exercise(session: Any) -> list[Any]:
        out: list[Any] = [await session.get_items(), await session.pop_item()]
        await session.add_items(items)
        out += [await session.get_items(limit=2), await session.pop_item()]
        out += [await session.get_items(limit=5), await session.get_items(limit=0)]
        await session.clear_session()
        out += [await session.get_items(limit=5)]
        return out

    reference = asyncio.run(exercise(SQLiteSession("ref")))
    ours = asyncio.run(exercise(AgentCtxSession(eng, session_id="same", user_id="u1")))
    assert ours == reference


def test_without_the_sdk_the_error_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "agents.memory.session_settings", None)
    with pytest.raises(MissingExtra, match=r"pip install 'agentctx\[agents\]'"):
        AgentCtxSession(cast(Any, None), session_id="x", user_id="u1")


def test_screenshots_of_an_ended_batch_become_placeholders_in_the_window(
    eng: ContextEngine,
) -> None:
    """Visual compaction works on an agent's screenshots: the window keeps the anchor
    and result frames, the frames between become placeholders (restorable); the exact
    items still carry every screenshot."""
    shots = [make_png(seed=i * 13) for i in range(5)]
    items: list[dict[str, Any]] = [{"role": "user", "content": "Book a flight"}]
    for i, shot in enumerate(shots):
        items.append(
            {"type": "function_call", "call_id": f"c{i}", "name": "click", "arguments": "{}"}
        )
        items.append(
            {
                "type": "function_call_output",
                "call_id": f"c{i}",
                "output": [
                    {"type": "input_text", "text": f"clicked {i}"},
                    {"type": "input_image", "image_url": data_url(shot)},
                ],
            }
        )
    items.append({"role": "assistant", "content": "Booked."})
    session = AgentCtxSession(eng, session_id="shots", user_id="u1")
    asyncio.run(session.add_items(items))  # one batch: one turn, compacted when it ends
    asyncio.run(session.add_items([{"role": "user", "content": "thanks"}]))

    window = asyncio.run(session.get_items())
    texts = [
        part["text"]
        for item in window
        if item.get("role") == "user" and isinstance(item["content"], list)
        for part in item["content"]
        if part["type"] == "input_text"
    ]
    inline = [
        part["image_url"]
        for item in window
        if item.get("role") == "user" and isinstance(item["content"], list)
        for part in item["content"]
        if part["type"] == "input_image"
    ]
    assert len(texts) == 3 and all(t.startswith("[Visual_Placeholder: img_") for t in texts)
    assert len(inline) == 2  # the anchor (first) and result (last) frames
    image_id = texts[0].removeprefix("[Visual_Placeholder: ").removesuffix("]")
    assert eng.restore_image(image_id, user_id="u1") == shots[1]
    assert asyncio.run(session.get_items(limit=len(items) + 1))[:-1] == items


def test_offloaded_content_and_other_writers_events(eng: ContextEngine) -> None:
    """Content past the inline limit is offloaded to a blob and still comes back whole;
    events other code writes to the same session are in the window, not in the items."""
    big = "row " * (eng.settings.max_inline_bytes // 2)
    reasoning = {"type": "reasoning", "id": "rs_9", "summary": [], "encrypted_content": big}
    output = {"type": "function_call_output", "call_id": "c1", "output": big}
    session = AgentCtxSession(eng, session_id="big", user_id="u1")
    asyncio.run(
        session.add_items(
            [
                {"type": "function_call", "call_id": "c1", "name": "dump", "arguments": "{}"},
                output,
                reasoning,
            ]
        )
    )
    handle = eng.get_session("big", user_id="u1")
    handle.add_message("assistant", "a note another part of the agent wrote")
    stored = handle.events()
    assert any(isinstance(p, BlobPart) for p in stored[1].parts)  # offloaded output
    assert any(isinstance(p, BlobPart) for p in stored[2].parts)  # offloaded skeleton
    assert asyncio.run(session.get_items(limit=2)) == [output, reasoning]
    window = asyncio.run(session.get_items())
    assert window[-1] == {"role": "assistant", "content": "a note another part of the agent wrote"}
