"""Event triggers of extraction (seed 003 A.1.3): what in a turn calls for a memory pass.

Besides the time-based and end-of-turn triggers the service runs, some events call
for extraction on their own: something went wrong, the agent was unsure, it kept
reflecting on the same turn, or the task ended. :func:`extraction_signals` names
which of these a batch of events shows:

* ``error``: an ``error`` event, or a tool result that failed (``meta.status ==
  "error"``);
* ``low_confidence``: an event whose caller metadata (``meta.extra``) reports a
  ``confidence`` below :data:`LOW_CONFIDENCE`, or a ``reflection`` event whose payload
  (``confidence``) or text ("confidence: 0.3", "low confidence", 置信度低) reports one;
* ``repeated_reflection``: two or more ``reflection`` events in one turn;
* ``final``: a ``final`` event (the agent's final answer).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from typing import Any

from agentctx.events import Event, EventType

LOW_CONFIDENCE = 0.5
"""A confidence below this is low."""

ERROR = "error"
LOW_CONFIDENCE_SIGNAL = "low_confidence"
REPEATED_REFLECTION = "repeated_reflection"
FINAL = "final"
SIGNALS: frozenset[str] = frozenset({ERROR, LOW_CONFIDENCE_SIGNAL, REPEATED_REFLECTION, FINAL})
"""Every signal :func:`extraction_signals` can report."""

_CONFIDENCE_IN_TEXT = re.compile(
    r"(?:confidence|置信度|信心)\s*[:=\uff1a]?\s*(?P<value>[01](?:\.\d+)?|\.\d+)", re.IGNORECASE
)
_LOW_WORDS = re.compile(
    r"\b(low confidence|not confident|unsure|uncertain)\b|置信度低|不确定|没有把握", re.IGNORECASE
)


def _number(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _low(value: Any) -> bool:
    number = _number(value)
    return number is not None and number < LOW_CONFIDENCE


def _reflection_is_low(event: Event) -> bool:
    if _low(event.payload.get("confidence")):
        return True
    text = event.text
    match = _CONFIDENCE_IN_TEXT.search(text)
    if match is not None:
        return float(match["value"]) < LOW_CONFIDENCE
    return bool(_LOW_WORDS.search(text))


def extraction_signals(events: Iterable[Event]) -> set[str]:
    """The event triggers (:data:`SIGNALS`) that ``events`` show; empty when none."""
    found: set[str] = set()
    reflections: Counter[str | None] = Counter()
    for event in events:
        if event.type == EventType.ERROR or (
            event.type == EventType.TOOL_RESULT and event.meta.status == "error"
        ):
            found.add(ERROR)
        if _low(event.meta.extra.get("confidence")):
            found.add(LOW_CONFIDENCE_SIGNAL)
        if event.type == EventType.REFLECTION:
            if _reflection_is_low(event):
                found.add(LOW_CONFIDENCE_SIGNAL)
            # Events outside a turn are each their own turn: they never repeat.
            key = event.turn_id if event.turn_id is not None else f"seq-{event.seq}"
            reflections[key] += 1
            if reflections[key] >= 2:
                found.add(REPEATED_REFLECTION)
        if event.type == EventType.FINAL:
            found.add(FINAL)
    return found
