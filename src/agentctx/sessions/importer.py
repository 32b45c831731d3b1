"""Recording a conversation given in a provider's message format, as the agent made it.

``session.import_messages(messages, format="openai")`` (or ``"anthropic"``) turns chat
messages into events: every user message opens a turn, and what follows it (assistant
text, tool calls, tool results) joins that turn until the next user message. A tool call
is a ``tool_call`` event with its id, tool name and arguments; a tool result answers it
by id (a reused id answers the latest call that has no result yet, as real logs do).
Images given as data URLs or base64 sources are stored as images; images given by a web
address are recorded as a text reference (nothing is fetched).

:class:`MessageImporter` does the same one message at a time, for a conversation that is
still going on (the agent loop benchmark replays conversations this way).

OpenAI's format: ``{"role": "system" | "developer" | "user" | "assistant" | "tool",
"content": str | parts, "tool_calls": [...], "tool_call_id": ..., "name": ...}``.
Anthropic's: a list of ``{"role": "user" | "assistant", "content": str | blocks}`` or
``{"system": ..., "messages": [...]}``; a user message made only of ``tool_result``
blocks continues the turn.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any, Literal, Protocol

from pydantic import ValidationError

from agentctx.errors import InvalidEvent, InvalidInput
from agentctx.events import (
    Event,
    EventDraft,
    EventMeta,
    EventType,
    ImageData,
    JsonPart,
    TextPart,
)
from agentctx.sessions.open_turns import note_unended

MessageFormat = Literal["openai", "anthropic"]
FORMATS: tuple[str, ...] = ("openai", "anthropic")


class ImportTurn(Protocol):
    """An open turn the importer writes into."""

    @property
    def turn_id(self) -> str: ...

    def append(self, *drafts: EventDraft, expected_last_seq: int | None = None) -> list[Event]: ...

    def end(self, status: str = "ok") -> None: ...


class ImportTarget(Protocol):
    """What the importer needs of a session: turns it can open, and writes outside them."""

    def begin_turn(
        self, *, request_id: str | None = None, author: str | None = None
    ) -> ImportTurn: ...

    def append(self, *drafts: EventDraft, expected_last_seq: int | None = None) -> list[Event]: ...


@dataclass
class ImportReport:
    """What an import recorded: the events in order, and the turns it opened."""

    events: list[Event] = field(default_factory=list)
    turn_ids: list[str] = field(default_factory=list)


class MessageImporter:
    """Records messages of one conversation into a session, one at a time.

    A user message ends the open turn and opens the next; everything else joins the
    open turn (a turn is opened for an assistant message that comes first). Call
    :meth:`close` (or use it as a context manager) to end the last turn.
    """

    def __init__(self, session: ImportTarget, format: MessageFormat | str = "openai") -> None:
        if format not in FORMATS:
            raise InvalidInput(f"unknown message format {format!r}; accepted: {list(FORMATS)}")
        self._session = session
        self._format = format
        self._turn: ImportTurn | None = None
        self._index = 0
        self.report = ImportReport()

    def __enter__(self) -> MessageImporter:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        turn_id = self.turn_id
        try:
            self.close()
        except Exception as ending:
            if exc is None:
                raise
            note_unended(exc, turn_id, ending)  # the block's exception is the one to see

    @property
    def turn_id(self) -> str | None:
        """The turn the next non-user message joins (None before the first)."""
        return self._turn.turn_id if self._turn is not None else None

    def add(self, message: Mapping[str, Any]) -> list[Event]:
        """Record one message; returns its events (none for an empty message)."""
        where = f"messages[{self._index}]"
        self._index += 1
        if not isinstance(message, Mapping):
            raise InvalidInput(
                f"{where}: a message must be an object, got {type(message).__name__}"
            )
        try:
            steps = (
                _openai_steps(message) if self._format == "openai" else _anthropic_steps(message)
            )
        except (InvalidInput, InvalidEvent) as exc:
            raise type(exc)(f"{where}: {exc}") from exc
        written: list[Event] = []
        for opens_turn, drafts in steps:
            if not drafts:
                continue
            written += self._write(drafts, opens_turn=opens_turn, author=drafts[0].author)
        self.report.events += written
        return written

    def add_all(self, messages: Iterable[Mapping[str, Any]]) -> ImportReport:
        """Record every message, then end the last turn."""
        for message in messages:
            self.add(message)
        self.close()
        return self.report

    def close(self) -> None:
        """End the open turn, if any."""
        if self._turn is not None:
            turn, self._turn = self._turn, None
            turn.end("ok")

    def _write(
        self, drafts: list[EventDraft], *, opens_turn: bool, author: str | None
    ) -> list[Event]:
        if drafts[0].type is EventType.SYSTEM and self._turn is None:
            return self._session.append(*drafts)  # instructions before the first turn
        if opens_turn or self._turn is None:
            self.close()
            self._turn = self._session.begin_turn(author=author)
            self.report.turn_ids.append(self._turn.turn_id)
        return self._turn.append(*drafts)


def import_messages(
    session: ImportTarget, messages: Any, format: MessageFormat | str = "openai"
) -> ImportReport:
    """Record a whole conversation (see the module docstring); returns what was written.

    ``messages`` is a list of messages, or an object with ``messages`` (and, in
    Anthropic's format, ``system``).
    """
    listed = _message_list(messages, format)
    return MessageImporter(session, format).add_all(listed)


def _message_list(messages: Any, format: str) -> list[Mapping[str, Any]]:
    if isinstance(messages, Mapping):
        body = messages.get("messages")
        if not isinstance(body, list):
            raise InvalidInput("an object of messages needs a 'messages' list")
        system = messages.get("system")
        prefix: list[Mapping[str, Any]] = []
        if system:
            prefix = [{"role": "system", "content": system}]
        return prefix + list(body)
    if isinstance(messages, Sequence) and not isinstance(messages, str | bytes):
        return list(messages)
    raise InvalidInput(f"messages must be a list or an object, got {type(messages).__name__}")


Step = tuple[bool, list[EventDraft]]
"""Drafts written in one transaction, and whether they open a new turn."""


# OpenAI ---------------------------------------------------------------------------------


def _openai_steps(message: Mapping[str, Any]) -> list[Step]:
    role = message.get("role")
    author = _author(message.get("name"))
    if role in ("system", "developer"):
        return [(False, _text_drafts(EventType.SYSTEM, message.get("content"), author))]
    if role == "user":
        return [(True, _text_drafts(EventType.USER_INPUT, message.get("content"), author))]
    if role == "assistant":
        drafts = _text_drafts(EventType.AGENT_RESPONSE, message.get("content"), author)
        if message.get("refusal"):
            drafts += _text_drafts(EventType.AGENT_RESPONSE, message["refusal"], author)
        for call in message.get("tool_calls") or ():
            drafts.append(_openai_call(call, author))
        return [(False, drafts)]
    if role == "tool":
        call_id = message.get("tool_call_id")
        if not isinstance(call_id, str) or not call_id:
            raise InvalidInput("a tool message needs its 'tool_call_id'")
        return [(False, [_result(call_id, message.get("content"), is_error=False)])]
    raise InvalidInput(f"unknown role {role!r}; accepted: system, developer, user, assistant, tool")


def _openai_call(call: Any, author: str | None) -> EventDraft:
    if not isinstance(call, Mapping) or not isinstance(call.get("function"), Mapping):
        raise InvalidInput("a tool call needs a 'function' object")
    function = call["function"]
    name, call_id = function.get("name"), call.get("id")
    if not isinstance(name, str) or not name:
        raise InvalidInput("a tool call needs a function 'name'")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidInput(f"the call of {name!r} needs an 'id'")
    return _call(call_id, name, function.get("arguments"), author)


# Anthropic ------------------------------------------------------------------------------


def _anthropic_steps(message: Mapping[str, Any]) -> list[Step]:
    role = message.get("role")
    content = message.get("content")
    blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else []
    if isinstance(content, list):
        blocks = content
    elif content is not None and not isinstance(content, str):
        raise InvalidInput("content must be a string or a list of blocks")
    if role == "system":
        return [(False, _text_drafts(EventType.SYSTEM, _block_text(blocks), None))]
    if role == "user":
        results = [b for b in blocks if _kind(b) == "tool_result"]
        others = [b for b in blocks if _kind(b) != "tool_result"]
        steps: list[Step] = []
        if results:  # answers to the assistant's calls: they continue the turn
            steps.append((False, [_anthropic_result(b) for b in results]))
        if others:
            steps.append((True, _content_drafts(EventType.USER_INPUT, others, None)))
        return steps
    if role == "assistant":
        drafts = _content_drafts(
            EventType.AGENT_RESPONSE, [b for b in blocks if _kind(b) != "tool_use"], None
        )
        for block in blocks:
            if _kind(block) == "tool_use":
                name, call_id = block.get("name"), block.get("id")
                if not isinstance(name, str) or not name or not isinstance(call_id, str):
                    raise InvalidInput("a tool_use block needs a 'name' and an 'id'")
                drafts.append(_call(call_id, name, block.get("input"), None))
        return [(False, drafts)]
    raise InvalidInput(f"unknown role {role!r}; accepted: system, user, assistant")


def _anthropic_result(block: Mapping[str, Any]) -> EventDraft:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or not call_id:
        raise InvalidInput("a tool_result block needs its 'tool_use_id'")
    content = block.get("content")
    return _result(call_id, content, is_error=bool(block.get("is_error")))


# Shared ---------------------------------------------------------------------------------


def _kind(block: Any) -> str | None:
    if not isinstance(block, Mapping):
        raise InvalidInput(f"a content block must be an object, got {type(block).__name__}")
    kind = block.get("type")
    return kind if isinstance(kind, str) else None


def _text_drafts(event_type: EventType, content: Any, author: str | None) -> list[EventDraft]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [_draft(type=event_type, author=author, parts=(TextPart(text=content),))]
    if isinstance(content, list):
        return _content_drafts(event_type, content, author)
    raise InvalidInput("content must be a string or a list of parts")


def _content_drafts(
    event_type: EventType, parts: list[Any], author: str | None
) -> list[EventDraft]:
    """One event of the given parts: text parts joined, images stored as images."""
    texts: list[str] = []
    images: list[ImageData] = []
    for part in parts:
        kind = _kind(part)
        if kind in ("text", "input_text", "output_text"):
            text = part.get("text")
            if isinstance(text, str) and text:
                texts.append(text)
        elif kind in ("image_url", "image", "input_image"):
            image = _image(part)
            if isinstance(image, str):
                texts.append(image)
            elif image is not None:
                images.append(image)
        elif kind in ("thinking", "redacted_thinking"):
            continue  # the model's private reasoning is not part of the conversation
        else:
            raise InvalidInput(f"unsupported content part type {kind!r}")
    if not texts and not images:
        return []
    body: list[Any] = [TextPart(text="\n".join(texts))] if texts else []
    return [_draft(type=event_type, author=author, parts=(*body, *images))]


def _image(part: Mapping[str, Any]) -> ImageData | str | None:
    """An image part as image bytes, or as a text reference when given by address."""
    url: Any = None
    source = part.get("source")
    if isinstance(source, Mapping):  # Anthropic
        if source.get("type") == "base64":
            return _image_data(source.get("data"), source.get("media_type"))
        url = source.get("url")
    else:  # OpenAI
        image_url = part.get("image_url")
        url = image_url.get("url") if isinstance(image_url, Mapping) else image_url
    if not isinstance(url, str) or not url:
        raise InvalidInput("an image part needs a data URL, base64 data or an address")
    if url.startswith("data:"):
        return _image_data(url, None)
    return f"[image: {url}]"


def _image_data(data: Any, media_type: Any) -> ImageData:
    try:
        return ImageData(data=data, media_type=media_type if isinstance(media_type, str) else None)
    except ValidationError as exc:
        raise InvalidInput(f"image: {exc.errors()[0]['msg']}") from exc


def _block_text(blocks: list[Any]) -> str:
    return "\n".join(
        b["text"] for b in blocks if _kind(b) == "text" and isinstance(b.get("text"), str)
    )


def _call(call_id: str, name: str, arguments: Any, author: str | None) -> EventDraft:
    """A tool call; arguments given as JSON text are parsed, kept as text when not JSON."""
    parts: tuple[Any, ...]
    if isinstance(arguments, str):
        try:
            parts = (JsonPart(data=json.loads(arguments)),) if arguments.strip() else ()
        except ValueError:
            parts = (TextPart(text=arguments),)
    elif arguments is None:
        parts = (JsonPart(data={}),)
    else:
        parts = (JsonPart(data=arguments),)
    return _draft(
        type=EventType.TOOL_CALL,
        author=author,
        call_id=call_id,
        parts=parts,
        payload={"name": name},
        meta=EventMeta(tool_name=name),
    )


def _result(call_id: str, content: Any, *, is_error: bool) -> EventDraft:
    drafts = _text_drafts(EventType.TOOL_RESULT, content, None)
    parts = drafts[0].parts if drafts else ()
    return _draft(
        type=EventType.TOOL_RESULT,
        call_id=call_id,
        parts=parts,
        payload={"is_error": is_error},
        meta=EventMeta(status="error" if is_error else "ok"),
    )


def _draft(**fields: Any) -> EventDraft:
    try:
        return EventDraft(**fields)
    except ValidationError as exc:
        raise InvalidEvent(str(exc)) from exc


def _author(name: Any) -> str | None:
    return name if isinstance(name, str) and name else None
