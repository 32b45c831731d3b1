"""Which tool call each tool result answers.

A result answers the latest earlier call with its ``call_id`` that has no result yet.
Real logs reuse a call id once its result came back (a model may give two calls of one
conversation the same id), so a call id names a call only together with its place in
the log: every part of agentctx that pairs calls with results pairs them here.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from agentctx.events import EventType

_CALL = EventType.TOOL_CALL.value
_RESULT = EventType.TOOL_RESULT.value


class ToolEvent(Protocol):
    """What pairing needs of an event: its seq, type and call id."""

    @property
    def seq(self) -> int: ...

    @property
    def type(self) -> str: ...

    @property
    def call_id(self) -> str | None: ...


def answered_calls(events: Iterable[ToolEvent]) -> dict[int, int]:
    """``{result seq: call seq}`` for the results among ``events`` (in seq order) whose
    call is among them too."""
    waiting: dict[str, int] = {}  # call id -> seq of its call still unanswered
    answers: dict[int, int] = {}
    for event in events:
        call_id = event.call_id
        if not call_id:
            continue
        if event.type == _CALL:
            waiting[call_id] = event.seq
        elif event.type == _RESULT:
            call = waiting.pop(call_id, None)
            if call is not None:
                answers[event.seq] = call
    return answers


def unanswered_calls(events: Sequence[ToolEvent]) -> set[int]:
    """Seqs of the calls among ``events`` (in seq order) that no later one answers."""
    calls = {e.seq for e in events if e.call_id and e.type == _CALL}
    return calls - set(answered_calls(events).values())
