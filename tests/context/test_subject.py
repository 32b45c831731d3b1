"""What the person a query is about wrote ranks above the other participants' lines that
match as well (``agentctx.context.relevance.favour_subject``)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentctx import ContextEngine
from agentctx.context.pieces import Candidate
from agentctx.context.relevance import favour_subject
from agentctx.context.units import Atom
from agentctx.errors import ConfigError
from agentctx.events import Event
from conftest import append_chat

CHAT = [
    ("Paola", "Kevin, have you ever been to Peru?"),
    ("Kevin", "Yes, I hiked to Machu Picchu with my brother two years ago"),
    ("Paola", "I have only seen Peru in documentaries, it looks so green"),
    ("Kevin", "It is, and the food in Lima was the best I ever had"),
    ("Paola", "My cousin lives in Lima, she loves Peru"),
]


@pytest.fixture
def events(engine: ContextEngine) -> list[Event]:
    session = engine.create_session(user_id="u1")
    append_chat(session, CHAT, user="Paola")
    return list(session.events())


def test_the_subjects_relevant_lines_gain_the_weight(events: list[Event]) -> None:
    seqs = [e.seq for e in events]
    # Every line but the last Kevin line is relevant (a hit or a neighbour).
    relevance = {seqs[0]: 0.9, seqs[1]: 0.3, seqs[2]: 0.8, seqs[4]: 0.7}
    candidates = [Candidate(atom=Atom([e]), score=relevance.get(e.seq, 0.0)) for e in events]

    favour_subject(candidates, relevance, "Kevin", 0.08)

    scores = [c.score for c in candidates]
    assert scores[1] == pytest.approx(0.3 + 0.08)  # Kevin's, relevant: gains
    assert scores[3] == 0.0  # Kevin's, not relevant: authorship alone makes nothing relevant
    assert scores[0] == 0.9 and scores[2] == 0.8 and scores[4] == 0.7  # Paola's: unchanged


def test_a_multi_event_candidate_gains_once_and_only_for_a_relevant_line_of_the_subject(
    events: list[Event],
) -> None:
    seqs = [e.seq for e in events]
    pair = Candidate(atom=Atom(events[2:4]), score=0.5)  # Paola's line, then Kevin's
    favour_subject([pair], {seqs[2]: 0.5}, "Kevin", 0.08)  # only Paola's is relevant
    assert pair.score == 0.5
    favour_subject([pair], {seqs[2]: 0.5, seqs[3]: 0.2}, "Kevin", 0.08)
    assert pair.score == pytest.approx(0.58)


@pytest.fixture
def text_ranked(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """An engine whose search ranks on text alone (no participant rankings), so that
    what the subject's weight does in the window is seen on its own."""
    with ContextEngine(url=db_url, home=home, retrieval={"participant_weight": 0}) as engine:
        yield engine


def test_the_subjects_line_gets_into_smaller_windows_than_without(
    text_ranked: ContextEngine,
) -> None:
    """End to end: Kevin's one line about what he cooked matches the question about him
    less well than Paola's many lines about her cooking dinner (it ranks about tenth).
    Asked about Kevin, his line gets into the window at a smaller budget with the
    subject's weight than without it."""
    session = text_ranked.create_session(user_id="u2")
    chat = [("Paola", f"I cooked pasta for dinner with my sister on day {i}") for i in range(30)]
    chat.insert(12, ("Kevin", "I cooked risotto with my brother yesterday"))
    chat += [("Kevin", f"unrelated note {i} about the office printer") for i in range(10)]
    append_chat(session, chat, user="Paola")
    question = "What did Kevin cook for dinner?"
    assert (
        text_ranked.search_index.retrieve(
            "u2", session.id, question, limit=5, before_seq=None
        ).subject
        == "Kevin"
    )

    def smallest_budget_showing_the_answer(config: dict[str, Any]) -> int:
        for budget in range(150, 1200, 10):
            window = session.build_context(question, budget, strategy="semantic", config=config)
            if "risotto" in "\n".join(str(m.get("content")) for m in window.messages):
                return budget
        raise AssertionError("Kevin's line never got in")

    with_subject = smallest_budget_showing_the_answer({})
    without = smallest_budget_showing_the_answer({"semantic": {"subject_weight": 0}})
    assert with_subject < without


@pytest.mark.parametrize("weight", [-0.1, 1.5])
def test_the_subject_weight_is_validated(engine: ContextEngine, weight: float) -> None:
    session = engine.create_session(user_id="u3")
    session.add_message("user", "hello")
    with pytest.raises(ConfigError, match=r"semantic\.subject_weight"):
        session.build_context("hi", 1000, config={"semantic": {"subject_weight": weight}})
