"""Stored events → OpenAI chat messages, deterministically.

* user input and HITL answers → ``user``; responses, finals, planner/reflection notes →
  ``assistant`` (notes carry their type as a prefix); errors and system events → ``system``;
* adjacent tool calls → one ``assistant`` message with ``tool_calls`` (parallel calls),
  the assistant's text just before them (same turn) its ``content``;
  each tool result → a ``tool`` message; images a tool returned follow in a ``user``
  message, since OpenAI's tool messages hold text only;
* JSON is rendered canonically (sorted keys, no spaces), so the same events always give
  the same bytes and provider prompt caches hit;
* offloaded content shows its preview and where the rest is;
* state deltas and summaries are not rendered here (state feeds the active task, summaries
  their own section).
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentctx.events import BlobPart, Event, EventType, ImagePart, JsonPart, TextPart

ImageContent = Callable[[Event, int, ImagePart], dict[str, Any]]
"""The content part that shows image ``part`` (part ``index`` of ``event``) in a window:
an ``image_url`` part, or a text part standing for the image."""

NOT_RENDERED = frozenset({EventType.STATE_DELTA, EventType.SUMMARY})

_USER_TYPES = frozenset({EventType.USER_INPUT, EventType.HITL})
_SYSTEM_TYPES = frozenset({EventType.SYSTEM, EventType.ERROR})
_NOTE_TYPES = frozenset(
    {EventType.PLANNER, EventType.REFLECTION, EventType.AGGREGATE, EventType.NOTE}
)
# Bound once: an enum member lookup goes through the enum machinery each time.
_TOOL_CALL = EventType.TOOL_CALL
_TOOL_RESULT = EventType.TOOL_RESULT
_ERROR = EventType.ERROR


def canonical_json(value: Any) -> str:
    """Sorted keys, no whitespace, UTF-8 kept: the same value always gives the same text."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def compact_json(value: Any) -> str:
    """A JSON value as its leaves, ``key=value; …`` (a list of plain values as
    ``key=[a, b]``), without nulls and empty values: about half the tokens of the JSON,
    every name, id and number kept."""
    pairs: list[str] = []

    def leaves(item: Any, key: str | None) -> None:
        if isinstance(item, dict):
            for name, inner in item.items():
                leaves(inner, str(name))
        elif isinstance(item, list):
            if item and all(not isinstance(x, dict | list) for x in item):
                shown = ", ".join(str(x) for x in item if x not in (None, ""))
                pairs.append(f"{key}=[{shown}]" if key else f"[{shown}]")
            else:
                for inner in item:
                    leaves(inner, key)
        elif item not in (None, "") and not (isinstance(item, list | dict) and not item):
            pairs.append(f"{key}={item}" if key else str(item))

    leaves(value, None)
    return "; ".join(pairs)


def event_text(event: Event) -> str:
    """An event's content as one text: text parts, JSON parts, offloaded previews."""
    pieces: list[str] = []
    for part in event.parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, JsonPart):
            pieces.append(canonical_json(part.data))
        elif isinstance(part, BlobPart):
            pieces.append(
                f"{part.preview}\n[… {part.size:,} bytes offloaded as {part.blob_id}; "
                "restorable on request]"
            )
    return "\n".join(p for p in pieces if p)


