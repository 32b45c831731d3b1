"""The keyword test of an event is remembered by the event's hash: an id a caller chose
twice, in two databases of one process, never shares the other event's answer."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.context import older
from agentctx.context.config import AdaptiveSettings
from agentctx.context.older import is_important as _is_important
from agentctx.context.older import keyword_pattern as _keyword_pattern


def test_same_chosen_id_in_two_databases_keeps_each_events_own_answer(tmp_path: Path) -> None:
    keywords = _keyword_pattern(AdaptiveSettings().important_keywords)
    assert keywords is not None
    events = []
    for name, text in (("a", "we decided to ship on Friday"), ("b", "nice weather today")):
        with ContextEngine(url=f"sqlite:///{tmp_path / name}.db", home=tmp_path / name) as engine:
            session = engine.create_session("u1", "helper", session_id="s1")
            events.append(session.add_message("user", text, event_id="evt-1"))
    first, second = events
    assert first.event_id == second.event_id and first.hash != second.hash
    for _ in range(2):  # the second round answers from the memory
        assert _is_important(first, keywords) is True
        assert _is_important(second, keywords) is False
    assert keywords.found[first.hash] is True and keywords.found[second.hash] is False


def test_events_marked_as_errors_are_important_without_keywords(tmp_path: Path) -> None:
    with ContextEngine(url=f"sqlite:///{tmp_path / 'e.db'}", home=tmp_path / "e") as engine:
        session = engine.create_session("u1", "helper")
        call = session.add_tool_call("deploy", {"env": "prod"})
        result = session.add_tool_result(call.call_id, content="timed out", is_error=True)
    assert _is_important(result, None) is True
    assert _is_important(call, None) is False


def test_the_memo_keeps_its_newest_answers_past_its_bound(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(older, "REMEMBERED_EVENTS", 4)
    keywords = _keyword_pattern(("deadline",))
    assert keywords is not None
    keywords.found.clear()  # one instance per set of words, shared by the process
    with ContextEngine(url=f"sqlite:///{tmp_path / 'k.db'}", home=tmp_path / "k") as engine:
        session = engine.create_session("u1", "helper")
        events = [
            session.add_message("user", f"the deadline is day {i}" if i % 2 else f"note {i}")
            for i in range(10)
        ]
    answers = [_is_important(event, keywords) for event in events]
    assert answers == [i % 2 == 1 for i in range(10)]
    # Full at four answers, each new one past that dropped the older half first.
    assert list(keywords.found) == [event.hash for event in events[6:]]
    assert [_is_important(event, keywords) for event in events] == answers  # refilled alike
