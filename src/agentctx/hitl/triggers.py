"""The rules that say a session needs a human (seed 003, 8.1.5), as pure functions.

Conventions an agent follows to be understood:

* Parse failure: an ``error`` event whose ``payload["error_type"]`` (or
  ``payload["error_code"]``) is one of ``HitlConfig.parse_error_types``, by default
  ``parse_error`` (``session.add_event("error", payload={"error_type": "parse_error",
  "message": …})``) or seed 003's ``reflector_parse_failed`` / ``aggregator_parse_failed``.
* Tool failures: ``tool_result`` events with ``is_error`` (``add_tool_result(…,
  is_error=True)``). The tool is the one named on the linked ``tool_call``
  (``meta.tool_name``, found by ``call_id``). A successful result of the same tool ends
  the run; results of other tools do not.
* Low confidence: a number under ``payload["confidence"]`` or under the event's metadata
  (``add_message(…, metadata={"confidence": 0.3})``), below ``HitlConfig.min_confidence``.

:func:`scan` walks events in seq order, carrying the open failure runs across calls in
a :class:`TriggerState`, so each evaluation looks only at events it has not seen.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from agentctx.events import Event, EventType
from agentctx.hitl.config import HitlConfig

TriggerName = Literal["parse_failure", "tool_failures", "low_confidence"]

UNKNOWN_TOOL = "(unknown tool)"
_MESSAGE_CHARS = 200


@dataclass(frozen=True, slots=True)
class Finding:
    """One trigger that fired: why, and the events that caused it (the last one fired it)."""

    trigger: TriggerName
    reason: str
    event_ids: tuple[str, ...]
    seq: int
    turn_id: str | None

    @property
    def fired_by(self) -> str:
        """The id of the event that made the trigger fire."""
        return self.event_ids[-1]


@dataclass(slots=True)
class TriggerState:
    """What the triggers carry from one evaluation to the next: per tool, the ids of its
    failed results since its last success (at most ``consecutive_tool_failures``)."""

    streaks: dict[str, list[str]] = field(default_factory=dict)

    @classmethod
    def from_json(cls, value: Mapping[str, Any] | None) -> TriggerState:
        """The state as stored (a JSON object of lists of event ids)."""
        return cls({str(k): [str(i) for i in v] for k, v in (value or {}).items()})

    def to_json(self) -> dict[str, list[str]]:
        """The state to store."""
        return {tool: list(ids) for tool, ids in self.streaks.items() if ids}


def parse_failure(event: Event, config: HitlConfig) -> Finding | None:
    """A finding if ``event`` is an error event reporting a parse failure."""
    if not config.parse_failure or event.type is not EventType.ERROR:
        return None
    kinds = {event.payload.get("error_type"), event.payload.get("error_code")}
    matched = sorted(k for k in kinds if isinstance(k, str) and k in config.parse_error_types)
    if not matched:
        return None
    message = event.payload.get("message")
    detail = f": {message[:_MESSAGE_CHARS]}" if isinstance(message, str) and message else ""
    return Finding(
        "parse_failure",
        f"the agent could not parse a model's output ({matched[0]}){detail}",
        (event.event_id,),
        event.seq,
        event.turn_id,
    )


def reported_confidence(event: Event) -> float | None:
    """The confidence an event reports in its payload or metadata (payload first)."""
    for source in (event.payload, event.meta.extra):
        value = source.get("confidence")
        # bool is an int: True must not read as confidence 1.0.
        if isinstance(value, int | float) and not isinstance(value, bool):
            return float(value)
    return None


def low_confidence(event: Event, config: HitlConfig) -> Finding | None:
    """A finding if ``event`` reports a confidence below ``config.min_confidence``."""
    if config.min_confidence is None or event.type is EventType.HITL:
        return None
    value = reported_confidence(event)
    if value is None or value >= config.min_confidence:
        return None
    return Finding(
        "low_confidence",
        f"{event.type.value} reported confidence {value:.2f}, below {config.min_confidence:.2f}",
        (event.event_id,),
        event.seq,
        event.turn_id,
    )


def is_failed_result(event: Event) -> bool:
    """Whether a ``tool_result`` reports a failure (``is_error`` or status ``error``)."""
    return event.payload.get("is_error") is True or event.meta.status == "error"


def tool_failures(
    event: Event, tool: str, state: TriggerState, config: HitlConfig
) -> Finding | None:
    """Count one tool result into ``state``; a finding when it completes a run of failures."""
    limit = config.consecutive_tool_failures
    if limit <= 0 or event.type is not EventType.TOOL_RESULT:
        return None
    if not is_failed_result(event):
        state.streaks.pop(tool, None)  # a success ends the tool's run
        return None
    run = state.streaks.setdefault(tool, [])
    run.append(event.event_id)
    del run[:-limit]  # only the last ``limit`` failures can ever matter
    if len(run) < limit:
        return None
    return Finding(
        "tool_failures",
        f"tool {tool!r} failed {limit} times in a row",
        tuple(run),
        event.seq,
        event.turn_id,
    )


def calls_to_look_up(events: Iterable[Event]) -> set[str]:
    """Call ids of ``tool_result`` events whose ``tool_call`` is not among ``events``."""
    called = {e.call_id for e in events if e.type is EventType.TOOL_CALL and e.call_id}
    return {
        e.call_id
        for e in events
        if e.type is EventType.TOOL_RESULT and e.call_id and e.call_id not in called
    }


def tool_name_of_call(call: Event) -> str:
    """The tool a ``tool_call`` event names."""
    name = call.meta.tool_name or call.payload.get("name")
    return name if isinstance(name, str) and name else UNKNOWN_TOOL


def scan(
    events: Iterable[Event],
    state: TriggerState,
    config: HitlConfig,
    *,
    known_calls: Mapping[str, str] | None = None,
    first_only: bool = False,
) -> list[Finding]:
    """Every finding among ``events`` (in seq order), updating ``state`` as it goes;
    with ``first_only``, stop at the first event that fires (``state`` is then as it was
    right after that event).

    ``known_calls`` maps call ids of earlier ``tool_call`` events to their tool names;
    calls among ``events`` are learned on the way. ``hitl`` events are never evaluated,
    so marking a session cannot mark it again.
    """
    calls: dict[str, str] = dict(known_calls or {})
    findings: list[Finding] = []
    for event in events:
        if event.type is EventType.HITL:
            continue
        if event.type is EventType.TOOL_CALL and event.call_id:
            calls[event.call_id] = tool_name_of_call(event)
        found = [parse_failure(event, config), low_confidence(event, config)]
        if event.type is EventType.TOOL_RESULT:
            tool = calls.get(event.call_id or "", UNKNOWN_TOOL)
            found.append(tool_failures(event, tool, state, config))
        findings.extend(f for f in found if f is not None)
        if first_only and findings:
            break
    return findings
