"""Tokens of OpenAI chat messages, framing included.

The rules are the ones OpenAI publishes for its chat models (the "How to count
tokens with tiktoken" cookbook): every message costs 3 tokens of framing plus
the tokens of each of its string fields (``role``, ``content``, ``name``,
``tool_call_id``, ...), a ``name`` costs 1 more, and the reply is primed with 3
tokens, counted once per request. OpenAI publishes no rule for the tool calls of
an assistant message; here each costs its function name and arguments as text
plus 3 tokens of framing, like a message.

Images (``{"type": "image_url", "image_url": {"url": ..., "detail": ...}}``) are
priced by OpenAI's image formula. Their size is not part of the OpenAI format,
so it comes from ``image_size``, a function from the image URL to ``(width,
height)`` (or None when unknown); ``data:`` URLs are measured from their own
header when it gives nothing. An image of unknown size is priced at the most a
high-detail image can cost (1445 tokens), so budgets err on the safe side;
``"low"`` detail is always 85.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from agentctx.errors import InvalidInput
from agentctx.tokens.base import TokenCounter
from agentctx.tokens.images import (
    DETAILS,
    OPENAI_BASE_TOKENS,
    OPENAI_MAX_TOKENS,
    image_size_from_data_url,
    image_tokens,
)

ImageSize = Callable[[str], "tuple[int, int] | None"]

MESSAGE_TOKENS = 3
NAME_TOKENS = 1
REPLY_PRIMING_TOKENS = 3
TOOL_CALL_TOKENS = 3

_TEXT_PART_FIELDS = {"text": "text", "refusal": "refusal"}


def message_tokens(
    counter: TokenCounter, message: Mapping[str, Any], *, image_size: ImageSize | None = None
) -> int:
    """Tokens of one chat message, its framing included (not the reply priming)."""
    texts: list[str] = []
    fixed = _collect(message, texts, image_size)
    return fixed + sum(counter.count_many(texts))


def messages_tokens(
    counter: TokenCounter,
    messages: Sequence[Mapping[str, Any]],
    *,
    image_size: ImageSize | None = None,
) -> int:
    """Tokens of a whole request's messages: each message plus the reply priming."""
    texts: list[str] = []
    fixed = REPLY_PRIMING_TOKENS
    for message in messages:
        fixed += _collect(message, texts, image_size)
    return fixed + sum(counter.count_many(texts))


def _collect(message: Mapping[str, Any], texts: list[str], image_size: ImageSize | None) -> int:
    """Append the texts of ``message`` to ``texts``; return its tokens that are not text."""
    if not isinstance(message, Mapping):
        raise InvalidInput(f"a message must be a dict, got {type(message).__name__}")
    role = message.get("role")
    if not isinstance(role, str) or not role:
        raise InvalidInput("a message needs a non-empty string 'role'")
    fixed = MESSAGE_TOKENS
    for key, value in message.items():
        if value is None:
            continue
        if key == "content" and not isinstance(value, str):
            fixed += _content_parts(value, texts, image_size)
        elif key == "tool_calls":
            fixed += _tool_calls(value, texts)
        elif key == "function_call":  # the legacy single call
            fixed += _tool_calls([{"function": value}], texts)
        elif isinstance(value, str):
            texts.append(value)
            if key == "name":
                fixed += NAME_TOKENS
        else:
            kind = type(value).__name__
            raise InvalidInput(f"message field {key!r} must be a string, got {kind}")
    return fixed


def _content_parts(content: Any, texts: list[str], image_size: ImageSize | None) -> int:
    if not isinstance(content, list):
        raise InvalidInput(
            f"message content must be a string or a list of parts, got {type(content).__name__}"
        )
    fixed = 0
    for part in content:
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in _TEXT_PART_FIELDS:
            text = part.get(_TEXT_PART_FIELDS[kind])
            if not isinstance(text, str):
                raise InvalidInput(f"a {kind!r} part needs a string {_TEXT_PART_FIELDS[kind]!r}")
            texts.append(text)
        elif kind == "image_url":
            fixed += _image_part(part, image_size)
        else:
            raise InvalidInput(
                f"unsupported content part {kind!r}; accepted: 'text', 'refusal', 'image_url'"
            )
    return fixed


def _image_part(part: Mapping[str, Any], image_size: ImageSize | None) -> int:
    spec = part.get("image_url")
    if isinstance(spec, str):  # some clients send the URL bare
        spec = {"url": spec}
    url = spec.get("url") if isinstance(spec, Mapping) else None
    if not isinstance(url, str):
        raise InvalidInput("an 'image_url' part needs {'url': <string>}")
    detail = spec.get("detail", "auto") if isinstance(spec, Mapping) else "auto"
    if detail not in DETAILS:
        raise InvalidInput(f"unknown image detail {detail!r}; accepted: {', '.join(DETAILS)}")
    if detail == "low":
        return OPENAI_BASE_TOKENS
    size = image_size(url) if image_size is not None else None
    if size is None:
        size = image_size_from_data_url(url)
    if size is None:
        return OPENAI_MAX_TOKENS
    return image_tokens(size[0], size[1], provider="openai", detail=detail)


def _tool_calls(calls: Any, texts: list[str]) -> int:
    if not isinstance(calls, list):
        raise InvalidInput(f"'tool_calls' must be a list, got {type(calls).__name__}")
    for call in calls:
        function = call.get("function") if isinstance(call, Mapping) else None
        if not isinstance(function, Mapping):
            raise InvalidInput("a tool call needs a 'function' with 'name' and 'arguments'")
        for field in ("name", "arguments"):
            value = function.get(field, "")
            if not isinstance(value, str):
                raise InvalidInput(f"a tool call's function {field!r} must be a string")
            texts.append(value)
    return TOOL_CALL_TOKENS * len(calls)
