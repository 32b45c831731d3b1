"""Topic archiving without a database: spans, settings and presets, self-introductions."""

# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from agentctx.compaction.topics import TopicArchiveConfig
from agentctx.compaction.topics.profile import introductions, locate
from agentctx.compaction.topics.spans import Span, SpansInvalid, from_indices, merge_short, snap


def bounds(spans: list[Span]) -> list[tuple[int, int]]:
    return [(s.start, s.end) for s in spans]


def test_gaps_fold_into_the_topic_before_and_the_tail_stays_out() -> None:
    spans = from_indices([(2, 9), (15, 29), (30, 44)], 50)
    assert bounds(spans) == [(0, 15), (15, 30), (30, 45)]
    assert [s.sources for s in spans] == [(0,), (1,), (2,)]


@pytest.mark.parametrize(
    ("indices", "reason"),
    [
        ([(0, 50)], "outside 0..49"),
        ([(-1, 10)], "outside 0..49"),
        ([(10, 5)], "after end_index"),
        ([(0, 20), (20, 30)], "must be in order and not overlap"),
        ([(20, 30), (0, 10)], "must be in order and not overlap"),
        ([], "no topics"),
    ],
)
def test_unusable_indices_are_rejected_with_the_reason(
    indices: list[tuple[int, int]], reason: str
) -> None:
    with pytest.raises(SpansInvalid, match=reason):
        from_indices(indices, 50)


def test_snapping_moves_boundaries_to_allowed_cuts_and_folds_empty_spans() -> None:
    spans = [Span(0, 15, (0,)), Span(15, 30, (1,))]
    # Messages 14-15 are a call and its result: a topic may start at 14 or 16.
    cuts = [*range(14), 14, *range(16, 31)]
    assert bounds(snap(spans, cuts)) == [(0, 16), (16, 30)]
    # A span left empty joins the next one, its proposal with it.
    snapped = snap([Span(0, 1, (0,)), Span(1, 2, (1,)), Span(2, 10, (2,))], [0, 5, 10])
    assert bounds(snapped) == [(0, 10)] and snapped[0].sources == (0, 1, 2)


def test_short_spans_merge_into_the_shorter_neighbour() -> None:
    spans = from_indices([(0, 2), (3, 24), (25, 28), (29, 49)], 50)
    merged = merge_short(spans, 10)
    assert bounds(merged) == [(0, 25), (25, 50)]
    assert [m.sources for m in merged] == [(0, 1), (2, 3)]
    assert bounds(merge_short([Span(0, 4, (0,))], 10)) == [(0, 4)]  # one is left alone
    assert bounds(merge_short(from_indices([(0, 9), (10, 19)], 20), 10)) == [(0, 10), (10, 20)]


def test_settings_validate_with_clear_errors() -> None:
    config = TopicArchiveConfig()
    assert (config.enabled, config.context_threshold, config.min_archive_messages) == (
        False,
        0.70,
        20,
    )
    assert (config.min_topic_messages, config.keep_recent_messages, config.context_limit) == (
        10,
        10,
        32_000,
    )
    cases: list[tuple[dict[str, Any], str]] = [
        ({"context_threshold": 0}, "context_threshold"),
        ({"context_threshold": 1.5}, "context_threshold"),
        ({"min_archive_messages": 0}, "min_archive_messages"),
        ({"keep_recent_messages": -1}, "keep_recent_messages"),
        ({"summary_tokens": 4}, "summary_tokens"),
        ({"thresold": 0.5}, "thresold"),
        ({"min_topic_messages": 50, "max_batch_messages": 20}, "must not exceed"),
    ]
    for bad, word in cases:
        with pytest.raises(ValidationError, match=word):
            TopicArchiveConfig(**bad)
    with pytest.raises(ValidationError):
        config.enabled = True  # type: ignore[misc]  # frozen


@pytest.mark.parametrize(
    ("context", "threshold", "minimum"),
    [(8_000, 0.60, 10), (32_000, 0.60, 10), (64_000, 0.70, 15), (128_000, 0.70, 20)],
)
def test_presets_follow_the_design(context: int, threshold: float, minimum: int) -> None:
    preset = TopicArchiveConfig.preset_for(context)
    assert preset.enabled and preset.context_limit == context
    assert (preset.context_threshold, preset.min_archive_messages) == (threshold, minimum)
    assert TopicArchiveConfig.preset_for(context, keep_recent_messages=4).keep_recent_messages == 4


def test_self_introductions_are_read_and_guesses_are_not() -> None:
    found = introductions(
        [
            "Hi, my name is Maya Chen and I work as a data engineer at Acme.",
            "I live in Lisbon, by the way.",
            "你好，我叫李雷。",
        ]
    )
    assert found == {
        "preferred_name": ("李雷", 2),
        "occupation": ("data engineer", 0),
        "location": ("Lisbon", 1),
    }
    assert introductions(["我是一名前端开发者，住在杭州。"]) == {"occupation": ("前端开发者", 0)}
    # Ordinary sentences are not introductions.
    assert (
        introductions(["I am a bit tired.", "my name is not important", "我在想这个问题。"]) == {}
    )
    assert locate("maya", ["hello", "I'm Maya.", "bye"]) == 1
    assert locate("Bob", ["hello"]) is None and locate(" ", ["x"]) is None
