"""Budget allocation: shares, demands, and unused shares flowing to who needs them."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from agentctx.context.budget import allocate
from agentctx.context.config import DEFAULT_BUDGET_SPLIT


def test_sections_within_their_share_get_what_they_need() -> None:
    alloc = allocate(
        1000,
        DEFAULT_BUDGET_SPLIT,
        {"system": 50, "summary": 0, "retrieved": 5000, "recent": 5000, "input": 20},
    )
    assert alloc["system"] == 50 and alloc["input"] == 20 and alloc["summary"] == 0
    # The 930 left are split 10:55 between the two hungry sections.
    assert alloc["retrieved"] + alloc["recent"] <= 930
    assert abs(alloc["retrieved"] / alloc["recent"] - 10 / 55) < 0.01


def test_unused_share_flows_to_the_section_that_needs_it() -> None:
    alloc = allocate(
        1000, DEFAULT_BUDGET_SPLIT, {"system": 0, "summary": 0, "retrieved": 0, "recent": 10_000}
    )
    assert alloc["recent"] == 1000


def test_zero_share_sections_only_get_leftovers() -> None:
    shares = {"system": 0.5, "recent": 0.5, "retrieved": 0.0}
    assert allocate(100, shares, {"system": 80, "recent": 80, "retrieved": 80})["retrieved"] == 0
    assert allocate(100, shares, {"system": 10, "recent": 10, "retrieved": 80})["retrieved"] == 80


@settings(max_examples=300, deadline=None)
@given(
    budget=st.integers(0, 200_000),
    demands=st.dictionaries(
        st.sampled_from(list(DEFAULT_BUDGET_SPLIT)), st.integers(0, 300_000), min_size=1
    ),
)
def test_allocations_never_exceed_the_budget_or_the_demand(
    budget: int, demands: dict[str, int]
) -> None:
    alloc = allocate(budget, DEFAULT_BUDGET_SPLIT, demands)
    assert sum(alloc.values()) <= budget
    for name, given_tokens in alloc.items():
        assert 0 <= given_tokens <= demands[name]
    # Nothing is left on the table while someone still wants more (up to rounding).
    if sum(demands.values()) >= budget:
        assert sum(alloc.values()) >= budget - len(demands)
    else:
        assert alloc == demands
