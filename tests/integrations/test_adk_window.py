"""The agentctx window as ADK's model input: what the scripted model received."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.apps import App
from google.adk.runners import Runner
from google.genai import types

from agentctx import ContextEngine
from agentctx.events import EventType
from agentctx.integrations.adk import (
    AgentCtxPlugin,
    AgentCtxSessionService,
    agentctx_window,
    window_contents,
)
from integrations.adk_scripted import ScriptedModel, call, get_weather, text, user

APP = "travel_app"
BUDGET = 900


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        yield engine


def run(runner: Runner, session_id: str, message: str) -> None:
    async def go() -> None:
        async for _ in runner.run_async(
            user_id="u1", session_id=session_id, new_message=user(message)
        ):
            pass

    asyncio.run(go())


def request_text(contents: list[types.Content]) -> str:
    """Everything a request's contents say, as one text."""
    pieces: list[str] = []
    for content in contents:
        for part in content.parts or ():
            if part.text:
                pieces.append(part.text)
            if part.function_call:
                pieces.append(json.dumps(part.function_call.args))
            if part.function_response:
                pieces.append(json.dumps(part.function_response.response))
    return "\n".join(pieces)


FILLER = 10


def test_the_model_receives_the_window_within_its_budget(eng: ContextEngine) -> None:
    service = AgentCtxSessionService(eng)
    window = agentctx_window(eng, budget=BUDGET)
    script = [call("get_weather", city="Lisbon"), text("It is sunny in Lisbon.")]
    script += [text(f"Recipe {i}: " + "knead the dough and wait " * 12) for i in range(FILLER)]
    script += [text("The tool said 24C.")]
    model = ScriptedModel(model="scripted", script=script)
    agent = LlmAgent(
        name="helper",
        model=model,
        instruction="Answer briefly.",
        tools=[get_weather],
        before_model_callback=window,
    )
    runner = Runner(app_name=APP, agent=agent, session_service=service)
    session = asyncio.run(service.create_session(app_name=APP, user_id="u1"))
    run(runner, session.id, "What is the weather in Lisbon?")
    for i in range(FILLER):
        run(runner, session.id, f"Give me bread recipe number {i} " + "with rye and seeds " * 10)
    run(runner, session.id, "What temperature did the weather tool report for Lisbon?")

    last = model.requests[-1]
    assert window.last_window is not None
    sent_window = window.last_window
    # The model got the window, not ADK's whole history: within the budget, and
    # exactly the window's contents.
    assert sent_window.tokens <= BUDGET
    _, contents = window_contents(sent_window.messages)
    assert last.contents == contents
    assert str(last.config.system_instruction).startswith("Answer briefly.")
    said = request_text(last.contents)
    assert "What temperature did the weather tool report for Lisbon?" in said
    assert "Recipe 0:" not in said  # the oldest turns are out of the window
    # The tool result from the first invocation, ten turns back, is there: retrieved as
    # relevant to the question, or named by the ledger of the compacted past (which ADK
    # sends as the system instruction).
    system = str(last.config.system_instruction)
    handle = eng.get_session(session.id, user_id="u1")
    result = next(e for e in handle.events() if e.type is EventType.TOOL_RESULT)
    if result.event_id in sent_window.report.included_event_ids:
        assert "sunny and 24C in Lisbon" in said
    else:
        assert "Also named earlier:" in system and "sunny and 24C in Lisbon" in system
    # ADK's own request would have carried the whole history.
    full = sum(len(json.dumps(e.model_dump(mode="json"))) for e in handle.events())
    assert len(said) < full / 2


def test_calls_and_responses_stay_paired_and_ids_adk_made_are_not_sent() -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "system", "content": "[Earlier conversation, folded] …"},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {
                    "id": "adk-1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Lisbon"}'},
                },
                {
                    "id": "call-2",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Porto"}'},
                },
                {
                    "id": "unanswered",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": "{}"},
                },
            ],
        },
        {"role": "tool", "tool_call_id": "adk-1", "content": '{"report": "sunny"}'},
        {"role": "tool", "tool_call_id": "call-2", "content": "rainy"},
        {"role": "tool", "tool_call_id": "orphan", "content": "lost"},
        {"role": "assistant", "content": "Sunny and rainy."},
        {"role": "system", "content": "## Active task\nweather"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "and this?"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw=="}},
            ],
        },
    ]
    system, contents = window_contents(messages)
    assert system == "Be brief.\n\n[Earlier conversation, folded] …"
    roles = [c.role for c in contents]
    assert roles == ["user", "model", "user", "model", "user", "user"]
    calls = [p.function_call for p in contents[1].parts or () if p.function_call]
    assert [(c.id, c.name, c.args) for c in calls] == [
        (None, "get_weather", {"city": "Lisbon"}),
        ("call-2", "get_weather", {"city": "Porto"}),
    ]
    responses = [p.function_response for p in contents[2].parts or () if p.function_response]
    assert [(r.id, r.name, r.response) for r in responses] == [
        (None, "get_weather", {"report": "sunny"}),
        ("call-2", "get_weather", {"result": "rainy"}),
    ]
    assert contents[4].parts and contents[4].parts[0].text == "## Active task\nweather"
    image = contents[5].parts[1].inline_data  # type: ignore[index]
    assert image is not None and image.mime_type == "image/png" and image.data


def test_the_plugin_sends_the_window_and_ends_the_turn_with_the_run(eng: ContextEngine) -> None:
    service = AgentCtxSessionService(eng)
    plugin = AgentCtxPlugin(eng, budget=2000)
    model = ScriptedModel(
        model="scripted", script=[call("get_weather", city="Oslo"), text("Cold."), text("Oslo.")]
    )
    agent = LlmAgent(name="helper", model=model, tools=[get_weather])
    app = App(name=APP, root_agent=agent, plugins=[plugin])
    runner = Runner(app=app, session_service=service)
    session = asyncio.run(service.create_session(app_name=APP, user_id="u1"))
    run(runner, session.id, "Weather in Oslo?")
    handle = eng.get_session(session.id, user_id="u1")
    assert [t.status for t in handle.turns()] == ["ok"]  # ended with the run
    # The window the model got is kept for the invocation's turn (its repro package).
    kept = eng.hitl.window("u1", session.id, handle.turns()[0].turn_id)
    assert plugin.window.last_window is not None
    assert kept is not None and kept.messages == plugin.window.last_window.messages
    run(runner, session.id, "Which city?")
    assert [t.status for t in handle.turns()] == ["ok", "ok"]
    assert plugin.window.last_window is not None
    _, contents = window_contents(plugin.window.last_window.messages)
    assert model.requests[-1].contents == contents
    assert "sunny and 24C in Oslo" in request_text(contents)
