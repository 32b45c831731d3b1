"""ADK events <-> agentctx events.

One ADK ``Event`` becomes one or more agentctx events, written in one append, in the
order of its content parts, so the log reads like any other agent's:

* text parts -> one ``user_input`` (author ``user``) or ``agent_response`` event,
  ``inline_data`` images among them as image parts (blobs, open to visual compaction
  and ``restore_image``);
* each ``function_call`` -> a ``tool_call`` (its id as the call id, the tool name, the
  arguments as a JSON part);
* each ``function_response`` -> a ``tool_result`` for the same call id (the response
  as a JSON part);
* a call or response the log cannot link (a response to no open call) -> a ``note``;
* an event with none of these (a state change, an agent transfer, a thought, a
  control event) -> a ``state_delta`` event holding the state delta, which windows do
  not show; an error event with no content -> an ``error`` event with its message.

The first of them keeps the rest of the ADK event (its *skeleton*: the event's JSON
form with markers where content moved into parts) under :data:`EVENT_KEY`, so the
content is stored (and counted) once and :func:`restore_event` puts the event back
together: id, author, invocation id, timestamp, actions (the state delta included) and
every content part. Every agentctx event of the group names the ADK event under
:data:`GROUP_KEY`. Content passes agentctx's redaction like any event's: an event
comes back redacted.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from google.adk.events.event import Event as AdkEvent
from pydantic_core import to_jsonable_python

from agentctx.context.render import visual_placeholder
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
from agentctx.integrations.skeleton import MARK

EVENT_KEY = "adk_event"
"""The payload key holding the ADK event's skeleton (on the group's first event)."""

GROUP_KEY = "adk_group"
"""The payload key naming the ADK event an agentctx event belongs to:
``{"id": …, "index": i, "count": n}``."""


USER_AUTHOR = "user"
"""ADK's author of the user's own events."""

DraftPart = TextPart | JsonPart | ImageData

ReadBlob = Callable[[BlobPart], bytes]
"""The bytes of an offloaded part (``engine.get_blob``)."""
ReadImage = Callable[[ImagePart], bytes | None]
"""The bytes of an image part, or None once retention removed them."""


@dataclass
class _Draft:
    """An agentctx event being assembled from an ADK event's parts."""

    type: EventType
    parts: list[DraftPart] = field(default_factory=list)
    call_id: str | None = None
    tool_name: str | None = None

    def add(self, part: DraftPart, index: int, kind: str) -> dict[str, Any]:
        self.parts.append(part)
        return {MARK: kind, "event": index, "part": len(self.parts) - 1}


def event_to_drafts(event: AdkEvent) -> list[EventDraft]:
    """The agentctx events that record one ADK event (one append, in this order)."""
    skeleton: dict[str, Any] = event.model_dump(mode="json", exclude_defaults=True)
    # The timestamp is kept exactly (agentctx's ``ts`` keeps microseconds only).
    skeleton["timestamp"] = event.timestamp
    drafts: list[_Draft] = []
    message_type = EventType.USER_INPUT if event.author == USER_AUTHOR else EventType.AGENT_RESPONSE
    parts_out: list[Any] = []
    raw_parts = skeleton.get("content", {}).get("parts", [])
    for part, raw in zip(
        event.content.parts or () if event.content else (), raw_parts, strict=True
    ):
        parts_out.append(_move_part(part, raw, drafts, message_type))
    if raw_parts:
        skeleton["content"]["parts"] = parts_out
    if not drafts:
        drafts.append(_carrier(event))
    ts = datetime.fromtimestamp(event.timestamp, UTC)
    count = len(drafts)
    return [
        EventDraft(
            type=draft.type,
            author=event.author or None,
            parts=tuple(draft.parts),
            payload={
                GROUP_KEY: {"id": event.id, "index": index, "count": count},
                **({EVENT_KEY: skeleton} if index == 0 else {}),
            },
            meta=EventMeta(
                tool_name=draft.tool_name,
                status="ok" if draft.type is EventType.TOOL_RESULT else None,
            ),
            call_id=draft.call_id,
            ts=ts,
        )
        for index, draft in enumerate(drafts)
    ]


def unlinked(drafts: Sequence[EventDraft]) -> list[EventDraft]:
    """``drafts`` with calls and results as ``note`` events, for an ADK event whose
    calls or responses the log cannot link (a response to no open call, a call id still
    open): recorded and restored all the same, shown in windows as notes."""
    linked = (EventType.TOOL_CALL, EventType.TOOL_RESULT)
    return [
        d.model_copy(update={"type": EventType.NOTE, "call_id": None}) if d.type in linked else d
        for d in drafts
    ]


