"""OpenAI chat messages → Anthropic Messages API request parts.

Anthropic takes the system prompt apart from the messages, wants user and assistant
turns to alternate, carries tool calls as ``tool_use`` blocks in assistant turns and
tool results as ``tool_result`` blocks in user turns. The leading system messages
become the ``system`` blocks; a system message later in the conversation (the pinned
instruction) becomes a user text block, since Anthropic has no mid-conversation system
role.
"""

from __future__ import annotations

import json
from typing import Any


def to_anthropic(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """``{"system": [text blocks], "messages": [...]}`` equivalent to ``messages``."""
    system: list[dict[str, Any]] = []
    out: list[dict[str, Any]] = []
    leading = True
    for message in messages:
        role = message["role"]
        if role == "system" and leading:
            system.append({"type": "text", "text": _text_of(message.get("content"))})
            continue
        leading = False
        if role == "system":
            _append(out, "user", [{"type": "text", "text": _text_of(message.get("content"))}])
        elif role == "user":
            _append(out, "user", _blocks(message.get("content")))
        elif role == "assistant":
            blocks = _blocks(message.get("content"))
            for call in message.get("tool_calls") or []:
                function = call["function"]
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": call["id"],
                        "name": function["name"],
                        "input": _arguments(function.get("arguments")),
                    }
                )
            _append(out, "assistant", blocks)
        elif role == "tool":
            block: dict[str, Any] = {
                "type": "tool_result",
                "tool_use_id": message["tool_call_id"],
                "content": _blocks(message.get("content")),
            }
            if message.get("is_error"):
                block["is_error"] = True
            _append(out, "user", [block])
    if out and out[0]["role"] != "user":
        # The Messages API wants the conversation to open with a user turn.
        out.insert(0, {"role": "user", "content": [{"type": "text", "text": "(continued)"}]})
    return {"system": system, "messages": out}


def _append(out: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    if not blocks:
        return
    if out and out[-1]["role"] == role:
        out[-1]["content"].extend(blocks)  # consecutive turns of one role are merged
    else:
        out.append({"role": role, "content": list(blocks)})


def _text_of(content: Any) -> str:
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")


def _blocks(content: Any) -> list[dict[str, Any]]:
    if content is None or content == "":
        return []
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    blocks: list[dict[str, Any]] = []
    for part in content:
        if part.get("type") == "text":
            blocks.append({"type": "text", "text": part["text"]})
        elif part.get("type") == "image_url":
            url = part["image_url"]["url"]
            header, _, data = url.partition(",")
            if header.startswith("data:") and header.endswith(";base64"):
                media_type = header[len("data:") : -len(";base64")]
                blocks.append(
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": media_type, "data": data},
                    }
                )
            else:
                blocks.append({"type": "image", "source": {"type": "url", "url": url}})
    return blocks


def _arguments(arguments: Any) -> Any:
    if isinstance(arguments, str):
        try:
            return json.loads(arguments) if arguments else {}
        except json.JSONDecodeError:
            return {"raw": arguments}
    return arguments if arguments is not None else {}
