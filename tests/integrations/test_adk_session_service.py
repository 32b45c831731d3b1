"""``AgentCtxSessionService``: ADK's session service kept in agentctx.

An ADK ``Runner`` runs an ``LlmAgent`` over a scripted model that calls a real Python
tool; ADK's own ``InMemorySessionService`` is the reference for what the service
answers.
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import json
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from google.adk.agents import LlmAgent
from google.adk.errors import StaleSessionError
from google.adk.errors.already_exists_error import AlreadyExistsError
from google.adk.events.event import Event as AdkEvent
from google.adk.events.event_actions import EventActions
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.sessions.base_session_service import BaseSessionService, GetSessionConfig
from google.adk.sessions.session import Session as AdkSession
from google.genai import types

from agentctx import ContextEngine, MissingExtra
from agentctx.events import BlobPart, EventType
from agentctx.integrations.adk import AgentCtxSessionService, agentctx_window
from conftest import make_png
from integrations.adk_scripted import ScriptedModel, call, get_weather, text, user

APP = "weather_app"  # an underscore: not an agentctx id as it is


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        yield engine


class Recording(AgentCtxSessionService):
    """The service, keeping a copy of every event ADK hands it (as it was stored)."""

    def __init__(self, engine: ContextEngine) -> None:
        super().__init__(engine)
        self.written: list[AdkEvent] = []

    async def append_event(self, session: AdkSession, event: AdkEvent) -> AdkEvent:
        stored = await super().append_event(session, event)
        if not event.partial:
            self.written.append(copy.deepcopy(stored))
        return stored


def run(runner: Runner, session_id: str, message: str, user_id: str = "u1") -> list[AdkEvent]:
    async def go() -> list[AdkEvent]:
        return [
            event
            async for event in runner.run_async(
                user_id=user_id, session_id=session_id, new_message=user(message)
            )
        ]

    return asyncio.run(go())


def get(service: BaseSessionService, session_id: str, **config: Any) -> AdkSession:
    found = asyncio.run(
        service.get_session(
            app_name=APP,
            user_id="u1",
            session_id=session_id,
            config=GetSessionConfig(**config) if config else None,
        )
    )
    assert found is not None
    return found


# The runner -----------------------------------------------------------------------------


def test_a_runner_reads_back_exactly_what_it_wrote_one_turn_per_invocation(
    eng: ContextEngine,
) -> None:
    service = Recording(eng)
    model = ScriptedModel(
        model="scripted",
        script=[
            call("get_weather", city="Lisbon"),
            text("Sunny in Lisbon."),
            call("get_weather", city="Porto"),
            text("Sunny in Porto too."),
            text("You asked about Lisbon and Porto."),
        ],
    )
    agent = LlmAgent(name="helper", model=model, instruction="Answer briefly.", tools=[get_weather])
    runner = Runner(app_name=APP, agent=agent, session_service=service)
    session = asyncio.run(service.create_session(app_name=APP, user_id="u1"))
    yielded = run(runner, session.id, "Weather in Lisbon?")
    yielded += run(runner, session.id, "And in Porto?")
    yielded += run(runner, session.id, "What did I ask?")
    assert yielded[-1].content is not None and yielded[-1].content.parts
    assert yielded[-1].content.parts[0].text == "You asked about Lisbon and Porto."

    # Another service on the same engine (a new process, say) reads the same events.
    back = get(AgentCtxSessionService(eng), session.id)
    assert len(service.written) == 10  # 3 user messages, 2 calls, 2 results, 3 answers
    assert back.events == service.written
    for read, wrote in zip(back.events, service.written, strict=True):
        assert read.id == wrote.id and read.invocation_id == wrote.invocation_id
        assert read.timestamp == wrote.timestamp and read.author == wrote.author
    # The tool really ran: its result is what ADK recorded, paired by its call id.
    result = back.events[2].content
    assert result is not None and result.parts and result.parts[0].function_response
    assert result.parts[0].function_response.response == {"report": "sunny and 24C in Lisbon"}
    call_part = back.events[1].content.parts[0]  # type: ignore[union-attr,index]
    assert call_part.function_call and call_part.function_call.id
    assert call_part.function_call.id == result.parts[0].function_response.id

    # In agentctx: typed events, linked calls, one turn per invocation, a good chain.
    handle = eng.get_session(session.id, user_id="u1")
    assert handle.agent_id == "weather=5Fapp"
    events = handle.events()
    assert [e.type for e in events[:4]] == [
        EventType.USER_INPUT,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.AGENT_RESPONSE,
    ]
    assert events[1].call_id == events[2].call_id == call_part.function_call.id
    assert events[1].meta.tool_name == "get_weather" and events[0].author == "user"
    invocations = [e.invocation_id for e in service.written]
    turn_of = {
        inv: {
            e.turn_id
            for e, w in zip(events, service.written, strict=True)
            if w.invocation_id == inv
        }
        for inv in invocations
    }
    assert all(len(turns) == 1 for turns in turn_of.values())
    assert len({next(iter(t)) for t in turn_of.values()}) == 3
    turns = handle.turns()
    assert [t.request_id for t in turns] == list(dict.fromkeys(invocations))
    # A new invocation ends the previous one's turn; the newest stays open.
    assert [t.status for t in turns] == ["ok", "ok", "open"]
    assert handle.verify().ok


def test_parallel_calls_and_their_responses_round_trip_and_pair_up(eng: ContextEngine) -> None:
    """One model answer calling two tools is one ADK event of two calls; ADK answers
    both in one event of two responses: each becomes linked agentctx events."""
    service = Recording(eng)
    both = types.Content(
        role="model",
        parts=[
            types.Part(text="Checking both."),
            types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Oslo"})),
            types.Part(function_call=types.FunctionCall(name="get_weather", args={"city": "Rome"})),
        ],
    )
    model = ScriptedModel(model="scripted", script=[both, text("Cold and warm.")])
    agent = LlmAgent(name="helper", model=model, tools=[get_weather])
    runner = Runner(app_name=APP, agent=agent, session_service=service)
    session = asyncio.run(service.create_session(app_name=APP, user_id="u1"))
    run(runner, session.id, "Oslo and Rome?")
    assert get(service, session.id).events == service.written
    events = eng.get_session(session.id, user_id="u1").events()
    assert [e.type for e in events] == [
        EventType.USER_INPUT,
        EventType.AGENT_RESPONSE,
        EventType.TOOL_CALL,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.TOOL_RESULT,
        EventType.AGENT_RESPONSE,
    ]
    assert [e.call_id for e in events[2:4]] == [e.call_id for e in events[4:6]]
    assert len({e.call_id for e in events[2:4]}) == 2
    # The next model call sees the pair as ADK would send it: one model content with
    # the text and both calls, one user content with both responses.
    model.script.append(text("Done."))
    window = agentctx_window(eng, budget=3000)
    agent.before_model_callback = window
    run(runner, session.id, "Thanks")
    sent = model.requests[-1].contents
    calls = [p for c in sent for p in c.parts or () if p.function_call]
    responses = [p for c in sent for p in c.parts or () if p.function_response]
    assert [p.function_call.args for p in calls] == [{"city": "Oslo"}, {"city": "Rome"}]  # type: ignore[union-attr]
    assert len(responses) == 2 and sent[2].parts == responses
    assert sent[1].parts and sent[1].parts[0].text == "Checking both."


def test_concurrent_sessions_of_a_user_keep_each_others_user_state(eng: ContextEngine) -> None:
    service = AgentCtxSessionService(eng)
    ids = [f"s{i}" for i in range(4)]
    sessions = [
        asyncio.run(service.create_session(app_name=APP, user_id="u1", session_id=sid))
        for sid in ids
    ]
    barrier = threading.Barrier(len(sessions))

    def write(index: int) -> None:
        barrier.wait()
        event = AdkEvent(
            invocation_id=f"inv{index}",
            author="helper",
            actions=EventActions(state_delta={f"user:k{index}": index, "app:last": index}),
        )
        service.record_event(sessions[index], event)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(len(sessions))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    state = asyncio.run(service.get_user_state(app_name=APP, user_id="u1"))
    assert state == {f"k{i}": i for i in range(len(sessions))}
    assert get(service, "s0").state["app:last"] in range(len(sessions))


def test_the_events_config_and_timestamps_match_the_in_memory_service(eng: ContextEngine) -> None:
    ours, reference = AgentCtxSessionService(eng), InMemorySessionService()
    base = 1_795_000_000.123456789
    for service in (ours, reference):
        session = asyncio.run(service.create_session(app_name=APP, user_id="u1", session_id="s1"))
        for i in range(7):
            event = AdkEvent(
                id=f"ev{i}",
                invocation_id=f"inv{i // 2}",
                author="user" if i % 2 == 0 else "helper",
                content=types.Content(
                    role="user" if i % 2 == 0 else "model", parts=[types.Part(text=f"m{i}")]
                ),
                timestamp=base + i * 10 + (5 if i == 3 else 0),
            )
            asyncio.run(service.append_event(session, event))
    configs: list[dict[str, Any]] = [
        {},
        {"num_recent_events": 0},
        {"num_recent_events": 1},
        {"num_recent_events": 3},
        {"num_recent_events": 100},
        {"after_timestamp": base + 30},
        {"after_timestamp": base + 35},
        {"after_timestamp": base + 1000},
        {"after_timestamp": base - 1},
        {"num_recent_events": 4, "after_timestamp": base + 40},
    ]
    for config in configs:
        mine = get(ours, "s1", **config).events
        expected = get(reference, "s1", **config).events
        assert mine == expected, config
    assert [e.id for e in get(ours, "s1", num_recent_events=3).events] == ["ev4", "ev5", "ev6"]
    assert get(ours, "s1").events[0].timestamp == base  # exact, beyond microseconds


# State ------------------------------------------------------------------------------------


def test_state_scopes_behave_as_in_the_in_memory_service(eng: ContextEngine) -> None:
    ours, reference = AgentCtxSessionService(eng), InMemorySessionService()

    async def exercise(service: BaseSessionService) -> list[Any]:
        seen: list[Any] = []
        first = await service.create_session(
            app_name=APP,
            user_id="u1",
            session_id="a",
            state={"app:theme": "dark", "user:lang": "pt", "temp:scratch": 1, "step": 0},
        )
        seen.append(first.state)
        event = AdkEvent(
            id="e1",
            invocation_id="i1",
            author="helper",
            actions=EventActions(
                state_delta={"step": 1, "user:city": "Lisbon", "app:count": 2, "temp:t": "x"}
            ),
        )
        await service.append_event(first, event)
        seen.append(first.state)  # temp state reaches the session object in memory
        seen.append(event.actions.state_delta)  # and is trimmed from the stored event
        second = await service.create_session(
            app_name=APP, user_id="u1", session_id="b", state={"user:lang": "en"}
        )
        other = await service.create_session(app_name=APP, user_id="u2", session_id="c")
        elsewhere = await service.create_session(app_name="other_app", user_id="u1", session_id="d")
        seen += [second.state, other.state, elsewhere.state]
        for user_id, sid in (("u1", "a"), ("u1", "b"), ("u2", "c")):
            stored = await service.get_session(app_name=APP, user_id=user_id, session_id=sid)
            assert stored is not None
            seen.append(stored.state)
            seen.append([e.actions.state_delta for e in stored.events])
        seen.append(await service.get_user_state(app_name=APP, user_id="u1"))
        seen.append(await service.get_user_state(app_name=APP, user_id="u2"))
        listed = await service.list_sessions(app_name=APP)
        seen.append(
            sorted((s.user_id, s.id, tuple(sorted(s.state.items()))) for s in listed.sessions)
        )
        mine = await service.list_sessions(app_name=APP, user_id="u1")
        seen.append(sorted((s.id, s.events) for s in mine.sessions))
        await service.delete_session(app_name=APP, user_id="u1", session_id="b")
        seen.append(await service.get_session(app_name=APP, user_id="u1", session_id="b"))
        seen.append(await service.get_session(app_name="other_app", user_id="u1", session_id="a"))
        return seen

    expected = asyncio.run(exercise(reference))
    assert asyncio.run(exercise(ours)) == expected
    # What the reference says, spelled out: app state is the app's, user state the user's.
    assert expected[3] == {
        "app:theme": "dark",
        "app:count": 2,
        "user:lang": "en",
        "user:city": "Lisbon",
    }
    assert expected[4] == {"app:theme": "dark", "app:count": 2}
    assert expected[1]["temp:t"] == "x" and "temp:t" not in expected[2]
    with pytest.raises(AlreadyExistsError):
        asyncio.run(ours.create_session(app_name=APP, user_id="u1", session_id="a"))


def test_state_set_by_a_tool_during_a_run_is_kept_by_scope(eng: ContextEngine) -> None:
    from google.adk.tools.tool_context import ToolContext

    def remember_city(city: str, tool_context: ToolContext) -> str:
        """Remember the user's city."""
        tool_context.state["user:city"] = city
        tool_context.state["last_lookup"] = city
        tool_context.state["temp:raw"] = "scratch"
        return "remembered"

    service = AgentCtxSessionService(eng)
    model = ScriptedModel(
        model="scripted", script=[call("remember_city", city="Lisbon"), text("Noted.")]
    )
    agent = LlmAgent(name="helper", model=model, tools=[remember_city])
    runner = Runner(app_name=APP, agent=agent, session_service=service)
    session = asyncio.run(service.create_session(app_name=APP, user_id="u1"))
    run(runner, session.id, "I live in Lisbon")
    stored = get(service, session.id)
    assert stored.state == {"user:city": "Lisbon", "last_lookup": "Lisbon"}
    later = asyncio.run(service.create_session(app_name=APP, user_id="u1"))
    assert later.state == {"user:city": "Lisbon"}  # the user's, in their next session
    # The agentctx session state is the ADK session's own scope.
    assert eng.get_session(session.id, user_id="u1").state == {"last_lookup": "Lisbon"}
    # The user's state is the user's data: erased with it.
    eng.delete_user_data("u1")
    assert asyncio.run(service.get_user_state(app_name=APP, user_id="u1")) == {}


