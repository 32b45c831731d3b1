"""A context window (OpenAI chat messages) as Agents SDK input items.

What the window holds is what the model should see, so it is converted as it is,
compaction included: summaries, memories, the block of older relevant events, the
active task and the pinned instruction are ``system`` messages; shortened tool output
and ``[Visual_Placeholder: …]`` texts stay as the window shows them; images the window
sends inline become ``input_image`` parts.

* ``system`` / ``user`` messages -> message items of that role;
* ``assistant`` text -> an assistant message item; its ``tool_calls`` ->
  ``function_call`` items (call id, name, arguments as the window shows them);
* ``tool`` messages -> ``function_call_output`` items for their call id.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from agentctx.context.render import content_text, render_events
from agentctx.context.task import render_pinned_instruction
from agentctx.events import Event, EventType

Item = dict[str, Any]


def window_items(messages: Sequence[Mapping[str, Any]]) -> list[Item]:
    """SDK input items for the messages of a context window, in order."""
    items: list[Item] = []
    for message in messages:
        role = message.get("role")
        content = message.get("content")
        if role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": str(message.get("tool_call_id")),
                    "output": content_text(content),
                }
            )
            continue
        if role == "assistant":
            text = content_text(content)
            if text:
                items.append({"role": "assistant", "content": text})
            images = _images(content)
            if images:  # assistant messages hold no images in the Responses format
                items.append({"role": "user", "content": images})
            items.extend(
                {
                    "type": "function_call",
                    "call_id": str(call.get("id")),
                    "name": str(call.get("function", {}).get("name")),
                    "arguments": str(call.get("function", {}).get("arguments") or "{}"),
                }
                for call in message.get("tool_calls") or ()
            )
            continue
        if role == "system":
            items.append({"role": "system", "content": content_text(content)})
            continue
        if isinstance(content, str):
            items.append({"role": "user", "content": content})
        else:
            items.append({"role": "user", "content": _input_parts(content)})
    return items


def _images(content: Any) -> list[Item]:
    if not isinstance(content, list):
        return []
    return [
        _input_image(part)
        for part in content
        if isinstance(part, Mapping) and part.get("type") == "image_url"
    ]


def _input_image(part: Mapping[str, Any]) -> Item:
    image = part.get("image_url") or {}
    return {
        "type": "input_image",
        "image_url": image.get("url"),
        "detail": image.get("detail") or "auto",
    }


def _input_parts(content: Any) -> list[Item]:
    parts: list[Item] = []
    for part in content or ():
        if not isinstance(part, Mapping):
            continue
        if part.get("type") == "text":
            parts.append({"type": "input_text", "text": str(part.get("text"))})
        elif part.get("type") == "image_url":
            parts.append(_input_image(part))
    return parts


def without_retracted(items: list[Item], retracted: Iterable[Event]) -> list[Item]:
    """``items`` minus what ``retracted`` events put in the window.

    A tool call or result is found by its call id (a call takes its outputs along,
    and an output left without its call is dropped: providers refuse either half
    alone); a message by its rendered content, the newest match first, with the
    pinned instruction that names a retracted user input as the goal.
    """
    items = list(items)
    calls: set[str] = set()
    outputs: set[str] = set()
    for event in retracted:
        if event.type is EventType.TOOL_CALL and event.call_id:
            calls.add(event.call_id)
        elif event.type is EventType.TOOL_RESULT and event.call_id:
            outputs.add(event.call_id)
        else:
            for message in window_items(render_events([event])):
                _remove_last(items, message)
            if event.type is EventType.USER_INPUT and event.text:
                # The pinned instruction names the latest user input as the goal: not
                # one the user took back (until windows skip retracted events).
                pinned = render_pinned_instruction(event.text[:500], "active")
                _remove_last(items, {"role": "system", "content": pinned})
    kept = [
        item
        for item in items
        if not (item.get("type") == "function_call" and item.get("call_id") in calls)
        and not (
            item.get("type") == "function_call_output" and item.get("call_id") in (calls | outputs)
        )
    ]
    # A call whose every output was retracted would be sent unanswered: drop it too.
    answered = {i.get("call_id") for i in kept if i.get("type") == "function_call_output"}
    return [
        item
        for item in kept
        if not (item.get("type") == "function_call" and item.get("call_id") not in answered)
    ]


def _remove_last(items: list[Item], message: Item) -> None:
    for index in range(len(items) - 1, -1, -1):
        if items[index] == message:
            del items[index]
            return
