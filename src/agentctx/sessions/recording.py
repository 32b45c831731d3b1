"""The helpers that record events, shared by ``Session`` and ``Turn``.

Both expose the same ``add_message`` / ``add_tool_call`` / ``add_tool_result`` /
``add_event`` / ``append`` calls; they differ only in which turn the events
join, which is what :meth:`EventRecorder._write` decides.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from agentctx.errors import InvalidEvent, InvalidInput
from agentctx.events import (
    Event,
    EventDraft,
    EventMeta,
    EventType,
    ImageData,
    JsonPart,
    Role,
    TextPart,
)
from agentctx.ids import new_id
from agentctx.inputs import boundary, validation_message
from agentctx.jsonvalue import check_object

ImageInput = bytes | str | ImageData
"""An image: raw bytes, base64 text, a data URL, or an ImageData."""

_MESSAGE_TYPES = {
    "user": EventType.USER_INPUT,
    "assistant": EventType.AGENT_RESPONSE,
    "system": EventType.SYSTEM,
}


def _image_parts(images: Iterable[ImageInput] | None) -> list[ImageData]:
    parts = []
    for index, image in enumerate(images or ()):
        if isinstance(image, ImageData):
            parts.append(image)
            continue
        try:
            parts.append(ImageData(data=image))
        except ValidationError as exc:
            raise InvalidEvent(f"images[{index}]: {validation_message(exc)}") from None
    return parts


def _metadata(metadata: object) -> dict[str, Any]:
    if metadata is None:
        return {}
    try:
        return check_object(metadata, where="metadata")
    except InvalidInput as exc:
        raise InvalidEvent(str(exc)) from None


def _draft(**fields: Any) -> EventDraft:
    try:
        return EventDraft(**fields)
    except ValidationError as exc:
        raise InvalidEvent(validation_message(exc)) from None


class EventRecorder(ABC):
    """Records events into a session; subclasses choose the turn."""

    @abstractmethod
    def _write(self, drafts: Sequence[EventDraft], *, expected_last_seq: int | None) -> list[Event]:
        """Append drafts in one transaction."""

    @boundary(InvalidEvent)
    def append(self, *drafts: EventDraft, expected_last_seq: int | None = None) -> list[Event]:
        """Append events in one all-or-nothing transaction.

        ``expected_last_seq``: fail with ``StaleSession`` unless the log still ends at
        this seq (optimistic concurrency for appends).
        """
        if not drafts:
            return []
        return self._write(drafts, expected_last_seq=expected_last_seq)

    @boundary(InvalidEvent)
    def add_event(
        self,
        type: EventType | str,
        text: str | None = None,
        *,
        payload: dict[str, Any] | None = None,
        data: Any = None,
        images: Iterable[ImageInput] | None = None,
        role: Role | str | None = None,
        author: str | None = None,
        call_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        model: str | None = None,
        duration_ms: float | None = None,
        status: str | None = None,
        ts: datetime | None = None,
        idempotency_key: str | None = None,
        event_id: str | None = None,
        request_id: str | None = None,
        expected_last_seq: int | None = None,
    ) -> Event:
        """Record any kind of event (planner output, reflection, error, hitl, note, …)."""
        parts: list[Any] = []
        if text is not None:
            parts.append(TextPart(text=text))
        if data is not None:
            parts.append(JsonPart(data=data))
        parts.extend(_image_parts(images))
        try:
            meta = EventMeta(
                model=model,
                duration_ms=duration_ms,
                status=status,
                extra=_metadata(metadata),
            )
        except ValidationError as exc:
            raise InvalidEvent(validation_message(exc)) from None
        draft = _draft(
            type=type,
            role=role,
            author=author,
            parts=tuple(parts),
            payload=payload or {},
            meta=meta,
            call_id=call_id,
            ts=ts,
            idempotency_key=idempotency_key,
            event_id=event_id,
            request_id=request_id,
        )
        return self._write([draft], expected_last_seq=expected_last_seq)[0]

    @boundary(InvalidEvent)
    def add_message(
        self,
        role: str,
        text: str,
        *,
        images: Iterable[ImageInput] | None = None,
        metadata: dict[str, Any] | None = None,
        author: str | None = None,
        model: str | None = None,
        ts: datetime | None = None,
        idempotency_key: str | None = None,
        event_id: str | None = None,
        expected_last_seq: int | None = None,
    ) -> Event:
        """Record a chat message. ``role`` is "user", "assistant" or "system"."""
        event_type = _MESSAGE_TYPES.get(role) if isinstance(role, str) else None
        if event_type is None:
            raise InvalidEvent(
                f"role must be one of {sorted(_MESSAGE_TYPES)}, got {role!r} "
                "(tool output is recorded with add_tool_result)"
            )
        return self.add_event(
            event_type,
            text,
            images=images,
            metadata=metadata,
            author=author,
            model=model,
            ts=ts,
            idempotency_key=idempotency_key,
            event_id=event_id,
            expected_last_seq=expected_last_seq,
        )

    @boundary(InvalidEvent)
    def add_tool_call(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        *,
        call_id: str | None = None,
        author: str | None = None,
        model: str | None = None,
        metadata: dict[str, Any] | None = None,
        ts: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> Event:
        """Record a tool call; the returned event's ``call_id`` links its result."""
        if not name:
            raise InvalidEvent("a tool call needs a tool name")
        if arguments is not None and not isinstance(arguments, dict):
            raise InvalidEvent(
                f"tool arguments must be a JSON object, not {type(arguments).__name__}"
            )
        meta = EventMeta(tool_name=name, model=model, extra=_metadata(metadata))
        draft = _draft(
            type=EventType.TOOL_CALL,
            author=author,
            call_id=call_id or f"call_{new_id()}",
            parts=(JsonPart(data=arguments or {}),),
            payload={"name": name},
            meta=meta,
            ts=ts,
            idempotency_key=idempotency_key,
        )
        return self._write([draft], expected_last_seq=None)[0]

    @boundary(InvalidEvent)
    def add_tool_result(
        self,
        call_id: str | None,
        content: str | None = None,
        *,
        data: Any = None,
        images: Iterable[ImageInput] | None = None,
        is_error: bool = False,
        author: str | None = None,
        duration_ms: float | None = None,
        metadata: dict[str, Any] | None = None,
        ts: datetime | None = None,
        idempotency_key: str | None = None,
    ) -> Event:
        """Record a tool's result (text, structured data and/or images) for ``call_id``.

        ``call_id`` is typed optional so ``add_tool_result(call.call_id, …)`` type-checks;
        ``None`` is refused with ``InvalidEvent``.
        """
        if call_id is None:
            raise InvalidEvent("a tool_result needs the call_id of its tool_call")
        parts: list[Any] = []
        if content is not None:
            parts.append(TextPart(text=content))
        if data is not None:
            parts.append(JsonPart(data=data))
        parts.extend(_image_parts(images))
        meta = EventMeta(
            duration_ms=duration_ms,
            status="error" if is_error else "ok",
            extra=_metadata(metadata),
        )
        draft = _draft(
            type=EventType.TOOL_RESULT,
            author=author,
            call_id=call_id,
            parts=tuple(parts),
            payload={"is_error": is_error},
            meta=meta,
            ts=ts,
            idempotency_key=idempotency_key,
        )
        return self._write([draft], expected_last_seq=None)[0]
