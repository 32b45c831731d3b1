"""Agents SDK input items <-> agentctx events.

Every item a ``Runner`` hands to the session becomes one event, so the log reads like
any other agent's:

* messages -> ``user_input`` / ``agent_response`` / ``system`` (``developer`` too),
  their text as text parts and ``data:`` images as image parts (stored as blobs, open
  to visual compaction and ``restore_image``);
* ``function_call`` -> ``tool_call`` (the call id, the tool name, the arguments as a
  JSON part), ``function_call_output`` -> ``tool_result`` for the same call id;
* anything else (reasoning, computer, web search, MCP items, …) -> a ``note`` event
  with a one-line label, images taken out as image parts like a message's.

The event's payload keeps the rest of the item (its *skeleton*) under
:data:`ITEM_KEY`, with markers where content moved into parts, so the content is
stored (and counted) once and :func:`event_to_item` puts the item back together.
Content passes agentctx's redaction like any event: an item comes back redacted.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agentctx.events import (
    BlobPart,
    Event,
    EventDraft,
    EventMeta,
    EventType,
    JsonPart,
    TextPart,
)
from agentctx.integrations.skeleton import (
    MARK,
    Parts,
    ReadBlob,
    ReadImage,
    content_out,
    images_out,
    restore,
    skeleton_draft,
    stored_skeleton,
)

ITEM_KEY = "openai_agents_item"
"""The payload key holding an item's skeleton."""

_MESSAGE_TYPES = {
    "user": EventType.USER_INPUT,
    "assistant": EventType.AGENT_RESPONSE,
    "system": EventType.SYSTEM,
    "developer": EventType.SYSTEM,
}
_LABEL_CHARS = 200


def is_message(item: Mapping[str, Any]) -> bool:
    """Whether an item is a chat message (``type: message``, or a bare role/content)."""
    kind = item.get("type")
    return (kind == "message" or kind is None) and item.get("role") in _MESSAGE_TYPES


def _label(item: Mapping[str, Any]) -> str:
    """The one line a ``note`` event shows for an item that is not a message or call."""
    kind = str(item.get("type") or "item")
    pieces = [kind]
    for key in ("name", "action", "status"):
        if item.get(key) is not None:
            value = item[key]
            shown = value if isinstance(value, str) else json.dumps(value, sort_keys=True)
            pieces.append(f"{key}={shown}")
    summary = [
        str(s["text"])
        for s in item.get("summary") or ()
        if isinstance(s, Mapping) and isinstance(s.get("text"), str)
    ]
    label = " ".join(pieces)[:_LABEL_CHARS]
    return label + ("\n" + "\n".join(summary) if summary else "")


def item_to_draft(item: Mapping[str, Any]) -> EventDraft:
    """The event that records one SDK input item."""
    item = dict(item)
    parts = Parts()
    kind = item.get("type")
    if is_message(item):
        skeleton = {**item, "content": content_out(item.get("content"), parts)}
        return _draft(_MESSAGE_TYPES[item["role"]], parts, skeleton)
    if kind == "function_call" and isinstance(item.get("call_id"), str):
        name = str(item.get("name") or "tool")
        arguments = item.get("arguments")
        skeleton = {
            **item,
            "arguments": parts.arguments(arguments) if isinstance(arguments, str) else arguments,
        }
        if not parts.parts:  # not JSON: the tool call still shows what it was given
            parts.parts.append(JsonPart(data={"input": arguments}))
        return _draft(
            EventType.TOOL_CALL,
            parts,
            skeleton,
            call_id=item["call_id"],
            meta=EventMeta(tool_name=name),
            payload={"name": name},
        )
    if kind == "function_call_output" and isinstance(item.get("call_id"), str):
        skeleton = {**item, "output": content_out(item.get("output"), parts)}
        return _draft(
            EventType.TOOL_RESULT,
            parts,
            skeleton,
            call_id=item["call_id"],
            meta=EventMeta(status="ok"),
            payload={"is_error": False},
        )
    skeleton = images_out(item, parts)
    parts.parts.insert(0, TextPart(text=_label(item)))
    # The label took part 0: markers made before it point one part further on.
    return _draft(EventType.NOTE, parts, _shift(skeleton, 1))


def _shift(value: Any, by: int) -> Any:
    if isinstance(value, dict):
        if MARK in value:
            return {**value, "part": value["part"] + by}
        return {k: _shift(v, by) for k, v in value.items()}
    if isinstance(value, list):
        return [_shift(v, by) for v in value]
    return value


def _draft(
    kind: EventType,
    parts: Parts,
    skeleton: dict[str, Any],
    *,
    call_id: str | None = None,
    meta: EventMeta | None = None,
    payload: dict[str, Any] | None = None,
) -> EventDraft:
    return skeleton_draft(
        kind, parts, ITEM_KEY, skeleton, call_id=call_id, meta=meta, payload=payload
    )


# Reading back -----------------------------------------------------------------------


def skeleton_of(event: Event, read_blob: ReadBlob) -> dict[str, Any] | None:
    """The item skeleton an event keeps (None: the event does not record an item)."""
    return stored_skeleton(event, read_blob, ITEM_KEY)


def records_item(event: Event) -> bool:
    """Whether an event (maybe) records an SDK item, without reading blobs."""
    return ITEM_KEY in event.payload or any(
        isinstance(p, BlobPart) and p.original_kind == "payload" for p in event.parts
    )


def event_to_item(
    event: Event, read_blob: ReadBlob, read_image: ReadImage
) -> dict[str, Any] | None:
    """The SDK item an event records, content put back from its parts."""
    skeleton = skeleton_of(event, read_blob)
    if skeleton is None:
        return None
    restored = restore(skeleton, event, read_blob, read_image)
    return restored if isinstance(restored, dict) else None
