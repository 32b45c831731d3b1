"""The peers of ``agentctx bench agentstep``: what users of the OpenAI Agents SDK and of
Google ADK write instead of a context engine. Each stores every message in its session
store, then before each model call reads the session back and keeps the newest items
that fit the budget (:func:`trim_newest`).

* ``openai-agents``: ``SQLiteSession`` on a SQLite file; ``add_items`` per message
  (Responses API input items), ``get_items()`` before each call.
* ``google-adk``: ``DatabaseSessionService`` on SQLite (``sqlite+aiosqlite``, the async
  driver it requires); ``append_event`` per event (``google.genai`` contents with text,
  function call, function response and inline image parts), ``get_session`` before each
  call.

Both APIs are async: each replay runs in one event loop, and every duration is taken
around the ``await``, as the agent's loop experiences it.
"""

from __future__ import annotations

import asyncio
import base64
import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from agentctx.bench.agentstep_data import SYSTEM_PROMPT, AgentTurn, ToolStep
from agentctx.bench.peer import load_peer
from agentctx.tokens import TokenCounter, image_tokens
from agentctx.tokens.messages import MESSAGE_TOKENS, REPLY_PRIMING_TOKENS

SCREENSHOT_TOKENS = image_tokens(1280, 800)  # OpenAI's price of a screenshot, high detail
ADK_APP = "agentstep-bench"
ADK_USER = "agentstep-bench"
Progress = Callable[[str], None]


@dataclass(frozen=True, slots=True)
class Piece:
    """One stored item as the trim sees it: its texts, images and tool call links."""

    texts: tuple[str, ...]
    images: int = 0
    call_id: str | None = None  # a tool call's id
    answers: str | None = None  # a tool result: the id of the call it answers


@dataclass
class CallSample:
    """One model call: how long the window and the whole step took, the window's tokens."""

    turn: int
    window_s: float
    step_s: float
    tokens: int
    loading: bool = False  # the embedding model finished loading during this call
    dense: str | None = None  # what the window's report says about dense ranking
    timings_ms: dict[str, float] = field(default_factory=dict)


@dataclass
class SubjectRun:
    """Everything one subject's replay measured."""

    calls: list[CallSample] = field(default_factory=list)
    appends_s: list[float] = field(default_factory=list)
    turn_ends_s: list[float] = field(default_factory=list)
    start_s: float | None = None
    model_ready_s: float | None = None  # from the engine's start, found at a call's end
    facts: dict[str, str] = field(default_factory=dict)


def trim_newest(
    pieces: Sequence[Piece], budget: int, counter: TokenCounter
) -> tuple[list[Piece], int]:
    """The system prompt and the newest pieces that fit ``budget``, and their tokens.

    A tool call and the results that answer it go together or not at all. When even the
    newest of them does not fit, its longest text is cut to the room left (so the model
    always sees the latest result), and nothing older is kept.
    """
    used = REPLY_PRIMING_TOKENS + MESSAGE_TOKENS + counter.count(SYSTEM_PROMPT)
    units: list[list[Piece]] = []
    for piece in pieces:
        if piece.answers is not None and units and units[-1][0].call_id == piece.answers:
            units[-1].append(piece)
        else:
            units.append([piece])
    kept: list[Piece] = []
    for unit in reversed(units):
        cost = sum(_cost(piece, counter) for piece in unit)
        if used + cost <= budget:
            kept[:0] = unit
            used += cost
            continue
        if not kept:
            cut = _cut_to(unit, budget - used, counter)
            kept[:0] = cut
            used += sum(_cost(piece, counter) for piece in cut)
        break
    return kept, used


def _cost(piece: Piece, counter: TokenCounter) -> int:
    return MESSAGE_TOKENS + sum(counter.count_many(piece.texts)) + piece.images * SCREENSHOT_TOKENS


