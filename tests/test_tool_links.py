"""Pairing tool results with their calls when real logs reuse a call id."""

from __future__ import annotations

from agentctx.compaction.fold.config import FoldConfig
from agentctx.compaction.fold.plan import EventHead
from agentctx.compaction.fold.plan import atoms_of as fold_atoms
from agentctx.events import EventType
from agentctx.tool_links import answered_calls, unanswered_calls

CALL, RESULT, USER = EventType.TOOL_CALL, EventType.TOOL_RESULT, EventType.USER_INPUT


def _heads(*spec: tuple[EventType, str | None]) -> list[EventHead]:
    return [
        EventHead(seq=i + 1, type=kind, call_id=call_id, turn_id="t1", token_estimate=10)
        for i, (kind, call_id) in enumerate(spec)
    ]


def test_a_result_answers_the_latest_unanswered_call_with_its_id() -> None:
    events = _heads((CALL, "a"), (RESULT, "a"), (USER, None), (CALL, "a"), (RESULT, "a"))
    assert answered_calls(events) == {2: 1, 5: 4}
    assert unanswered_calls(events) == set()


def test_a_call_whose_id_was_reused_keeps_only_its_own_result() -> None:
    events = _heads((CALL, "a"), (RESULT, "a"), (CALL, "a"))
    assert answered_calls(events) == {2: 1}
    assert unanswered_calls(events) == {3}


def test_fold_atoms_pair_each_reused_call_with_its_own_result() -> None:
    events = _heads((CALL, "a"), (RESULT, "a"), (USER, None), (CALL, "a"), (RESULT, "a"))
    events.append(EventHead(seq=6, type=USER, call_id=None, turn_id="t2", token_estimate=10))
    atoms = fold_atoms(events, [10] * len(events), FoldConfig())
    assert [[e.seq for e in atom.events] for atom in atoms] == [[1, 2], [3], [4, 5], [6]]
