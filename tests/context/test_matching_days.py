"""Retrieved events gain from their day's match with the query (``favour_matching_days``).

What a question asks about is mostly told on one day, over several lines: a day with
several good hits outranks a stray better hit on a day with nothing else on it."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from agentctx import ContextEngine
from agentctx.context.pieces import Candidate
from agentctx.context.relevance import DAY_HITS, favour_matching_days
from agentctx.context.units import Atom
from agentctx.events import Event

DAY1 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


@pytest.fixture
def events(engine: ContextEngine) -> list[Event]:
    """Seven messages: three on 1 March, two on 2 March, two on 3 March."""
    session = engine.create_session(user_id="u1")
    for day, count in ((0, 3), (1, 2), (2, 2)):
        for i in range(count):
            when = DAY1 + timedelta(days=day, minutes=i)
            session.add_message("user", f"day {day} line {i}", ts=when)
    return list(session.events())


def scored(events: list[Event], relevance: dict[int, float]) -> list[Candidate]:
    return [Candidate(atom=Atom([e]), score=relevance.get(e.seq, 0.0)) for e in events]


def test_a_day_of_several_good_hits_outranks_a_lone_better_hit(events: list[Event]) -> None:
    seqs = [e.seq for e in events]
    hits = {seqs[0]: 0.8, seqs[1]: 0.8, seqs[2]: 0.8, seqs[3]: 0.9}
    relevance = {**hits, seqs[4]: 0.27}  # seqs[4]: a neighbour of the lone hit
    candidates = scored(events, relevance)
    assert candidates[3].score > candidates[0].score  # before: the lone hit first

    favour_matching_days(candidates, hits, relevance, 0.4)

    scores = {c.atom.first_seq: c.score for c in candidates}
    # Day 1 sums 2.4 (the best day): each of its hits gains the whole weight.
    assert scores[seqs[0]] == pytest.approx(0.8 + 0.4)
    # Day 2 sums 0.9, 0.375 of day 1: its hit and its neighbour gain that share.
    assert scores[seqs[3]] == pytest.approx(0.9 + 0.4 * 0.9 / 2.4)
    assert scores[seqs[4]] == pytest.approx(0.27 + 0.4 * 0.9 / 2.4)
    assert scores[seqs[0]] > scores[seqs[3]]
    # Day 3 holds nothing relevant: its events gain nothing.
    assert scores[seqs[5]] == scores[seqs[6]] == 0.0


def test_only_a_days_best_hits_count(events: list[Event]) -> None:
    seqs = [e.seq for e in events]
    # Day 1: three hits of 0.5 plus many weak ones cannot beat day 2's two strong ones.
    assert DAY_HITS == 3
    hits = {seqs[0]: 0.5, seqs[1]: 0.5, seqs[2]: 0.5, seqs[3]: 1.0, seqs[4]: 0.9}
    candidates = scored(events, hits)

    favour_matching_days(candidates, hits, dict(hits), 1.0)

    scores = {c.atom.first_seq: c.score for c in candidates}
    assert scores[seqs[3]] == pytest.approx(1.0 + 1.0 * 1.9 / 1.9)
    assert scores[seqs[0]] == pytest.approx(0.5 + 1.0 * 1.5 / 1.9)


def test_without_hits_nothing_changes(events: list[Event]) -> None:
    candidates = scored(events, {})
    favour_matching_days(candidates, {}, {}, 0.4)
    assert [c.score for c in candidates] == [0.0] * len(events)
