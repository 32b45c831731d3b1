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

import base64
import json
from collections.abc import Callable, Mapping
from typing import Any

from agentctx.events import (
    BlobPart,
    Event,
    EventDraft,
    EventMeta,
    EventType,
    ImageData,
    ImagePart,
    JsonPart,
    TextPart,
)

ITEM_KEY = "openai_agents_item"
"""The payload key holding an item's skeleton."""

MARK = "$agentctx"
"""The key of a marker that stands for content moved into part ``part``."""

_MESSAGE_TYPES = {
    "user": EventType.USER_INPUT,
    "assistant": EventType.AGENT_RESPONSE,
    "system": EventType.SYSTEM,
    "developer": EventType.SYSTEM,
}
_TEXT_PART_TYPES = frozenset({"input_text", "output_text", "text"})
_LABEL_CHARS = 200

DraftPart = TextPart | JsonPart | ImageData


def is_data_image(value: Any) -> bool:
    """Whether ``value`` is an image as a base64 ``data:`` URL (what can become a blob)."""
    return isinstance(value, str) and value.startswith("data:image/") and ";base64," in value


class _Parts:
    """Collects an event's parts and hands out the markers that stand for them."""

    def __init__(self) -> None:
        self.parts: list[DraftPart] = []

    def text(self, text: str) -> dict[str, Any]:
        self.parts.append(TextPart(text=text))
        return {MARK: "text", "part": len(self.parts) - 1}

    def image(self, part: Mapping[str, Any], key: str) -> dict[str, Any]:
        """A marker for the content part ``part`` whose ``key`` holds a data URL."""
        self.parts.append(ImageData(data=part[key]))
        rest = {k: v for k, v in part.items() if k != key}
        return {MARK: "image", "part": len(self.parts) - 1, "key": key, "rest": rest}

    def arguments(self, arguments: str) -> dict[str, Any] | str:
        """Arguments as a JSON part when they are JSON text that can be written back
        unchanged; otherwise they stay in the skeleton as they are."""
        try:
            data = json.loads(arguments)
        except (TypeError, ValueError):
            return arguments
        for compact in (False, True):
            if _dumps(data, compact) == arguments:
                self.parts.append(JsonPart(data=data))
                return {MARK: "json", "part": len(self.parts) - 1, "compact": compact}
        return arguments


def _dumps(data: Any, compact: bool) -> str:
    return json.dumps(data, separators=(",", ":")) if compact else json.dumps(data)


def _content(value: Any, parts: _Parts) -> Any:
    """A message's (or tool output's) content with text and data images moved out."""
    if isinstance(value, str):
        return parts.text(value)
    if isinstance(value, Mapping):
        return _content([value], parts)[0]
    if not isinstance(value, list):
        return value
    out: list[Any] = []
    for part in value:
        if not isinstance(part, Mapping):
            out.append(part)
        elif part.get("type") in _TEXT_PART_TYPES and isinstance(part.get("text"), str):
            out.append({**part, "text": parts.text(part["text"])})
        elif part.get("type") == "refusal" and isinstance(part.get("refusal"), str):
            out.append({**part, "refusal": parts.text(part["refusal"])})
        elif is_data_image(part.get("image_url")):
            out.append(parts.image(part, "image_url"))
        else:
            out.append(dict(part))
    return out


def _images_out(value: Any, parts: _Parts) -> Any:
    """Any item with its ``data:`` images (at any depth) moved into image parts."""
    if isinstance(value, Mapping):
        for key in ("image_url", "url"):
            if is_data_image(value.get(key)):
                return parts.image(value, key)
        return {k: _images_out(v, parts) for k, v in value.items()}
    if isinstance(value, list):
        return [_images_out(v, parts) for v in value]
    return value


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
    parts = _Parts()
    kind = item.get("type")
    if is_message(item):
        skeleton = {**item, "content": _content(item.get("content"), parts)}
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
        skeleton = {**item, "output": _content(item.get("output"), parts)}
        return _draft(
            EventType.TOOL_RESULT,
            parts,
            skeleton,
            call_id=item["call_id"],
            meta=EventMeta(status="ok"),
            payload={"is_error": False},
        )
    skeleton = _images_out(item, parts)
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
    parts: _Parts,
    skeleton: dict[str, Any],
    *,
    call_id: str | None = None,
    meta: EventMeta | None = None,
    payload: dict[str, Any] | None = None,
) -> EventDraft:
    return EventDraft(
        type=kind,
        parts=tuple(parts.parts),
        payload={**(payload or {}), ITEM_KEY: skeleton},
        meta=meta or EventMeta(),
        call_id=call_id,
    )


# Reading back -----------------------------------------------------------------------

ReadBlob = Callable[[BlobPart], bytes]
"""The bytes of an offloaded part (``engine.get_blob``)."""
ReadImage = Callable[[ImagePart], bytes | None]
"""The bytes of an image part, or None once retention removed them."""


def skeleton_of(event: Event, read_blob: ReadBlob) -> dict[str, Any] | None:
    """The item skeleton an event keeps (None: the event does not record an item).

    A skeleton too large to keep inline was offloaded by the size guard, as a
    ``payload`` blob part.
    """
    skeleton = event.payload.get(ITEM_KEY)
    if isinstance(skeleton, dict):
        return skeleton
    for part in event.parts:
        if isinstance(part, BlobPart) and part.original_kind == "payload":
            payload = json.loads(read_blob(part))
            found = payload.get(ITEM_KEY) if isinstance(payload, dict) else None
            return found if isinstance(found, dict) else None
    return None


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
    restored = _restore(skeleton, event, read_blob, read_image)
    return restored if isinstance(restored, dict) else None


def _restore(value: Any, event: Event, read_blob: ReadBlob, read_image: ReadImage) -> Any:
    if isinstance(value, list):
        return [_restore(v, event, read_blob, read_image) for v in value]
    if not isinstance(value, dict):
        return value
    if MARK not in value:
        return {k: _restore(v, event, read_blob, read_image) for k, v in value.items()}
    part = event.parts[value["part"]]
    kind = value[MARK]
    if kind == "text":
        if isinstance(part, TextPart):
            return part.text
        if isinstance(part, BlobPart):
            return read_blob(part).decode("utf-8")
        raise ValueError(f"event {event.event_id}: part {value['part']} is not text")
    if kind == "json":
        data = part.data if isinstance(part, JsonPart) else None
        if isinstance(part, BlobPart):
            data = json.loads(read_blob(part))
        return _dumps(data, bool(value.get("compact")))
    if kind == "image" and isinstance(part, ImagePart):
        data = read_image(part)
        if data is None:  # removed by cold-storage retention: say so, as windows do
            return {"type": "input_text", "text": f"[Visual_Placeholder: {part.image_id}]"}
        url = f"data:{part.media_type};base64,{base64.b64encode(data).decode()}"
        return {**value.get("rest", {}), value.get("key", "image_url"): url}
    raise ValueError(f"event {event.event_id}: unknown marker {kind!r}")
