"""The agentctx window as ADK's model input.

ADK builds a model request from the session's whole event list; with agentctx the
request carries the context window instead: ``build_context`` within a token budget,
compaction included (summaries, image placeholders, shortened tool output, relevant
older events, memories), converted to genai ``Content``:

* the window's leading ``system`` messages (the system prompt, the compacted past) are
  added to the request's ``system_instruction``, after the agent's own instruction;
  a ``system`` message later in the window (the older relevant events, the active
  task, the pinned instruction) is a ``user`` content, where it stands;
* ``user`` messages -> ``user`` contents (text, ``data:`` images as ``inline_data``);
* ``assistant`` messages -> ``model`` contents (text, then a ``function_call`` per
  tool call, its arguments parsed);
* ``tool`` messages -> ``function_response`` parts (the tool's name from its call;
  a JSON object as the response, other output as ``{"result": …}``), the responses to
  one model message in one ``user`` content, as ADK sends them.

A call and its response are kept together: a call without a response (or a response
without its call) in the window is left out, since models refuse either half alone.

Two ways in: ``LlmAgent(..., before_model_callback=agentctx_window(engine, budget=…))``
for one agent, or ``App(..., plugins=[AgentCtxPlugin(engine, budget=…)])`` for every
agent of a runner's app (the plugin also ends an invocation's turn when the run ends). Both
need the session kept by an ``AgentCtxSessionService`` on the same engine: the window
is built from what it recorded.
"""

from __future__ import annotations

import asyncio
import base64
import json
from collections.abc import Mapping, Sequence
from typing import Any

from google.adk.agents.callback_context import CallbackContext
from google.adk.agents.invocation_context import InvocationContext
from google.adk.models.llm_request import LlmRequest
from google.adk.models.llm_response import LlmResponse
from google.adk.plugins.base_plugin import BasePlugin
from google.genai import types

from agentctx.context.render import content_text
from agentctx.context.window import ContextWindow
from agentctx.engine import ContextEngine
from agentctx.errors import SessionNotFound
from agentctx.integrations.adk.names import to_id
from agentctx.integrations.adk.session_service import AgentCtxSessionService

CLIENT_CALL_ID_PREFIX = "adk-"
"""ADK's own function call ids start so; ADK never sends them to a model, nor does this."""


def window_contents(
    messages: Sequence[Mapping[str, Any]],
) -> tuple[str, list[types.Content]]:
    """The system text and the contents for the messages of a context window."""
    system: list[str] = []
    contents: list[types.Content] = []
    names: dict[str, str] = {}
    called = {
        str(call.get("id"))
        for message in messages
        if message.get("role") == "assistant"
        for call in message.get("tool_calls") or ()
    }
    answered = {str(m.get("tool_call_id")) for m in messages if m.get("role") == "tool"}
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "system":
            if contents:
                contents.append(_user([types.Part(text=content_text(content))]))
            else:
                system.append(content_text(content))
        elif role == "assistant":
            parts = [types.Part(text=content_text(content))] if content_text(content) else []
            for call in message.get("tool_calls") or ():
                function = call.get("function") or {}
                call_id = str(call.get("id"))
                if call_id not in answered:
                    continue
                names[call_id] = str(function.get("name") or "tool")
                parts.append(
                    types.Part(
                        function_call=types.FunctionCall(
                            id=_sent_id(call_id),
                            name=names[call_id],
                            args=_arguments(function.get("arguments")),
                        )
                    )
                )
            if parts:
                contents.append(types.Content(role="model", parts=parts))
        elif role == "tool":
            call_id = str(message.get("tool_call_id"))
            if call_id not in called:
                continue
            part = types.Part(
                function_response=types.FunctionResponse(
                    id=_sent_id(call_id),
                    name=names.get(call_id, "tool"),
                    response=_response(content_text(content)),
                )
            )
            last = contents[-1] if contents else None
            if last is not None and last.parts and last.parts[-1].function_response:
                last.parts.append(part)
            else:
                contents.append(_user([part]))
        else:
            contents.append(_user(_user_parts(content)))
    return "\n\n".join(s for s in system if s), contents


def apply_window(llm_request: LlmRequest, window: ContextWindow) -> None:
    """Replace the request's contents with the window (its system text joins the
    request's system instruction)."""
    system, contents = window_contents(window.messages)
    llm_request.contents = contents
    if system:
        existing = llm_request.config.system_instruction
        own = existing if isinstance(existing, str) else ""
        llm_request.config.system_instruction = f"{own}\n\n{system}" if own else system


def latest_user_text(contents: Sequence[types.Content]) -> str | None:
    """The text of the newest user content that has text (the window's query)."""
    for content in reversed(contents):
        if content.role == "user" and content.parts:
            text = "\n".join(p.text for p in content.parts if p.text and not p.thought)
            if text:
                return text
    return None


