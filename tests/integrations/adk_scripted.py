"""A scripted ADK model for the ADK integration's tests: it answers from a script and
keeps every request it was sent, so a test can assert on what the model received."""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from google.adk.models.base_llm import BaseLlm
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.genai import types
from pydantic import Field


def text(value: str) -> types.Content:
    """A model answer in words."""
    return types.Content(role="model", parts=[types.Part(text=value)])


def call(name: str, **args: Any) -> types.Content:
    """A model answer that calls a tool."""
    return types.Content(
        role="model", parts=[types.Part(function_call=types.FunctionCall(name=name, args=args))]
    )


def user(value: str) -> types.Content:
    """A user message."""
    return types.Content(role="user", parts=[types.Part(text=value)])


class ScriptedModel(BaseLlm):
    """Answers each request with the next content of ``script``."""

    script: list[types.Content] = Field(default_factory=list)
    requests: list[LlmRequest] = Field(default_factory=list)

    async def generate_content_async(
        self, llm_request: LlmRequest, stream: bool = False
    ) -> AsyncGenerator[LlmResponse, None]:
        self.requests.append(llm_request.model_copy(deep=True))
        if not self.script:
            raise AssertionError("the scripted model ran out of answers")
        yield LlmResponse(content=self.script.pop(0))


def get_weather(city: str) -> dict[str, str]:
    """The weather in a city."""
    return {"report": f"sunny and 24C in {city}"}
