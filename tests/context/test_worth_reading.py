"""Retrieved hits are read from the log only as far as a window could use them."""

from __future__ import annotations

from agentctx.context.relevance import LINE_OVERHEAD, READ_FACTOR, worth_reading
from agentctx.context.sources import RetrievedHit


def hits(*tokens: int | None) -> list[RetrievedHit]:
    return [RetrievedHit(seq=i + 1, score=1.0 / (i + 1), tokens=t) for i, t in enumerate(tokens)]


def test_hits_past_twice_the_budget_are_not_read() -> None:
    budget = 1000
    line = 96  # each line costs 100 with its overhead
    assert line + LINE_OVERHEAD == 100
    kept = worth_reading(hits(*[line] * 50), budget, minimum=5)
    # The hit that crosses READ_FACTOR x budget is kept (it may still fit), none after it.
    assert len(kept) == READ_FACTOR * budget // 100 + 1
    assert [h.seq for h in kept] == list(range(1, len(kept) + 1))  # best first, in order


def test_at_least_the_minimum_and_everything_when_sizes_are_unknown() -> None:
    assert len(worth_reading(hits(*[5000] * 10), 1000, minimum=4)) == 4
    assert len(worth_reading(hits(10, 10, None, 5000, 5000, 5000), 100, minimum=1)) == 6
    assert len(worth_reading(hits(10, 10, 10), 1000, minimum=60)) == 3
    assert worth_reading([], 1000, minimum=60) == []