# Stale writes -------------------------------------------------------------------------------


def test_appending_through_a_stale_session_object_raises_and_writes_nothing(
    eng: ContextEngine,
) -> None:
    service = AgentCtxSessionService(eng)
    asyncio.run(service.create_session(app_name=APP, user_id="u1", session_id="s"))
    one, two = get(service, "s"), get(service, "s")

    def event(i: int) -> AdkEvent:
        return AdkEvent(
            invocation_id="inv",
            author="user",
            content=types.Content(role="user", parts=[types.Part(text=f"hello {i}")]),
        )

    asyncio.run(service.append_event(one, event(1)))
    asyncio.run(service.append_event(one, event(2)))  # the writer's own object stays current
    with pytest.raises(StaleSessionError):
        asyncio.run(service.append_event(two, event(3)))
    assert [e.content.parts[0].text for e in get(service, "s").events] == ["hello 1", "hello 2"]  # type: ignore[union-attr,index]
    # A session object this service did not make is judged by its newest event.
    behind = AdkSession(id="s", app_name=APP, user_id="u1", events=get(service, "s").events[:1])
    with pytest.raises(StaleSessionError):
        asyncio.run(service.append_event(behind, event(4)))
    current = AdkSession(id="s", app_name=APP, user_id="u1", events=get(service, "s").events)
    asyncio.run(service.append_event(current, event(5)))
    assert len(get(service, "s").events) == 3
    # A reloaded object writes again.
    asyncio.run(service.append_event(get(service, "s"), event(6)))
    assert len(get(service, "s").events) == 4


