"""A Google ADK agent whose sessions, memory and model input are kept by agentctx.

Runs offline: the model is scripted (it answers from a list and calls a real Python
tool), everything else is the real thing — ADK's ``Runner`` and ``LlmAgent``, agentctx
on SQLite in a temporary directory.

    pip install "agentctx[adk]"
    python examples/adk_agent.py
"""

from __future__ import annotations

import asyncio
import logging
import tempfile
from collections.abc import AsyncGenerator
from pathlib import Path

from google.adk.agents import LlmAgent
from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.runners import Runner
from google.genai import types
from pydantic import Field

from agentctx import ContextEngine
from agentctx.integrations.adk import (
    AgentCtxMemoryService,
    AgentCtxSessionService,
    agentctx_window,
)

APP = "travel_agent"
BUDGET = 300


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"report": f"sunny and 24C in {city}"}


class ScriptedModel(BaseLlm):
    """A stand-in for Gemini: answers each request with the next scripted content and
    keeps the requests it received."""

    script: list[types.Content] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.model_copy(deep=True))
        yield LlmResponse(content=self.script.pop(0))


def answer(text: str) -> types.Content:
    return types.Content(role="model", parts=[types.Part(text=text)])


def weather_call(city: str) -> types.Content:
    call = types.FunctionCall(name="get_weather", args={"city": city})
    return types.Content(role="model", parts=[types.Part(function_call=call)])


CHAT = [
    ("I prefer window seats. What is the weather in Lisbon?", [weather_call("Lisbon")]),
    ("Book me a flight to Lisbon on Friday.", [answer("Booked: Friday, window seat.")]),
    ("Any museum tips?", [answer("The tile museum, then the Gulbenkian. " * 15)]),
    ("And where should I eat?", [answer("Try the market hall in Cais do Sodre. " * 15)]),
    ("What temperature did you find for Lisbon?", [answer("The tool reported 24C.")]),
]


async def main(home: Path) -> None:
    with ContextEngine(url=f"sqlite:///{home / 'agentctx.db'}", home=home) as engine:
        sessions = AgentCtxSessionService(engine)
        memory = AgentCtxMemoryService(engine, sessions=sessions)
        window = agentctx_window(engine, budget=BUDGET)
        script = [step for _, steps in CHAT for step in steps]
        script.insert(1, answer("Sunny, 24C in Lisbon."))  # after the tool result
        model = ScriptedModel(model="scripted", script=script)
        agent = LlmAgent(
            name="travel_agent",
            model=model,
            instruction="You are a travel assistant. Answer briefly.",
            tools=[get_weather],
            before_model_callback=window,  # the model input is the agentctx window
        )
        runner = Runner(app_name=APP, agent=agent, session_service=sessions, memory_service=memory)
        session = await sessions.create_session(
            app_name=APP, user_id="ann", state={"user:home": "Porto", "trip": "Lisbon"}
        )

        for message, _ in CHAT:
            print(f"user   > {message}")
            content = types.Content(role="user", parts=[types.Part(text=message)])
            async for event in runner.run_async(
                user_id="ann", session_id=session.id, new_message=content
            ):
                for part in (event.content.parts or []) if event.content else []:
                    if part.function_call:
                        print(f"  tool call   {part.function_call.name}({part.function_call.args})")
                    elif part.function_response:
                        print(f"  tool result {part.function_response.response}")
                    elif part.text:
                        print(f"agent  > {part.text[:70]}")

        last = window.last_window
        assert last is not None
        print()
        print(f"The last model call received the agentctx window: {last.tokens} tokens")
        print(f"(budget {BUDGET}), {len(model.requests[-1].contents)} contents; by section:")
        for section in last.report.sections:
            if section.tokens:
                print(f"  {section.name:<22} {section.tokens:>5} tokens")
        request = model.requests[-1]
        sent = f"{request.config.system_instruction} {request.contents}"
        print(f"the first turn's tool result (24C) is in it: {'24C' in sent}")
        print(f"events left out of it: {len(last.report.dropped)}")

        stored = await sessions.get_session(app_name=APP, user_id="ann", session_id=session.id)
        assert stored is not None
        handle = engine.get_session(session.id, user_id="ann")
        print()
        print(f"ADK reads back {len(stored.events)} events; state {stored.state}")
        print(
            f"agentctx keeps them as {len(handle.events())} events in {len(handle.turns())} turns"
        )
        print(f"hash chain verified: {handle.verify().ok}")

        await sessions.end_invocation(stored)
        await memory.add_session_to_memory(stored)
        found = await memory.search_memory(app_name=APP, user_id="ann", query="seat preference")
        print()
        print("Memory search 'seat preference':")
        for entry in found.memories:
            text = " ".join(p.text or "" for p in entry.content.parts or [])
            print(f"  - {text}  ({entry.custom_metadata['kind']})")


if __name__ == "__main__":
    logging.getLogger("google_adk").setLevel(logging.ERROR)  # no telemetry notes
    with tempfile.TemporaryDirectory(prefix="agentctx-adk-") as directory:
        asyncio.run(main(Path(directory)))