class WindowCallback:
    """A ``before_model_callback`` that sends the agentctx window as the model input
    (made by :func:`agentctx_window`). ``last_window`` is the window of its latest
    call, for inspection (its report says what each section cost and what was left
    out)."""

    def __init__(
        self,
        engine: ContextEngine,
        *,
        budget: int,
        strategy: str | None,
        system_prompt: str | None,
        context_config: dict[str, Any] | None,
    ) -> None:
        self.engine = engine
        self.budget = budget
        self.strategy = strategy
        self.system_prompt = system_prompt
        self.context_config = context_config
        self.last_window: ContextWindow | None = None

    async def __call__(
        self, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        session = callback_context.session
        query = latest_user_text(llm_request.contents)
        service = callback_context.get_invocation_context().session_service
        turn_id = (
            service.open_turn_id(session.user_id, session.id)
            if isinstance(service, AgentCtxSessionService)
            else None
        )
        window = await asyncio.to_thread(self.build, session.user_id, session.id, query, turn_id)
        if window is not None:
            apply_window(llm_request, window)
            self.last_window = window
        return None

    def build(
        self, user_id: str, session_id: str, query: str | None, turn_id: str | None = None
    ) -> ContextWindow | None:
        """The window for an ADK session (None when agentctx does not keep it: ADK's
        own contents then stay). Built for the invocation's open turn ``turn_id``, it
        is kept for that turn's repro package (``engine.hitl``)."""
        try:
            handle = self.engine.get_session(
                to_id(session_id, "session_id"), to_id(user_id, "user_id"), record_access=False
            )
        except SessionNotFound:
            return None
        return handle.build_context(
            query,
            self.budget,
            strategy=self.strategy,
            system_prompt=self.system_prompt,
            config=self.context_config,
            turn_id=turn_id,
        )


def agentctx_window(
    engine: ContextEngine,
    *,
    budget: int = 4000,
    strategy: str | None = None,
    system_prompt: str | None = None,
    context_config: dict[str, Any] | None = None,
) -> WindowCallback:
    """A ``before_model_callback`` that sends the agentctx window as the model input:
    ``LlmAgent(..., before_model_callback=agentctx_window(engine, budget=4000))``.

    ``budget``, ``strategy``, ``system_prompt`` and ``context_config`` shape the window
    (``Session.build_context``'s arguments); its query is the newest user text.
    """
    return WindowCallback(
        engine,
        budget=budget,
        strategy=strategy,
        system_prompt=system_prompt,
        context_config=context_config,
    )


class AgentCtxPlugin(BasePlugin):
    """A runner plugin: every agent's model input is the agentctx window, and an
    invocation's turn ends when its run does (so turn-end work starts at once)."""

    def __init__(
        self,
        engine: ContextEngine,
        *,
        budget: int = 4000,
        strategy: str | None = None,
        system_prompt: str | None = None,
        context_config: dict[str, Any] | None = None,
        name: str = "agentctx",
    ) -> None:
        super().__init__(name)
        self.window = agentctx_window(
            engine,
            budget=budget,
            strategy=strategy,
            system_prompt=system_prompt,
            context_config=context_config,
        )

    async def before_model_callback(
        self, *, callback_context: CallbackContext, llm_request: LlmRequest
    ) -> LlmResponse | None:
        return await self.window(callback_context, llm_request)

    async def after_run_callback(self, *, invocation_context: InvocationContext) -> None:
        service = invocation_context.session_service
        if isinstance(service, AgentCtxSessionService):
            await service.end_invocation(invocation_context.session)


# Helpers ------------------------------------------------------------------------------


def _user(parts: list[types.Part]) -> types.Content:
    return types.Content(role="user", parts=parts)


def _user_parts(content: Any) -> list[types.Part]:
    if isinstance(content, str):
        return [types.Part(text=content)]
    parts: list[types.Part] = []
    for part in content or ():
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text":
            parts.append(types.Part(text=str(part.get("text"))))
        elif part.get("type") == "image_url":
            url = str((part.get("image_url") or {}).get("url") or "")
            parts.append(_image(url))
    return parts


def _image(url: str) -> types.Part:
    """An image of the window: inline bytes for a ``data:`` URL, else a file reference."""
    if url.startswith("data:") and ";base64," in url:
        head, _, data = url.partition(";base64,")
        return types.Part(
            inline_data=types.Blob(
                mime_type=head.removeprefix("data:"), data=base64.b64decode(data)
            )
        )
    return types.Part(file_data=types.FileData(file_uri=url))


def _sent_id(call_id: str) -> str | None:
    return None if call_id.startswith(CLIENT_CALL_ID_PREFIX) else call_id


def _arguments(arguments: Any) -> dict[str, Any]:
    try:
        value = json.loads(arguments) if isinstance(arguments, str) else arguments
    except ValueError:
        return {"input": arguments}
    return value if isinstance(value, dict) else {"input": value}


def _response(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {"result": text}
    return value if isinstance(value, dict) else {"result": value}
