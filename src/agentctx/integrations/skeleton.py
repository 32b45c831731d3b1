"""Events that keep a framework's object whole: a *skeleton* plus parts.

An integration records a framework's message (an Agents SDK item, a LangChain message)
as an event whose parts hold the content -- text searchable and counted once, ``data:``
images as image parts (blobs, open to visual compaction and ``restore_image``) -- and
whose payload keeps the rest of the object, its skeleton, with a marker where content
moved into a part. :func:`restore` puts the object back together from the event.
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

MARK = "$agentctx"
"""The key of a marker that stands for content moved into part ``part``."""

_TEXT_PART_TYPES = frozenset({"input_text", "output_text", "text"})

DraftPart = TextPart | JsonPart | ImageData


def is_data_image(value: Any) -> bool:
    """Whether ``value`` is an image as a base64 ``data:`` URL (what can become a blob)."""
    return isinstance(value, str) and value.startswith("data:image/") and ";base64," in value


class Parts:
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
            if dumps_json(data, compact) == arguments:
                self.parts.append(JsonPart(data=data))
                return {MARK: "json", "part": len(self.parts) - 1, "compact": compact}
        return arguments


def dumps_json(data: Any, compact: bool) -> str:
    return json.dumps(data, separators=(",", ":")) if compact else json.dumps(data)


def content_out(value: Any, parts: Parts) -> Any:
    """A message's (or tool output's) content with text and data images moved out."""
    if isinstance(value, str):
        return parts.text(value)
    if isinstance(value, Mapping):
        return content_out([value], parts)[0]
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


def images_out(value: Any, parts: Parts) -> Any:
    """Any item with its ``data:`` images (at any depth) moved into image parts."""
    if isinstance(value, Mapping):
        for key in ("image_url", "url"):
            if is_data_image(value.get(key)):
                return parts.image(value, key)
        return {k: images_out(v, parts) for k, v in value.items()}
    if isinstance(value, list):
        return [images_out(v, parts) for v in value]
    return value


def skeleton_draft(
    kind: EventType,
    parts: Parts,
    key: str,
    skeleton: dict[str, Any],
    *,
    call_id: str | None = None,
    meta: EventMeta | None = None,
    payload: dict[str, Any] | None = None,
    idempotency_key: str | None = None,
) -> EventDraft:
    """The event that keeps ``skeleton`` under payload ``key``, its content in ``parts``."""
    return EventDraft(
        type=kind,
        parts=tuple(parts.parts),
        payload={**(payload or {}), key: skeleton},
        meta=meta or EventMeta(),
        call_id=call_id,
        idempotency_key=idempotency_key,
    )


ReadBlob = Callable[[BlobPart], bytes]
"""The bytes of an offloaded part (``engine.get_blob``)."""
ReadImage = Callable[[ImagePart], bytes | None]
"""The bytes of an image part, or None once retention removed them."""


def stored_skeleton(event: Event, read_blob: ReadBlob, key: str) -> dict[str, Any] | None:
    """The item skeleton an event keeps (None: the event does not record an item).

    A skeleton too large to keep inline was offloaded by the size guard, as a
    ``payload`` blob part.
    """
    skeleton = event.payload.get(key)
    if isinstance(skeleton, dict):
        return skeleton
    for part in event.parts:
        if isinstance(part, BlobPart) and part.original_kind == "payload":
            payload = json.loads(read_blob(part))
            found = payload.get(key) if isinstance(payload, dict) else None
            return found if isinstance(found, dict) else None
    return None


def restore(value: Any, event: Event, read_blob: ReadBlob, read_image: ReadImage) -> Any:
    if isinstance(value, list):
        return [restore(v, event, read_blob, read_image) for v in value]
    if not isinstance(value, dict):
        return value
    if MARK not in value:
        return {k: restore(v, event, read_blob, read_image) for k, v in value.items()}
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
        return dumps_json(data, bool(value.get("compact")))
    if kind == "image" and isinstance(part, ImagePart):
        data = read_image(part)
        if data is None:  # removed by cold-storage retention: say so, as windows do
            return {"type": "input_text", "text": f"[Visual_Placeholder: {part.image_id}]"}
        url = f"data:{part.media_type};base64,{base64.b64encode(data).decode()}"
        return {**value.get("rest", {}), value.get("key", "image_url"): url}
    raise ValueError(f"event {event.event_id}: unknown marker {kind!r}")
