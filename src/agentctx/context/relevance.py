"""How search hits become the relevance of older events: which hits are read from the
log (:func:`worth_reading`), how many get their neighbours, how much a day that
matches the query lifts its events (:func:`favour_matching_days`), and how much the
person the query is about lifts what they wrote (:func:`favour_subject`). The
search for older events (:mod:`agentctx.context.older`) scores candidates with these for
``semantic``."""

from __future__ import annotations

import heapq
from datetime import date

from agentctx.context.pieces import Candidate
from agentctx.context.sources import RetrievedHit

LINE_OVERHEAD = 4
"""Tokens a block line adds to its event's text: the author, the newline, the day's share."""


def favour_matching_days(
    candidates: list[Candidate],
    hit_relevance: dict[int, float],
    relevance: dict[int, float],
    weight: float,
) -> None:
    """Raise each relevant candidate's score by how well its day matches the query.

    What a question asks about is mostly told on one or two days, over several lines,
    and the lines around the best hit of such a day outrank stray good matches from
    days with nothing else on the subject. A day's match is the summed relevance of its
    ``DAY_HITS`` best hits, as a share of the best day's; a candidate with any
    relevance (hit or neighbour) gains ``weight`` times its day's. It also packs lines
    under fewer day headings. On the development chats this found 0.015 more evidence
    at 1k tokens and 0.005 more at 2k (weights 0.3-0.5 within 0.002 of each other).
    """
    day_of: dict[int, date] = {}
    for candidate in candidates:
        for event in candidate.atom.events:
            day_of[event.seq] = event.ts.date()
    per_day: dict[date, list[float]] = {}
    for seq, score in hit_relevance.items():
        day = day_of.get(seq)
        if day is not None:
            per_day.setdefault(day, []).append(score)
    if not per_day:
        return
    matches = {day: sum(heapq.nlargest(DAY_HITS, scores)) for day, scores in per_day.items()}
    best = max(matches.values()) or 1.0
    for candidate in candidates:
        events = candidate.atom.events
        if any(e.seq in relevance for e in events):
            candidate.score += weight * matches.get(events[0].ts.date(), 0.0) / best


DAY_HITS = 3
"""Hits summed into a day's match (see :func:`favour_matching_days`)."""


def favour_subject(
    candidates: list[Candidate], relevance: dict[int, float], subject: str, weight: float
) -> None:
    """Raise by ``weight`` each candidate holding a relevant event written by ``subject``,
    the session author the query is about.

    A question about a person ("What are Kate's hobbies?") is mostly answered by what
    that person wrote, while the other participant's lines around it (questions to them,
    replies) match the query about as well. Only events with relevance (hits and their
    neighbours) gain: authorship orders what matches, it does not make the unrelated
    relevant. On the development chats this found 0.005 more evidence at 1k tokens and
    0.004 more at 2k (weights 0.05-0.12 all gained at 1k, most at 0.08; with heavier
    weights 2k goes on gaining while 1k falls back).
    """
    for candidate in candidates:
        if any(e.seq in relevance and e.author == subject for e in candidate.atom.events):
            candidate.score += weight


def worth_reading(hits: list[RetrievedHit], budget: int, *, minimum: int) -> list[RetrievedHit]:
    """The best hits (at least ``minimum``) whose lines could fill ``READ_FACTOR`` times the
    budget; every hit when the retriever does not say what they cost.

    Each hit kept is read whole from the log (hundreds per window), and a window never
    holds more than its budget: hits far past its size are only read to be dropped.
    """
    total = 0
    for index, hit in enumerate(hits):
        if hit.tokens is None:
            return hits
        total += hit.tokens + LINE_OVERHEAD
        if total > READ_FACTOR * budget and index + 1 >= minimum:
            return hits[: index + 1]
    return hits


NEIGHBOURED_HITS = 60
"""Hits whose neighbours are considered too, the best first. A neighbour scores a
fraction (``neighbour_weight``) of its hit's relevance: past the first sixty hits that
seldom wins it a place, and on the development chats considering them changed evidence
recall by at most 0.003 at 2k-8k and cost about a tenth of an 8k window's time."""

READ_FACTOR = 2
"""Retrieved lines read per token of budget (see :func:`worth_reading`). What lifts an
event beyond its rank in the search (its day's match, its author being whom the query is
about, a statement of fact) can take a hit from past the first budget's worth of lines
into the window, so twice the budget is read. On the development chats this found
0.001 more evidence at 1k-4k and 0.004 more at 8k than reading one budget's worth, for
about 3 ms more at p95; three times the budget found no more."""

TOKENS_PER_CANDIDATE = 12
"""Search candidates asked for per this many tokens of budget (a short line costs ~12)."""