# Content the engine changes on the way in -----------------------------------------------


def test_personal_data_comes_back_redacted_and_everything_else_as_written(
    eng: ContextEngine,
) -> None:
    service = Recording(eng)
    session = asyncio.run(service.create_session(app_name=APP, user_id="u1"))
    png = make_png(seed=4)
    said = AdkEvent(
        invocation_id="inv1",
        author="user",
        content=types.Content(
            role="user",
            parts=[
                types.Part(text="Mail me at ann@example.com"),
                types.Part(inline_data=types.Blob(mime_type="image/png", data=png)),
            ],
        ),
        actions=EventActions(state_delta={"contact": "ann@example.com", "n": 1}),
    )
    asyncio.run(service.append_event(session, said))
    back = get(service, session.id)
    event = back.events[0]
    wrote = service.written[0]
    assert event.content is not None and event.content.parts
    assert "ann@example.com" not in event.content.parts[0].text  # type: ignore[operator]
    assert event.content.parts[0].text.startswith("Mail me at ")  # type: ignore[union-attr]
    assert event.content.parts[1] == wrote.content.parts[1]  # type: ignore[union-attr,index]
    assert event.actions.state_delta["n"] == 1
    assert "ann@example.com" not in json.dumps(event.actions.state_delta)
    assert "ann@example.com" not in json.dumps(back.state)
    # Apart from the redacted values, the event is the one written.
    redacted = event.model_copy(update={"content": wrote.content, "actions": wrote.actions})
    assert redacted == wrote
    stored = eng.get_session(session.id, user_id="u1").events()
    assert "ann@example.com" not in json.dumps([e.model_dump(mode="json") for e in stored])
    assert eng.restore_image(stored[0].images[0].image_id, user_id="u1") == png


