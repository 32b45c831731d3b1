"""``AgentCtxMemoryService``: ADK's memory service over agentctx long-term memory."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import pytest
from google.adk.agents import LlmAgent
from google.adk.events.event import Event as AdkEvent
from google.adk.memory.memory_entry import MemoryEntry
from google.adk.runners import Runner
from google.adk.sessions import InMemorySessionService
from google.adk.tools import load_memory
from google.genai import types

from agentctx import ContextEngine
from agentctx.integrations.adk import AgentCtxMemoryService, AgentCtxSessionService
from integrations.adk_scripted import ScriptedModel, call, text, user

APP = "travel_app"


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        yield engine


def texts(entries: list[MemoryEntry]) -> list[str]:
    return [p.text or "" for e in entries for p in e.content.parts or ()]


def said(author: str, words: str, invocation: str) -> AdkEvent:
    return AdkEvent(
        invocation_id=invocation,
        author=author,
        content=types.Content(
            role="user" if author == "user" else "model", parts=[types.Part(text=words)]
        ),
    )


def test_a_session_added_to_memory_is_found_by_a_later_search(eng: ContextEngine) -> None:
    sessions = AgentCtxSessionService(eng)
    memory = AgentCtxMemoryService(eng, sessions=sessions)
    session = asyncio.run(sessions.create_session(app_name=APP, user_id="u1"))
    for event in (
        said("user", "I prefer window seats on long flights.", "i1"),
        said("helper", "Noted, window seats it is.", "i1"),
        said("user", "My favourite city is Lisbon.", "i2"),
    ):
        asyncio.run(sessions.append_event(session, event))
    asyncio.run(memory.add_session_to_memory(session))

    found = asyncio.run(memory.search_memory(app_name=APP, user_id="u1", query="window seats"))
    assert found.memories, "the preference was learned"
    top = found.memories[0]
    assert "window seat" in (top.content.parts or [types.Part()])[0].text.lower()  # type: ignore[union-attr]
    assert top.id and top.timestamp and top.custom_metadata["kind"] == "preference"
    city = asyncio.run(memory.search_memory(app_name=APP, user_id="u1", query="favourite city"))
    assert any("Lisbon" in t for t in texts(city.memories))
    # Memories are the user's: another user finds nothing.
    other = asyncio.run(memory.search_memory(app_name=APP, user_id="u2", query="window seats"))
    assert other.memories == []
    # Adding the session again learns nothing twice.
    before = len(eng.memory.list("u1"))
    asyncio.run(memory.add_session_to_memory(session))
    assert len(eng.memory.list("u1")) == before


def test_sessions_kept_elsewhere_explicit_memories_and_deletion(eng: ContextEngine) -> None:
    memory = AgentCtxMemoryService(eng)
    elsewhere = InMemorySessionService()
    session = asyncio.run(elsewhere.create_session(app_name=APP, user_id="u1", session_id="s9"))
    asyncio.run(elsewhere.append_event(session, said("user", "I prefer aisle seats.", "i1")))
    asyncio.run(memory.add_session_to_memory(session))
    # The session was recorded in agentctx to learn from it.
    assert eng.get_session("s9", user_id="u1").events()[0].text == "I prefer aisle seats."
    found = asyncio.run(memory.search_memory(app_name=APP, user_id="u1", query="aisle seats"))
    assert any("aisle" in t.lower() for t in texts(found.memories))

    entry = MemoryEntry(content=types.Content(parts=[types.Part(text="Travels with a dog")]))
    asyncio.run(memory.add_memory(app_name=APP, user_id="u1", memories=[entry]))
    dog = asyncio.run(memory.search_memory(app_name=APP, user_id="u1", query="dog"))
    assert texts(dog.memories)[0] == "Travels with a dog"
    # Added for this app: another app of the user does not see it.
    other_app = asyncio.run(memory.search_memory(app_name="other_app", user_id="u1", query="dog"))
    assert "Travels with a dog" not in texts(other_app.memories)
    memory_id = dog.memories[0].id
    assert memory_id is not None
    asyncio.run(memory.delete_memory(app_name=APP, user_id="u1", memory_id=memory_id))
    gone = asyncio.run(memory.search_memory(app_name=APP, user_id="u1", query="dog"))
    assert "Travels with a dog" not in texts(gone.memories)


def test_an_agent_loads_memories_with_adks_own_tool(eng: ContextEngine) -> None:
    sessions = AgentCtxSessionService(eng)
    memory = AgentCtxMemoryService(eng, sessions=sessions)
    first = asyncio.run(sessions.create_session(app_name=APP, user_id="u1"))
    asyncio.run(sessions.append_event(first, said("user", "I prefer night trains.", "i1")))
    asyncio.run(memory.add_session_to_memory(first))

    model = ScriptedModel(
        model="scripted", script=[call("load_memory", query="night trains"), text("By train.")]
    )
    agent = LlmAgent(name="helper", model=model, tools=[load_memory])
    runner = Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=memory)
    later = asyncio.run(sessions.create_session(app_name=APP, user_id="u1"))

    async def go() -> None:
        async for _ in runner.run_async(
            user_id="u1", session_id=later.id, new_message=user("How do I like to travel?")
        ):
            pass

    asyncio.run(go())
    response = next(
        p.function_response
        for c in model.requests[-1].contents
        for p in c.parts or ()
        if p.function_response
    )
    assert response is not None and "night trains" in str(response.response).lower()
