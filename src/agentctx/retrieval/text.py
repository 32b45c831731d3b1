"""What of a stored event is searchable: its text, as one string.

Text parts; the string (and number) values of JSON parts and of the payload, at any
depth; the preview of content offloaded to the blob store; and the tool name of a
tool call or result. Images contribute nothing. Events are read as stored, so the
index only ever sees redacted content.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

MAX_EMBED_CHARS = 2000
"""Text beyond this is not embedded (models read a few hundred tokens at most)."""


def _values(value: Any, depth: int = 0) -> Iterator[str]:
    if depth > 32:
        return
    if isinstance(value, str):
        if value:
            yield value
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int | float):
        yield str(value)
    elif isinstance(value, Mapping):
        for item in value.values():
            yield from _values(item, depth + 1)
    elif isinstance(value, list | tuple):
        for item in value:
            yield from _values(item, depth + 1)


def stored_event_text(
    parts: Sequence[Mapping[str, Any]], payload: Mapping[str, Any], meta: Mapping[str, Any]
) -> str:
    """The searchable text of an event from its stored ``parts``, ``payload`` and ``meta``."""
    pieces: list[str] = []
    tool = meta.get("tool_name")
    if isinstance(tool, str) and tool:
        pieces.append(tool)
    for part in parts:
        kind = part.get("kind")
        if kind == "text":
            pieces.append(str(part.get("text", "")))
        elif kind == "json":
            pieces.extend(_values(part.get("data")))
        elif kind == "blob":
            preview = part.get("preview")
            if isinstance(preview, str) and preview:
                pieces.append(preview)
    pieces.extend(value for value in _values(payload) if value != tool)
    return "\n".join(piece for piece in pieces if piece)
