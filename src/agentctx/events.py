"""Events and their content parts: the append-only source of truth of a session.

An :class:`Event` is what the log stores; it is immutable once written. Callers
describe what they want written with an :class:`EventDraft` (or the helpers on
``Session`` and ``Turn``); the engine fills in ``seq``, ``hash``, ``turn_id``,
``token_estimate`` and the redaction fields.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from datetime import UTC, datetime
from enum import StrEnum
from typing import Annotated, Any, Literal, NoReturn, TypeVar

import orjson
from pydantic import BaseModel, ConfigDict, Field, field_validator

from agentctx.errors import InvalidEvent


class EventType(StrEnum):
    """What an event records (seed 003's event schema, plus summaries and state)."""

    USER_INPUT = "user_input"
    AGENT_RESPONSE = "agent_response"
    SYSTEM = "system"
    TOOL_CALL = "tool_call"
    TOOL_RESULT = "tool_result"
    PLANNER = "planner"
    REFLECTION = "reflection"
    AGGREGATE = "aggregate"
    FINAL = "final"
    SUMMARY = "summary"
    ERROR = "error"
    HITL = "hitl"
    STATE_DELTA = "state_delta"
    NOTE = "note"


class Role(StrEnum):
    """The chat role an event plays when it is rendered for a model."""

    SYSTEM = "system"
    USER = "user"
    ASSISTANT = "assistant"
    TOOL = "tool"


DEFAULT_ROLES: dict[EventType, Role | None] = {
    EventType.USER_INPUT: Role.USER,
    EventType.AGENT_RESPONSE: Role.ASSISTANT,
    EventType.SYSTEM: Role.SYSTEM,
    EventType.TOOL_CALL: Role.ASSISTANT,
    EventType.TOOL_RESULT: Role.TOOL,
    EventType.PLANNER: Role.ASSISTANT,
    EventType.REFLECTION: Role.ASSISTANT,
    EventType.AGGREGATE: Role.ASSISTANT,
    EventType.FINAL: Role.ASSISTANT,
}


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TextPart(_Frozen):
    """Plain text content."""

    kind: Literal["text"] = "text"
    text: str


class JsonPart(_Frozen):
    """Structured content, such as tool arguments."""

    kind: Literal["json"] = "json"
    data: Any


class ImagePart(_Frozen):
    """A reference to an image held in the blob store.

    ``dedup_distance`` is set when the submitted image was a near-duplicate of the
    session's previous image (within the perceptual-hash threshold): the part then
    references that image, the submitted bytes were not stored, and ``source_blob_id``
    is their sha256 (what a retried write of the same bytes is recognised by).
    """

    kind: Literal["image"] = "image"
    image_id: str
    blob_id: str
    media_type: str
    width: int
    height: int
    size: int
    dedup_distance: int | None = None
    source_blob_id: str | None = None


class BlobPart(_Frozen):
    """Content too large to keep inline, offloaded to the blob store by the size guard."""

    kind: Literal["blob"] = "blob"
    blob_id: str
    size: int
    media_type: str
    original_kind: Literal["text", "json", "payload"]
    preview: str = ""


Part = Annotated[TextPart | JsonPart | ImagePart | BlobPart, Field(discriminator="kind")]


class ImageData(_Frozen):
    """Image bytes handed in by the caller; stored as a blob and replaced by an ImagePart.

    ``data`` accepts raw bytes, base64 text, or a ``data:image/…;base64,…`` URL (the form
    OpenAI's and Anthropic's message formats use).
    """

    kind: Literal["image_data"] = "image_data"
    data: bytes
    media_type: str | None = None

    @field_validator("data", mode="before")
    @classmethod
    def _decode(cls, value: Any) -> Any:
        if isinstance(value, str):
            text = value
            if text.startswith("data:"):
                _, _, text = text.partition(",")
            try:
                return base64.b64decode(text, validate=True)
            except (binascii.Error, ValueError) as exc:
                raise ValueError("image data is neither bytes nor valid base64") from exc
        return value


_PART_TYPES: dict[str, type[TextPart | JsonPart | ImagePart | BlobPart]] = {
    "text": TextPart,
    "json": JsonPart,
    "image": ImagePart,
    "blob": BlobPart,
}


class _NoExtra(dict[str, Any]):
    """The empty ``meta.extra`` that events read without extras share: read-only, so a
    reader writing to its event's extra cannot give every other such event that extra."""

    __slots__ = ()

    def _refuse(self, *_args: Any, **_kwargs: Any) -> NoReturn:
        raise TypeError("an event's meta.extra is read-only: events are immutable")

    __setitem__ = __delitem__ = __ior__ = _refuse
    update = setdefault = pop = popitem = clear = _refuse


_NO_EXTRA = _NoExtra()

_META_DEFAULTS: dict[str, Any] = {
    "model": None,
    "tool_name": None,
    "duration_ms": None,
    "status": None,
    "extra": _NO_EXTRA,
}

# Fields added to a part type after events were first stored: their defaults, so a
# stored part written before them reads like a new one.
_PART_DEFAULTS: dict[str, dict[str, Any]] = {
    "image": {"dedup_distance": None, "source_blob_id": None}
}

_Model = TypeVar("_Model", bound=BaseModel)
_EVENT_TYPES = {member.value: member for member in EventType}
_ROLES = {member.value: member for member in Role}


def _trusted(cls: type[_Model], values: dict[str, Any], _set: Any = object.__setattr__) -> _Model:
    """An instance from values known to be valid: what ``model_construct`` does, minus its
    per-field Python loop (a test pins the result equal to ``model_validate``'s).

    The models are frozen, so every instance of a class can share one fields-set.
    """
    instance = cls.__new__(cls)
    _set(instance, "__dict__", values)
    _set(instance, "__pydantic_fields_set__", _FIELD_SETS[cls])
    _set(instance, "__pydantic_extra__", None)
    _set(instance, "__pydantic_private__", None)
    return instance


DraftPart = Annotated[TextPart | JsonPart | ImageData, Field(discriminator="kind")]


def joined_text(parts: Sequence[object]) -> str:
    """The text parts among ``parts`` joined by newlines (an event's or a draft's text)."""
    return "\n".join(part.text for part in parts if isinstance(part, TextPart))


class EventMeta(_Frozen):
    """Operational metadata of an event (seed 003: model, tool_name, duration_ms, status).

    ``extra`` holds the caller's own metadata (``add_message(..., metadata=…)``).
    """

    model: str | None = None
    tool_name: str | None = None
    duration_ms: float | None = None
    status: Literal["ok", "error"] | None = None
    extra: dict[str, Any] = Field(default_factory=dict)


class EventDraft(_Frozen):
    """An event as a caller describes it, before the engine writes it."""

    type: EventType
    role: Role | None = None
    author: str | None = None
    parts: tuple[DraftPart, ...] = ()
    payload: dict[str, Any] = Field(default_factory=dict)
    meta: EventMeta = Field(default_factory=EventMeta)
    call_id: str | None = None
    request_id: str | None = None
    idempotency_key: str | None = None
    event_id: str | None = None
    ts: datetime | None = None

    @field_validator("ts")
    @classmethod
    def _aware(cls, value: datetime | None) -> datetime | None:
        if value is not None and value.tzinfo is None:
            raise ValueError("ts must be timezone-aware")
        return value

    @property
    def stored_role(self) -> Role | None:
        """The role the event is stored with: ``role``, else its type's default."""
        return self.role if self.role is not None else DEFAULT_ROLES.get(self.type)

    @property
    def text(self) -> str:
        """The draft's text parts joined by newlines (as :attr:`Event.text`)."""
        return joined_text(self.parts)


class Event(_Frozen):
    """One stored event. Immutable; ``hash`` chains it to the event before it."""

    event_id: str
    seq: int
    ts: datetime
    type: EventType
    role: Role | None
    author: str | None
    user_id: str
    session_id: str
    turn_id: str | None
    request_id: str | None
    call_id: str | None
    idempotency_key: str | None
    parts: tuple[Part, ...]
    payload: dict[str, Any]
    meta: EventMeta
    redacted: bool
    redacted_types: tuple[str, ...]
    token_estimate: int
    hash: str

    @classmethod
    def from_row(cls, row: Any) -> Event:
        """Build an event from a stored row (a mapping of every column, values decoded).

        Rows were validated when written and ``verify`` checks them against the hash
        chain, so the read path only converts types; this keeps ``events(last=100)``
        cheap. Use ``Event.model_validate`` for data from anywhere else.
        """
        return trusted_event(
            row["event_id"],
            row["seq"],
            row["ts"],
            row["type"],
            row["role"],
            row["author"],
            row["user_id"],
            row["session_id"],
            row["turn_id"],
            row["request_id"],
            row["call_id"],
            row["idempotency_key"],
            row["parts"],
            row["payload"],
            row["meta"],
            row["redacted"],
            row["redacted_types"],
            row["token_estimate"],
            row["hash"],
        )

    @property
    def text(self) -> str:
        """The event's text parts joined by newlines."""
        return joined_text(self.parts)

    @property
    def images(self) -> tuple[ImagePart, ...]:
        """The images this event references."""
        return tuple(part for part in self.parts if isinstance(part, ImagePart))


def utc(ts: datetime) -> datetime:
    """``ts`` in UTC, truncated to the microsecond precision both backends keep."""
    if ts.tzinfo is None:
        raise InvalidEvent("timestamps must be timezone-aware")
    return ts.astimezone(UTC)


def utcnow() -> datetime:
    """The current time in UTC."""
    return datetime.now(UTC)


_FIELD_SETS: dict[type[BaseModel], set[str]] = {
    model: set(model.model_fields)
    for model in (Event, EventMeta, TextPart, JsonPart, ImagePart, BlobPart)
}


def _trusted_part(part: dict[str, Any]) -> TextPart | JsonPart | ImagePart | BlobPart:
    kind = part["kind"]
    defaults = _PART_DEFAULTS.get(kind)
    if defaults is not None and len(part) != len(_FIELD_SETS[_PART_TYPES[kind]]):
        part = {**defaults, **part}
    return _trusted(_PART_TYPES[kind], part)


def trusted_event(  # noqa: PLR0917 - positional on purpose: the row decoder's hot loop
    event_id: str,
    seq: int,
    ts: datetime,
    type: str,
    role: str | None,
    author: str | None,
    user_id: str,
    session_id: str,
    turn_id: str | None,
    request_id: str | None,
    call_id: str | None,
    idempotency_key: str | None,
    parts: list[dict[str, Any]],
    payload: dict[str, Any],
    meta: dict[str, Any],
    redacted: Any,
    redacted_types: list[str],
    token_estimate: int,
    hash: str,
) -> Event:
    """An Event from decoded stored values, without validation (storage's read path)."""
    return _trusted(
        Event,
        {
            "event_id": event_id,
            "seq": seq,
            "ts": ts,
            "type": _EVENT_TYPES[type],
            "role": _ROLES[role] if role is not None else None,
            "author": author,
            "user_id": user_id,
            "session_id": session_id,
            "turn_id": turn_id,
            "request_id": request_id,
            "call_id": call_id,
            "idempotency_key": idempotency_key,
            "parts": tuple([_trusted_part(part) for part in parts]),
            "payload": payload,
            "meta": _trusted(
                EventMeta, meta if len(meta) == len(_META_DEFAULTS) else {**_META_DEFAULTS, **meta}
            ),
            "redacted": bool(redacted),
            "redacted_types": tuple(redacted_types),
            "token_estimate": token_estimate,
            "hash": hash,
        },
    )


PackedEvent = tuple[Any, ...]
"""An event as a tuple of plain values (see :func:`pack_event`)."""

_EVENT_FIELDS = tuple(Event.model_fields)
_FIELDS_OF_PART = {kind: tuple(cls.model_fields) for kind, cls in _PART_TYPES.items()}
_META_FIELDS = tuple(EventMeta.model_fields)
_TYPE_AT, _ROLE_AT, _PARTS_AT, _PAYLOAD_AT, _META_AT = (
    _EVENT_FIELDS.index(name) for name in ("type", "role", "parts", "payload", "meta")
)
_EXTRA_AT = _META_FIELDS.index("extra")
assert all(fields[0] == "kind" for fields in _FIELDS_OF_PART.values())  # unpack reads it first


def pack_event(event: Event) -> PackedEvent:
    """``event`` as nested tuples of plain values, for a cache that holds events for long.

    Python's collector stops tracking a tuple once everything in it is a plain value or
    such a tuple (never a dict, even an empty one), and an untracked object costs a full
    collection nothing. A built event is half a dozen tracked objects: a cache of ten
    thousand made each full collection of a long-running process tens of milliseconds
    slower. Empty payloads and meta extras pack as None; a payload, a meta extra or a
    JSON part's data that holds something packs as its JSON bytes, so every unpacked
    event has its own copy (what one reader does to it, no other reader sees).
    """
    # In field order: a stored part's values come in its JSON's (sorted) key order.
    fields = event.__dict__
    values = [fields[name] for name in _EVENT_FIELDS]
    values[_TYPE_AT] = event.type.value
    values[_ROLE_AT] = event.role.value if event.role is not None else None
    values[_PARTS_AT] = tuple(
        (_JSON, orjson.dumps(part.data))
        if isinstance(part, JsonPart)
        else tuple([part.__dict__[name] for name in _FIELDS_OF_PART[part.kind]])
        for part in event.parts
    )
    values[_PAYLOAD_AT] = orjson.dumps(event.payload) if event.payload else None
    meta_fields = event.meta.__dict__
    meta = [meta_fields[name] for name in _META_FIELDS]
    meta[_EXTRA_AT] = orjson.dumps(meta[_EXTRA_AT]) if meta[_EXTRA_AT] else None
    values[_META_AT] = tuple(meta)
    return tuple(values)


def unpack_event(packed: PackedEvent) -> Event:
    """The event :func:`pack_event` packed: equal to it, a new object."""
    # zip without the strict check: the tuples come from pack_event, fields in order.
    values = dict(zip(_EVENT_FIELDS, packed, strict=False))
    values["type"] = _EVENT_TYPES[values["type"]]
    role = values["role"]
    values["role"] = _ROLES[role] if role is not None else None
    values["parts"] = tuple(
        [
            _trusted(JsonPart, {"kind": _JSON, "data": orjson.loads(part[1])})
            if part[0] == _JSON
            else _trusted(
                _PART_TYPES[part[0]], dict(zip(_FIELDS_OF_PART[part[0]], part, strict=False))
            )
            for part in values["parts"]
        ]
    )
    payload = values["payload"]
    values["payload"] = {} if payload is None else orjson.loads(payload)
    meta = values["meta"]
    if meta == _NO_META:
        values["meta"] = _EMPTY_META  # most events: one shared instance (frozen, no extra)
    else:
        meta_values = dict(zip(_META_FIELDS, meta, strict=False))
        extra = meta_values["extra"]
        meta_values["extra"] = _NO_EXTRA if extra is None else orjson.loads(extra)
        values["meta"] = _trusted(EventMeta, meta_values)
    return _trusted(Event, values)


_JSON = "json"
_NO_META = (None,) * len(_META_FIELDS)
_EMPTY_META = _trusted(EventMeta, {**_META_DEFAULTS, "extra": _NO_EXTRA})
