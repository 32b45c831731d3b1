"""Splitting a token budget among sections that may not need their whole share.

Each section has a share (seed 002: system 20%, summary 10%, retrieved 10%, recent
55%, input 5%) and a demand (the tokens it would use if it could). A section that
needs less than its share gets what it needs; the rest is split again among the
sections that still want more, in proportion to their shares, until nothing is left
to give. Sections with a share of zero get only what nobody else wanted.
"""

from __future__ import annotations

from collections.abc import Mapping


def allocate(
    budget: int, shares: Mapping[str, float], demands: Mapping[str, int]
) -> dict[str, int]:
    """Tokens per section; the allocations never add up to more than ``budget``."""
    alloc = dict.fromkeys(demands, 0)
    remaining = max(0, budget)
    wanting = {name for name, demand in demands.items() if demand > 0}
    while remaining > 0 and wanting:
        weights = {name: max(0.0, shares.get(name, 0.0)) for name in wanting}
        total = sum(weights.values())
        if total <= 0:
            # Only zero-share sections still want tokens: split what is left evenly.
            weights = dict.fromkeys(wanting, 1.0)
            total = float(len(wanting))
        satisfied = {
            name
            for name in wanting
            if demands[name] - alloc[name] <= remaining * weights[name] / total
        }
        if satisfied:
            for name in sorted(satisfied):
                give = demands[name] - alloc[name]
                alloc[name] += give
                remaining -= give
            wanting -= satisfied
            continue
        # Nobody is satisfied by a fair share: everyone gets exactly that (floored).
        given = 0
        for name in sorted(wanting):
            give = int(remaining * weights[name] / total)
            alloc[name] += give
            given += give
        # Flooring left a few tokens: they go, one each, to the largest shares.
        leftover = remaining - given
        for name in sorted(wanting, key=lambda n: (-weights[n], n)):
            if leftover <= 0:
                break
            if alloc[name] < demands[name]:
                alloc[name] += 1
                leftover -= 1
        break
    return alloc
