"""An event's *history weight*: about what it costs in the recent history of a window.

The stored ``token_estimate`` counts every image at its full size and a tool's whole
output; a window shows older screenshots as placeholders or at low detail, and long tool
output shortened. The weight counts an image at most :data:`IMAGE_WEIGHT` and a tool
result at most :data:`TOOL_RESULT_WEIGHT`, so it tracks what the history holds rather
than what was stored.

The session row keeps the running total of its events' weights (the writer adds each
append's), and windows use it as a fixed coordinate along the log: how far into the
session an event lies, in tokens. Points on that axis do not move when events are
appended, which is what lets the recent history slide in steps that the next calls
repeat (:mod:`agentctx.context.history`). The weight is a pure function of the stored
event, so a reader computes exactly what the writer added.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentctx.events import Event
from agentctx.tokens.images import OPENAI_BASE_TOKENS, estimate_image_tokens

IMAGE_WEIGHT = OPENAI_BASE_TOKENS
"""An image weighs at most a low-detail image (85 tokens): most screenshots of the history
are placeholders or kept frames at low detail."""

TOOL_RESULT_WEIGHT = 1000
"""A tool result weighs at most this: longer output is shown shortened."""

MESSAGE_WEIGHT = 4
"""What every event adds for the message that shows it (OpenAI's framing: 3 tokens a
message, and a name or a call id besides)."""


def history_weight(
    event_type: str, token_estimate: int, image_sizes: Iterable[tuple[int | None, int | None]]
) -> int:
    """The history weight of an event of ``event_type`` with ``token_estimate`` and images
    of the given (width, height) sizes."""
    weight = token_estimate
    for width, height in image_sizes:
        full = estimate_image_tokens(width or 0, height or 0)
        weight -= full - min(full, IMAGE_WEIGHT)
    if event_type == "tool_result":
        weight = min(weight, TOOL_RESULT_WEIGHT)
    return max(0, weight) + MESSAGE_WEIGHT


def row_weight(row: Mapping[str, Any]) -> int:
    """The history weight of a stored event row (``type``, ``token_estimate``, ``parts``)."""
    sizes = [
        (part.get("width"), part.get("height"))
        for part in row["parts"]
        if isinstance(part, Mapping) and part.get("kind") == "image"
    ]
    return history_weight(str(row["type"]), int(row["token_estimate"]), sizes)


def event_weight(event: Event) -> int:
    """The history weight of a stored event: what the writer added for it."""
    return history_weight(
        event.type.value, event.token_estimate, [(p.width, p.height) for p in event.images]
    )
