"""LangChain messages <-> agentctx events, and a window as LangChain messages.

Every message becomes events an agentctx log reads like any other agent's:

* ``HumanMessage`` -> ``user_input``, ``SystemMessage`` -> ``system``;
* ``AIMessage`` -> ``agent_response`` for its text, then one ``tool_call`` per tool
  call (the call id, the tool name, the arguments as a JSON part);
* ``ToolMessage`` -> ``tool_result`` for its ``tool_call_id`` (``status="error"``: an
  error result);
* any other message -> a ``note``.

Text and ``data:`` images move into parts (images become image parts: blobs, open to
visual compaction); the first event of a message keeps the rest of it (its skeleton,
:mod:`agentctx.integrations.skeleton`) under :data:`MESSAGE_KEY`, the others name the
message under :data:`PART_OF_KEY`, so :func:`event_to_message` gives the message back
(redacted, as everything agentctx stores is).

Each event carries an idempotency key made of the message id: recording a message
again writes nothing, so a caller may hand over the whole conversation every time.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from langchain_core.messages import (
    AIMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
    convert_to_messages,
    message_to_dict,
    messages_from_dict,
)

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
    Parts,
    ReadBlob,
    ReadImage,
    content_out,
    images_out,
    restore,
    skeleton_draft,
    stored_skeleton,
)

MESSAGE_KEY = "langchain_message"
"""The payload key holding a message's skeleton (on its first event)."""

PART_OF_KEY = "langchain_message_of"
"""The payload key naming the message a tool call event belongs to."""

IDEMPOTENCY_PREFIX = "langchain:"

_MESSAGE_TYPES = (
    (HumanMessage, EventType.USER_INPUT),
    (AIMessage, EventType.AGENT_RESPONSE),
    (SystemMessage, EventType.SYSTEM),
)


def message_key(message: BaseMessage) -> str:
    """What identifies a message across graph steps: its id (LangGraph's ``add_messages``
    gives every message one); without an id, a digest of the message itself."""
    if message.id:
        return str(message.id)
    encoded = json.dumps(message_to_dict(message), sort_keys=True, default=str)
    return "sha256-" + hashlib.sha256(encoded.encode()).hexdigest()[:40]


def message_to_drafts(message: BaseMessage, key: str | None = None) -> list[EventDraft]:
    """The events that record ``message`` (one, or an AI message's text and tool calls),
    idempotent by ``key`` (default: :func:`message_key`)."""
    key = key or message_key(message)
    parts = Parts()
    skeleton = _jsonable(message_to_dict(message))
    data = skeleton["data"]
    calls = message.tool_calls if isinstance(message, AIMessage) else []
    if not (calls and not message.text.strip()):  # a bare tool call keeps its empty text
        data["content"] = images_out(content_out(message.content, parts), parts)
    idempotency = IDEMPOTENCY_PREFIX + key
    if isinstance(message, ToolMessage):
        error = message.status == "error"
        return [
            _draft(
                EventType.TOOL_RESULT,
                parts,
                skeleton,
                idempotency,
                call_id=message.tool_call_id,
                meta=EventMeta(status="error" if error else "ok", tool_name=message.name),
                payload={"is_error": error},
            )
        ]
    if calls:
        drafts: list[EventDraft] = []
        if parts.parts:
            drafts.append(_draft(EventType.AGENT_RESPONSE, parts, skeleton, idempotency))
        for index, call in enumerate(calls):
            draft = EventDraft(
                type=EventType.TOOL_CALL,
                parts=(JsonPart(data=_jsonable(call["args"])),),
                payload={"name": call["name"], PART_OF_KEY: key},
                meta=EventMeta(tool_name=call["name"]),
                call_id=call["id"] or f"{key}-{index}",
                idempotency_key=f"{idempotency}#{index}",
            )
            if not drafts:  # no text: the first call keeps the skeleton
                draft = draft.model_copy(
                    update={"payload": {"name": call["name"], MESSAGE_KEY: skeleton}}
                )
            drafts.append(draft)
        return drafts
    kind = next((kind for cls, kind in _MESSAGE_TYPES if isinstance(message, cls)), EventType.NOTE)
    if kind is EventType.NOTE and not parts.parts:
        parts.parts.append(TextPart(text=f"{message.type} message"))
    return [_draft(kind, parts, skeleton, idempotency)]


def _draft(
    kind: EventType,
    parts: Parts,
    skeleton: dict[str, Any],
    idempotency_key: str,
    **fields: Any,
) -> EventDraft:
    return skeleton_draft(
        kind, parts, MESSAGE_KEY, skeleton, idempotency_key=idempotency_key, **fields
    )


def _jsonable(value: Any) -> Any:
    """``value`` as plain JSON (what an event payload holds); other objects as text."""
    return json.loads(json.dumps(value, default=str))


def records_message(event: Event) -> bool:
    """Whether an event is the first event of a recorded message (maybe: an offloaded
    payload is told apart by reading it)."""
    return MESSAGE_KEY in event.payload or (
        PART_OF_KEY not in event.payload
        and any(isinstance(p, BlobPart) and p.original_kind == "payload" for p in event.parts)
    )


def event_to_message(
    event: Event, read_blob: ReadBlob, read_image: ReadImage
) -> BaseMessage | None:
    """The message an event records (None: the event records none, or is a later
    event of a message whose first event holds it)."""
    if not records_message(event):
        return None
    skeleton = stored_skeleton(event, read_blob, MESSAGE_KEY)
    if skeleton is None:
        return None
    restored = restore(skeleton, event, read_blob, read_image)
    return messages_from_dict([restored])[0]


# The window -------------------------------------------------------------------------


def window_messages(messages: Sequence[Mapping[str, Any]]) -> list[BaseMessage]:
    """LangChain messages for a context window's (OpenAI chat format) messages, with
    every tool call answered and every tool message answering a call.

    A chat model rejects an AI message whose tool call has no ``ToolMessage`` after
    it, and a ``ToolMessage`` for no call; a window cut at a budget or a retraction
    may leave either half alone, so the half without its other half is left out (an
    AI message left with neither text nor calls too).
    """
    return paired(convert_to_messages([dict(m) for m in messages]))


def paired(messages: Iterable[BaseMessage]) -> list[BaseMessage]:
    """``messages`` with unanswered tool calls and unasked tool results left out."""
    listed = list(messages)
    out: list[BaseMessage] = []
    index = 0
    while index < len(listed):
        message = listed[index]
        index += 1
        if isinstance(message, ToolMessage):
            continue  # not right after a call that asked for it
        if not (isinstance(message, AIMessage) and message.tool_calls):
            out.append(message)
            continue
        answers: list[ToolMessage] = []
        while index < len(listed) and isinstance(listed[index], ToolMessage):
            answers.append(listed[index])  # type: ignore[arg-type]
            index += 1
        asked = {call["id"] for call in message.tool_calls}
        answered = {answer.tool_call_id for answer in answers} & asked
        calls = [call for call in message.tool_calls if call["id"] in answered]
        if calls != message.tool_calls:
            message = message.model_copy(update={"tool_calls": calls})
        if calls or message.text.strip():
            out.append(message)
        seen: set[str] = set()
        for answer in answers:
            if answer.tool_call_id in answered and answer.tool_call_id not in seen:
                seen.add(answer.tool_call_id)
                out.append(answer)
    return out


__all__ = [
    "IDEMPOTENCY_PREFIX",
    "MESSAGE_KEY",
    "PART_OF_KEY",
    "event_to_message",
    "message_key",
    "message_to_drafts",
    "paired",
    "records_message",
    "window_messages",
]