def content_text(content: Any) -> str:
    """The text of a chat message's content: the string, or its ``text`` parts joined
    by newlines (images and other parts left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            str(part.get("text"))
            for part in content
            if isinstance(part, Mapping) and part.get("type") == "text"
        )
    return ""


def image_reference(part: ImagePart) -> str:
    """The text that stands for an image that is not sent inline."""
    return f"[Image {part.image_id}: {part.width}x{part.height} {part.media_type}]"


PLACEHOLDER_PATTERN = re.compile(r"\[Visual_Placeholder: (img_[0-9a-f]+)\]")
"""Finds the image ids of visual placeholders in a text."""


def visual_placeholder(image_id: str) -> str:
    """The text that stands for an image visual compaction took out of ended turns
    (seed 000's format); ``restore_image`` gives its bytes back."""
    return f"[Visual_Placeholder: {image_id}]"


def image_url_part(url: str, detail: str = "auto") -> dict[str, Any]:
    """An OpenAI ``image_url`` content part."""
    return {"type": "image_url", "image_url": {"url": url, "detail": detail}}


def _reference_content(event: Event, index: int, part: ImagePart) -> dict[str, Any]:
    return {"type": "text", "text": image_reference(part)}


ToolText = Callable[[Event], str]
"""What a tool result shows in a window (compressed, or a preview and a pointer)."""


def render_events(
    events: Sequence[Event],
    image_content: ImageContent | None = None,
    tool_text: ToolText | None = None,
) -> list[dict[str, Any]]:
    """The chat messages for ``events`` (in the order given). ``image_content`` shows an
    image (default: a text reference); ``tool_text`` gives a tool result's text (default:
    the whole of it)."""
    image_content = image_content or _reference_content
    messages: list[dict[str, Any]] = []
    pending_images: list[dict[str, Any]] = []

    def flush_images() -> None:
        if pending_images:
            messages.append({"role": "user", "content": list(pending_images)})
            pending_images.clear()

    previous: Event | None = None  # the event rendered last
    for event in events:
        if event.type in NOT_RENDERED:
            continue
        before, previous = previous, event
        if event.type is _TOOL_CALL:
            flush_images()
            call = {
                "id": event.call_id or event.event_id,
                "type": "function",
                "function": {
                    "name": event.meta.tool_name or "tool",
                    "arguments": _arguments(event),
                },
            }
            last = messages[-1] if messages else None
            if last is not None and last["role"] == "assistant" and last.get("tool_calls"):
                last["tool_calls"].append(call)
            elif last is not None and _joins_calls(last, before, event):
                last["tool_calls"] = [call]  # the model's text and calls: one message
            else:
                messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
            continue
        if event.type is _TOOL_RESULT:
            shown = tool_text(event) if tool_text is not None else event_text(event)
            text = shown or ("(error)" if event.meta.status == "error" else "(empty)")
            if event.meta.status == "error":
                text = f"[error] {text}"
            messages.append(
                {"role": "tool", "tool_call_id": event.call_id or event.event_id, "content": text}
            )
            pending_images.extend(_image_parts(event, image_content))
            continue
        flush_images()
        message = _plain_message(event, image_content)
        messages.append(message)
        if event.type in _SYSTEM_TYPES and event.images:
            # System messages hold text only: an error event's screenshot (an error
            # frame) follows in a user message, as a tool result's images do.
            pending_images.extend(_image_parts(event, image_content))
    flush_images()
    return messages


def _joins_calls(message: dict[str, Any], before: Event | None, call: Event) -> bool:
    """Whether tool call ``call`` belongs in ``message``: the plain text an assistant said
    in the same turn just before it (one model message, text and calls)."""
    return (
        before is not None
        and before.type is EventType.AGENT_RESPONSE
        and before.turn_id == call.turn_id
        and message["role"] == "assistant"
        and isinstance(message.get("content"), str)
        and "tool_calls" not in message
    )


def _plain_message(event: Event, image_content: ImageContent) -> dict[str, Any]:
    text = event_text(event)
    if event.type in _USER_TYPES:
        role = "user"
    elif event.type in _SYSTEM_TYPES:
        role = "system"
        if event.type is _ERROR:
            text = f"[error] {text}"
    else:
        role = "assistant"
        if event.type in _NOTE_TYPES:
            text = f"[{event.type.value}] {text}"
    images = _image_parts(event, image_content) if role != "system" else []
    if images:
        content: Any = ([{"type": "text", "text": text}] if text else []) + images
    else:
        content = text
    message: dict[str, Any] = {"role": role, "content": content}
    name = _name(event.author)
    if name is not None and role in ("user", "assistant"):
        message["name"] = name
    return message


def _image_parts(event: Event, image_content: ImageContent) -> list[dict[str, Any]]:
    return [
        image_content(event, index, part)
        for index, part in enumerate(event.parts)
        if isinstance(part, ImagePart)
    ]


def _arguments(event: Event) -> str:
    for part in event.parts:
        if isinstance(part, JsonPart):
            return canonical_json(part.data)
    return canonical_json({"input": event.text}) if event.text else "{}"


def _name(author: str | None) -> str | None:
    """OpenAI's ``name`` field allows ``[A-Za-z0-9_-]{1,64}``; other authors are left out."""
    if not author:
        return None
    cleaned = "".join(c if c.isascii() and (c.isalnum() or c in "_-") else "_" for c in author)
    cleaned = cleaned.strip("_")[:64]
    return cleaned or None
