"""A chat model that answers from a script and keeps what it was sent: LangChain's own
``GenericFakeChatModel`` with tools bound as a real model binds them (a prebuilt agent
calls ``bind_tools``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, BaseMessage
from langchain_core.outputs import ChatResult
from langchain_core.runnables import Runnable
from langchain_core.tools import BaseTool
from pydantic import Field


class ScriptedChatModel(GenericFakeChatModel):
    """Answers with the next scripted message; ``sent`` is every input, in order."""

    sent: list[list[BaseMessage]] = Field(default_factory=list)
    tools: list[str] = Field(default_factory=list)

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.sent.append(list(messages))
        return super()._generate(messages, stop, run_manager, **kwargs)

    def bind_tools(
        self,
        tools: Sequence[dict[str, Any] | type | Callable[..., Any] | BaseTool],
        *,
        tool_choice: str | None = None,
        **kwargs: Any,
    ) -> Runnable[Any, AIMessage]:
        self.tools = [getattr(tool, "name", str(tool)) for tool in tools]
        return self


def scripted(*replies: AIMessage | str) -> ScriptedChatModel:
    """A model that answers ``replies`` in order."""
    return ScriptedChatModel(messages=iter(replies))


def call(call_id: str, name: str, **args: Any) -> AIMessage:
    """An AI message that calls one tool."""
    return AIMessage(content="", tool_calls=[{"id": call_id, "name": name, "args": args}])