def _cut_to(unit: list[Piece], room: int, counter: TokenCounter) -> list[Piece]:
    """``unit`` with its longest text cut so the whole costs at most ``room``."""
    costs = [_cost(piece, counter) for piece in unit]
    longest = max(
        ((i, j) for i, piece in enumerate(unit) for j in range(len(piece.texts))),
        key=lambda ij: len(unit[ij[0]].texts[ij[1]]),
        default=None,
    )
    if longest is None:
        return []
    i, j = longest
    text = unit[i].texts[j]
    allowed = room - (sum(costs) - counter.count(text))
    if allowed < 1:
        return []
    texts = list(unit[i].texts)
    texts[j] = counter.truncate(text, allowed)
    cut = list(unit)
    cut[i] = Piece(tuple(texts), unit[i].images, unit[i].call_id, unit[i].answers)
    return cut


def _png_url(png: bytes) -> str:
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _result_value(step: ToolStep) -> Any:
    return step.text if step.text is not None else step.data


# ---------------------------------------------------------------- the OpenAI Agents SDK


def sdk_version() -> str | None:
    """The installed ``openai-agents`` version."""
    try:
        return metadata.version("openai-agents")
    except metadata.PackageNotFoundError:
        return None


def _sdk_piece(item: dict[str, Any]) -> Piece:
    kind = item.get("type")
    if kind == "function_call":
        return Piece((item["name"], item["arguments"]), call_id=item["call_id"])
    if kind == "function_call_output":
        output = item["output"]
        if isinstance(output, str):
            return Piece((output,), answers=item["call_id"])
        texts = tuple(p["text"] for p in output if p.get("type") == "input_text")
        images = sum(1 for p in output if p.get("type") == "input_image")
        return Piece(texts, images, answers=item["call_id"])
    return Piece((str(item.get("role", "")), str(item.get("content", ""))))


def _sdk_output(step: ToolStep) -> str | list[dict[str, Any]]:
    if step.image is None:
        return step.output()
    return [
        {"type": "input_text", "text": step.output()},
        {"type": "input_image", "image_url": _png_url(step.image), "detail": "auto"},
    ]


def run_sdk(
    turns: Sequence[AgentTurn], *, budget: int, db_path: Path, counter: TokenCounter
) -> SubjectRun:
    """Replay ``turns`` through a ``SQLiteSession`` (see the module docstring)."""
    session_class = load_peer()
    if session_class is None:
        raise RuntimeError("openai-agents is not installed")
    run = SubjectRun()

    async def add(item: dict[str, Any]) -> None:
        started = time.perf_counter()
        await session.add_items([item])
        run.appends_s.append(time.perf_counter() - started)

    async def window(turn: int, step_started: float) -> None:
        started = time.perf_counter()
        items = await session.get_items()
        _kept, tokens = trim_newest([_sdk_piece(i) for i in items], budget, counter)
        ended = time.perf_counter()
        run.calls.append(CallSample(turn, ended - started, ended - step_started, tokens))

    async def replay() -> None:
        for turn in turns:
            step_started = time.perf_counter()
            await add({"role": "user", "content": turn.user})
            await window(turn.index, step_started)
            for step in turn.steps:
                step_started = time.perf_counter()
                arguments = json.dumps(step.arguments)
                await add(
                    {
                        "type": "function_call",
                        "call_id": step.call_id,
                        "name": step.name,
                        "arguments": arguments,
                    }
                )
                await add(
                    {
                        "type": "function_call_output",
                        "call_id": step.call_id,
                        "output": _sdk_output(step),
                    }
                )
                await window(turn.index, step_started)
            await add({"role": "assistant", "content": turn.answer})

    started = time.perf_counter()
    session = session_class("agentstep-bench", db_path=db_path)
    run.start_s = time.perf_counter() - started
    try:
        asyncio.run(replay())
    finally:
        session.close()
    run.facts = {"version": sdk_version() or "unknown", "read": "get_items() (every item)"}
    return run


# ---------------------------------------------------------------- Google ADK


