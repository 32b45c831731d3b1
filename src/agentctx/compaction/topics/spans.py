"""Topic spans over a batch of messages: validating, folding, snapping, merging.

A batch is the run of messages one identification call sees, numbered from 0. A
span is ``start`` (inclusive) to ``end`` (exclusive); ``sources`` are the indices of
the proposed topics (the model's, or the offline segments) it was made of. Spans
cover ``0..covered`` without gaps; messages after ``covered`` stay unarchived.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Span:
    """Messages ``start`` to ``end`` (exclusive), made of proposals ``sources``."""

    start: int
    end: int
    sources: tuple[int, ...]

    def __len__(self) -> int:
        return self.end - self.start


class SpansInvalid(ValueError):
    """Proposed topic indices that cannot be used; the message says why."""


def from_indices(indices: Sequence[tuple[int, int]], n: int) -> list[Span]:
    """Spans from proposed inclusive ``(start, end)`` index pairs over ``n`` messages.

    Every pair must lie within ``0..n-1`` with ``start <= end``, in order and not
    overlapping; otherwise :class:`SpansInvalid`. Gaps are folded into the topic
    before them (a gap at the start into the first topic), so the spans cover
    ``0..`` the last proposed end without a hole; what comes after it stays
    unarchived, as the model chose.
    """
    if not indices:
        raise SpansInvalid("no topics")
    previous_end = -1
    for number, (start, end) in enumerate(indices):
        if not 0 <= start < n or not 0 <= end < n:
            raise SpansInvalid(
                f"topic {number}: indices {start}..{end} are outside 0..{n - 1} "
                f"(there are {n} messages)"
            )
        if start > end:
            raise SpansInvalid(f"topic {number}: start_index {start} is after end_index {end}")
        if start <= previous_end:
            raise SpansInvalid(
                f"topic {number}: starts at {start}, inside or before the previous topic "
                f"(which ends at {previous_end}); topics must be in order and not overlap"
            )
        previous_end = end
    spans = []
    for number, (start, _end) in enumerate(indices):
        span_start = 0 if number == 0 else start
        span_end = indices[number + 1][0] if number + 1 < len(indices) else indices[-1][1] + 1
        spans.append(Span(span_start, span_end, (number,)))
    return spans


def _merge(a: Span, b: Span) -> Span:
    return Span(a.start, b.end, a.sources + b.sources)


def snap(spans: Sequence[Span], cuts: Sequence[int]) -> list[Span]:
    """Move every span boundary to the nearest allowed cut (ties: the later one).

    ``cuts`` are the message indices a topic may start at (the first message of each
    tool-call group, so a call and its result are never split), plus the batch end.
    A span left empty is folded into its neighbour.
    """
    allowed = sorted(set(cuts))
    if not spans or not allowed:
        return list(spans)

    def nearest(boundary: int) -> int:
        return min(allowed, key=lambda cut: (abs(cut - boundary), -cut))

    ends = [nearest(span.end) for span in spans]
    result: list[Span] = []
    start = 0
    pending: tuple[int, ...] = ()
    for span, snapped in zip(spans, ends, strict=True):
        end = max(snapped, start)
        sources = pending + span.sources
        if end == start:
            pending = sources  # emptied: its proposals join the next span
            continue
        result.append(Span(start, end, sources))
        start, pending = end, ()
    if pending and result:
        last = result[-1]
        result[-1] = Span(last.start, last.end, last.sources + pending)
    return result


def merge_short(spans: Sequence[Span], min_length: int) -> list[Span]:
    """Merge spans shorter than ``min_length`` into a neighbour until none is (or one is left).

    The shortest span goes first, into its shorter neighbour (the earlier one on a
    tie), so short runs gather into the topic they most likely continue.
    """
    spans = list(spans)
    while len(spans) > 1:
        shortest = min(range(len(spans)), key=lambda i: (len(spans[i]), i))
        if len(spans[shortest]) >= min_length:
            break
        if shortest == 0:
            into = 1
        elif shortest == len(spans) - 1:
            into = shortest - 1
        else:
            before, after = spans[shortest - 1], spans[shortest + 1]
            into = shortest - 1 if len(before) <= len(after) else shortest + 1
        low, high = sorted((shortest, into))
        spans[low : high + 1] = [_merge(spans[low], spans[high])]
    return spans
