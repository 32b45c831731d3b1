"""Older events that say something specific rank above chit-chat that matches as well
(``agentctx.context.informative``): a user's statement of fact, a line naming something."""

from __future__ import annotations

from typing import Any

import pytest

from agentctx import ContextEngine
from agentctx.context.informative import (
    InformativeMarks,
    favour_informative,
    names_something,
    states_a_fact,
)
from agentctx.context.pieces import Candidate
from agentctx.context.units import Atom
from agentctx.events import Event


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("we flew to Lisbon last spring", True),
        ("dinner with ana on Friday", True),
        ("I moved to Zürich for work", True),  # capitals beyond ASCII
        ("Sure, that sounds great", False),  # a capital opening the sentence says nothing
        ("that was fun. Tomorrow then", False),  # nor one opening the next sentence
        ("ok see you\nThanks again", False),  # nor one opening a line
        ("I think so too", False),  # "I" is no name
        ("that is SO cool lol", False),  # nor a word in capitals
        ("我们去了北京", False),  # a script without case names nothing this way
        ("", False),
    ],
)
def test_names_something(text: str, named: bool) -> None:
    assert names_something(text) is named


@pytest.fixture
def events(engine: ContextEngine) -> list[Event]:
    session = engine.create_session(user_id="u1")
    for role, text in (
        ("user", "I work as a night nurse at the hospital."),  # a fact the rules learn
        ("user", "haha yes the hospital food was awful that day"),
        ("assistant", "I work as a night nurse at the hospital."),  # not the user's fact
        ("user", "we drove past the hospital near Porto"),  # names a place
        ("user", "ok"),
    ):
        session.add_message(role, text, author="Ines" if role == "assistant" else "Ana")
    return list(session.events())


def test_states_a_fact_only_for_the_users_own_statements(events: list[Event]) -> None:
    assert [states_a_fact(e) for e in events] == [True, False, False, False, False]


def test_the_person_a_query_is_about_states_facts_too(events: list[Event]) -> None:
    """The assistant's "I work as a night nurse" is a fact about the assistant when the
    query is about them (a participant of a chat recorded as the assistant)."""
    assert [states_a_fact(e, "Ines") for e in events] == [True, False, True, False, False]
    assert not states_a_fact(events[2], "someone else")


def test_marks_are_remembered_per_event(events: list[Event]) -> None:
    marks = InformativeMarks(size=2)
    assert (marks.about_self(events[0]), marks.names(events[0])) == (True, False)
    assert (marks.about_self(events[3]), marks.names(events[3])) == (False, True)
    assert marks.about_self(events[0]) is True  # from the cache, the same
    assert marks.about_self(events[2]) is True  # whoever wrote it: the caller decides
    # A third event evicts the least recently used one; a recomputed mark is the same.
    assert marks.about_self(events[4]) is False
    assert marks.about_self(events[3]) is False


def scored(events: list[Event], relevance: dict[int, float]) -> list[Candidate]:
    return [Candidate(atom=Atom([e]), score=relevance.get(e.seq, 0.0)) for e in events]


def test_a_statement_of_fact_outranks_chit_chat_that_matches_better(
    events: list[Event],
) -> None:
    fact, chat, assistant, place, ok = (e.seq for e in events)
    relevance = {fact: 0.80, chat: 0.83, assistant: 0.80, place: 0.79}
    candidates = scored(events, relevance)

    favour_informative(candidates, relevance, 0.05, 0.03, marks=InformativeMarks())

    scores = {c.atom.first_seq: c.score for c in candidates}
    assert scores[fact] == pytest.approx(0.85)
    assert scores[chat] == pytest.approx(0.83)  # unchanged
    assert scores[assistant] == pytest.approx(0.80)  # the assistant's "I" is not the user
    assert scores[place] == pytest.approx(0.82)
    assert scores[fact] > scores[chat] > scores[place] > scores[assistant]
    # An event with no relevance gains nothing, however informative.
    assert scores[ok] == 0.0


def test_the_subjects_statement_of_fact_gains_like_the_users(events: list[Event]) -> None:
    fact, chat, assistant, place, _ok = (e.seq for e in events)
    relevance = {fact: 0.80, chat: 0.83, assistant: 0.80, place: 0.79}
    candidates = scored(events, relevance)

    favour_informative(candidates, relevance, 0.05, 0.03, subject="Ines", marks=InformativeMarks())

    scores = {c.atom.first_seq: c.score for c in candidates}
    assert scores[assistant] == pytest.approx(0.85)  # Ines is whom the query is about
    assert scores[fact] == pytest.approx(0.85)  # the user's own facts still count
    assert scores[chat] == pytest.approx(0.83)


def test_irrelevant_events_gain_nothing_and_zero_weights_change_nothing(
    events: list[Event],
) -> None:
    fact = events[0].seq
    candidates = scored(events, {})
    favour_informative(candidates, {}, 0.05, 0.03, marks=InformativeMarks())
    assert [c.score for c in candidates] == [0.0] * len(events)

    relevance = {e.seq: 0.5 for e in events}
    candidates = scored(events, relevance)
    favour_informative(candidates, relevance, 0.0, 0.0, marks=InformativeMarks())
    assert [c.score for c in candidates] == [0.5] * len(events)
    assert fact in relevance


def test_a_users_fact_gets_into_smaller_windows_than_without_the_marks(
    engine: ContextEngine,
) -> None:
    """End to end: six chit-chat lines match "hospital" better than the user's one
    statement of where they work; with the marks, that statement gets into the window
    at a smaller budget than without them."""
    session = engine.create_session(user_id="u2")
    session.add_message(
        "user", "I work as a night nurse at the hospital, mostly in the children's ward."
    )
    for i in range(6):
        session.add_message("user", f"lol the hospital again, that hospital show {i} is everywhere")
    for i in range(40):
        session.add_message("assistant", f"unrelated reply number {i} about the weather")

    def smallest_budget_showing_the_fact(config: dict[str, Any]) -> int:
        for budget in range(150, 400, 5):
            window = session.build_context(
                "where does the user work hospital", budget, strategy="semantic", config=config
            )
            if "night nurse" in "\n".join(str(m.get("content")) for m in window.messages):
                return budget
        raise AssertionError("the fact never got in")

    with_marks = smallest_budget_showing_the_fact({})
    without = smallest_budget_showing_the_fact({"semantic": {"fact_weight": 0, "name_weight": 0}})
    assert with_marks < without