def adk_version() -> str | None:
    """The installed ``google-adk`` version, None when it is not installed."""
    try:
        return metadata.version("google-adk")
    except metadata.PackageNotFoundError:
        return None


def load_adk() -> tuple[Any, Any, Any] | None:
    """ADK's ``DatabaseSessionService``, ``Event`` and ``google.genai.types``; None when
    ``google-adk`` is not installed."""
    try:
        from google.adk.events import Event  # noqa: PLC0415 - optional dependency
        from google.adk.sessions import DatabaseSessionService  # noqa: PLC0415
        from google.genai import types  # noqa: PLC0415
    except ImportError:
        return None
    return DatabaseSessionService, Event, types


def _adk_piece(event: Any) -> Piece:
    texts: list[str] = []
    images = 0
    call_id = answers = None
    for part in getattr(event.content, "parts", None) or ():
        if part.text is not None:
            texts.append(part.text)
        elif part.function_call is not None:
            call = part.function_call
            call_id = call.id
            texts += [str(call.name), json.dumps(call.args, ensure_ascii=False)]
        elif part.function_response is not None:
            answers = part.function_response.id
            texts.append(json.dumps(part.function_response.response, ensure_ascii=False))
        elif part.inline_data is not None:
            images += 1
    return Piece(tuple(texts), images, call_id, answers)


def run_adk(
    turns: Sequence[AgentTurn], *, budget: int, db_path: Path, counter: TokenCounter
) -> SubjectRun:
    """Replay ``turns`` through a ``DatabaseSessionService`` (see the module docstring)."""
    loaded = load_adk()
    if loaded is None:
        raise RuntimeError("google-adk is not installed")
    service_class, event_class, types = loaded
    run = SubjectRun()

    def content(role: str, *parts: Any) -> Any:
        return types.Content(role=role, parts=list(parts))

    async def replay() -> None:
        started = time.perf_counter()
        service = service_class(f"sqlite+aiosqlite:///{db_path}")
        session = await service.create_session(app_name=ADK_APP, user_id=ADK_USER)
        run.start_s = time.perf_counter() - started

        async def add(invocation: str, author: str, body: Any) -> None:
            event = event_class(invocation_id=invocation, author=author, content=body)
            began = time.perf_counter()
            await service.append_event(session, event)
            run.appends_s.append(time.perf_counter() - began)

        async def window(turn: int, step_started: float) -> None:
            began = time.perf_counter()
            read = await service.get_session(
                app_name=ADK_APP, user_id=ADK_USER, session_id=session.id
            )
            _kept, tokens = trim_newest([_adk_piece(e) for e in read.events], budget, counter)
            ended = time.perf_counter()
            run.calls.append(CallSample(turn, ended - began, ended - step_started, tokens))

        try:
            for turn in turns:
                invocation = f"turn-{turn.index:04d}"
                step_started = time.perf_counter()
                await add(invocation, "user", content("user", types.Part(text=turn.user)))
                await window(turn.index, step_started)
                for step in turn.steps:
                    step_started = time.perf_counter()
                    call = types.FunctionCall(id=step.call_id, name=step.name, args=step.arguments)
                    await add(invocation, "agent", content("model", types.Part(function_call=call)))
                    parts = [
                        types.Part(
                            function_response=types.FunctionResponse(
                                id=step.call_id,
                                name=step.name,
                                response={"result": _result_value(step)},
                            )
                        )
                    ]
                    if step.image is not None:
                        blob = types.Blob(mime_type="image/png", data=step.image)
                        parts.append(types.Part(inline_data=blob))
                    await add(invocation, "agent", content("user", *parts))
                    await window(turn.index, step_started)
                await add(invocation, "agent", content("model", types.Part(text=turn.answer)))
        finally:
            await service.close()

    asyncio.run(replay())
    run.facts = {"version": adk_version() or "unknown", "read": "get_session() (every event)"}
    return run