def test_large_content_is_offloaded_and_comes_back_whole(eng: ContextEngine) -> None:
    service = AgentCtxSessionService(eng)
    session = asyncio.run(service.create_session(app_name=APP, user_id="u1"))
    big = "row " * (eng.settings.max_inline_bytes // 2)
    request = AdkEvent(
        invocation_id="inv1",
        author="helper",
        content=types.Content(
            role="model",
            parts=[types.Part(function_call=types.FunctionCall(id="c1", name="dump", args={}))],
        ),
    )
    event = AdkEvent(
        invocation_id="inv1",
        author="helper",
        content=types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="c1", name="dump", response={"rows": big}
                    )
                )
            ],
        ),
        custom_metadata={"note": big},
    )
    asyncio.run(service.append_event(session, copy.deepcopy(request)))
    asyncio.run(service.append_event(session, copy.deepcopy(event)))
    assert get(service, session.id).events == [request, event]
    stored = eng.get_session(session.id, user_id="u1").events()
    assert [e.type for e in stored] == [EventType.TOOL_CALL, EventType.TOOL_RESULT]
    assert any(isinstance(p, BlobPart) for p in stored[1].parts)  # the offloaded response


def test_a_response_the_log_cannot_link_is_kept_as_a_note(eng: ContextEngine) -> None:
    """A function response to no recorded call (a client answering a call made
    elsewhere, say) is recorded all the same, and read back as written."""
    service = AgentCtxSessionService(eng)
    session = asyncio.run(service.create_session(app_name=APP, user_id="u1"))
    orphan = AdkEvent(
        invocation_id="inv1",
        author="user",
        content=types.Content(
            role="user",
            parts=[
                types.Part(
                    function_response=types.FunctionResponse(
                        id="elsewhere", name="confirm", response={"ok": True}
                    )
                )
            ],
        ),
    )
    asyncio.run(service.append_event(session, copy.deepcopy(orphan)))
    assert get(service, session.id).events == [orphan]
    stored = eng.get_session(session.id, user_id="u1").events()
    assert [e.type for e in stored] == [EventType.NOTE]


def test_without_google_adk_the_import_names_the_extra(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in list(sys.modules):
        if name.startswith("agentctx.integrations.adk"):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "google.adk", None)
    with pytest.raises(MissingExtra, match=r"pip install 'agentctx\[adk\]'"):
        importlib.import_module("agentctx.integrations.adk")