def _move_part(part: Any, raw: dict[str, Any], drafts: list[_Draft], message: EventType) -> Any:
    """``raw`` (a content part's JSON form) with its content moved into ``drafts``."""
    if part.function_call is not None:
        call = part.function_call
        draft = _Draft(EventType.TOOL_CALL, call_id=call.id, tool_name=call.name or "tool")
        drafts.append(draft)
        marker = draft.add(JsonPart(data=_jsonable(call.args or {})), len(drafts) - 1, "json")
        return {**raw, "function_call": {**raw["function_call"], "args": marker}}
    if part.function_response is not None:
        response = part.function_response
        draft = _Draft(
            EventType.TOOL_RESULT, call_id=response.id, tool_name=response.name or "tool"
        )
        drafts.append(draft)
        marker = draft.add(
            JsonPart(data=_jsonable(response.response or {})), len(drafts) - 1, "json"
        )
        return {**raw, "function_response": {**raw["function_response"], "response": marker}}
    if isinstance(part.text, str) and not part.thought:
        marker = _message(drafts, message).add(TextPart(text=part.text), len(drafts) - 1, "text")
        return {**raw, "text": marker}
    blob = part.inline_data
    if blob is not None and blob.data and (blob.mime_type or "").startswith("image/"):
        image = ImageData(data=blob.data, media_type=blob.mime_type)
        marker = _message(drafts, message).add(image, len(drafts) - 1, "image")
        return {**raw, "inline_data": {**raw["inline_data"], "data": marker}}
    return raw  # thoughts, files, code: kept in the skeleton as they are


def _message(drafts: list[_Draft], kind: EventType) -> _Draft:
    """The message event the next text or image goes to (a new one after a call)."""
    if not drafts or drafts[-1].type is not kind:
        drafts.append(_Draft(kind))
    return drafts[-1]


def _carrier(event: AdkEvent) -> _Draft:
    """The one event recording an ADK event whose content holds no text, call or image."""
    if event.error_message or event.error_code:
        text = f"{event.error_code or 'error'}: {event.error_message or ''}".strip()
        return _Draft(EventType.ERROR, parts=[TextPart(text=text)])
    delta = dict(event.actions.state_delta) if event.actions else {}
    return _Draft(EventType.STATE_DELTA, parts=[JsonPart(data=_jsonable(delta))])


def _jsonable(value: Any) -> Any:
    """``value`` as JSON data, as the event's JSON form has it (models as dicts)."""
    return to_jsonable_python(value, fallback=str)


# Reading back -------------------------------------------------------------------------


def group_of(event: Event, read_blob: ReadBlob) -> dict[str, Any] | None:
    """The ADK part of an event's payload (``{GROUP_KEY: …}`` and, on a group's first
    event, ``{EVENT_KEY: …}``), None for events that record no ADK event.

    A payload too large to keep inline was offloaded by the size guard, as a
    ``payload`` blob part: it is read back.
    """
    if GROUP_KEY in event.payload:
        return event.payload
    for part in event.parts:
        if isinstance(part, BlobPart) and part.original_kind == "payload":
            payload = json.loads(read_blob(part))
            if isinstance(payload, dict) and GROUP_KEY in payload:
                return payload
    return None


def may_record_event(event: Event) -> bool:
    """Whether an event (maybe) records part of an ADK event, without reading blobs."""
    return GROUP_KEY in event.payload or any(
        isinstance(p, BlobPart) and p.original_kind == "payload" for p in event.parts
    )


def restore_event(
    skeleton: dict[str, Any], group: Sequence[Event], read_blob: ReadBlob, read_image: ReadImage
) -> AdkEvent:
    """The ADK event a group of agentctx events records, content put back from parts."""
    images: dict[str, bytes | None] = {}

    def read_once(part: ImagePart) -> bytes | None:
        if part.image_id not in images:
            images[part.image_id] = read_image(part)
        return images[part.image_id]

    restored = _restore(skeleton, group, read_blob, read_once)
    # Validated from JSON, as it was dumped: bytes fields come back from base64.
    return AdkEvent.model_validate_json(json.dumps(restored))


def _restore(value: Any, group: Sequence[Event], read_blob: ReadBlob, read_image: ReadImage) -> Any:
    if isinstance(value, list):
        return [_restore(v, group, read_blob, read_image) for v in value]
    if not isinstance(value, dict):
        return value
    if MARK not in value:
        inline = value.get("inline_data")
        if isinstance(inline, dict) and isinstance(inline.get("data"), dict):
            gone = _expired_image(inline["data"], group, read_image)
            if gone is not None:  # removed by cold-storage retention: say so, as windows do
                return {"text": visual_placeholder(gone)}
        return {k: _restore(v, group, read_blob, read_image) for k, v in value.items()}
    event = group[value["event"]]
    part = event.parts[value["part"]]
    kind = value[MARK]
    if kind == "text":
        if isinstance(part, TextPart):
            return part.text
        if isinstance(part, BlobPart):
            return read_blob(part).decode("utf-8")
    elif kind == "json":
        if isinstance(part, JsonPart):
            return part.data
        if isinstance(part, BlobPart):
            return json.loads(read_blob(part))
    elif kind == "image" and isinstance(part, ImagePart):
        return base64.b64encode(read_image(part) or b"").decode()
    raise ValueError(f"event {event.event_id}: part {value['part']} does not hold {kind}")


def _expired_image(
    marker: dict[str, Any], group: Sequence[Event], read_image: ReadImage
) -> str | None:
    """The image id of an image marker whose bytes retention removed (None otherwise)."""
    if marker.get(MARK) != "image":
        return None
    part = group[marker["event"]].parts[marker["part"]]
    if isinstance(part, ImagePart) and read_image(part) is None:
        return part.image_id
    return None
