"""Topic boundaries: TextTiling over messages, lexical and with real embedders."""

from __future__ import annotations

import itertools
import logging
import socket
from collections.abc import Sequence

import pytest
from test_offline_corpus import (
    ONE_TOPIC,
    THREE_TOPICS,
    THREE_TOPICS_SWITCHES,
    ZH_TOPICS,
    ZH_TOPICS_SWITCHES,
)

from agentctx.compaction.offline import Segment, topic_boundaries
from agentctx.errors import InvalidInput
from agentctx.llm import HashingEmbedder, LocalEmbedder, OpenAIEmbedder

EN_SWITCHES = THREE_TOPICS_SWITCHES
ZH_SWITCHES = ZH_TOPICS_SWITCHES


def assert_covers(segments: Sequence[Segment], n: int) -> None:
    assert segments[0].start == 0 and segments[-1].end == n
    for before, after in itertools.pairwise(segments):
        assert before.end == after.start
    assert all(segment.start < segment.end for segment in segments)


def assert_switches(segments: Sequence[Segment], switches: Sequence[int]) -> None:
    starts = [segment.start for segment in segments[1:]]
    assert len(starts) == len(switches), starts
    for found, expected in zip(starts, switches, strict=True):
        assert abs(found - expected) <= 2, (starts, switches)


def words(segment: Segment) -> str:
    return " ".join(segment.keywords).lower()


def test_three_english_topics_are_found() -> None:
    segments = topic_boundaries(THREE_TOPICS)
    assert_covers(segments, len(THREE_TOPICS))
    assert_switches(segments, EN_SWITCHES)
    trip, database, cooking = segments
    assert any(w in words(trip) for w in ("lisbon", "lisboa", "euros", "hotel", "rossio"))
    assert any(w in words(database) for w in ("connection", "pgbouncer", "pool", "postgresql"))
    assert any(w in words(cooking) for w in ("risotto", "mushroom", "stock", "rice"))
    for segment in segments:
        assert segment.keywords and len(segment.keywords) <= 5
        assert segment.title == ", ".join(segment.keywords[:3])
    assert trip.depth == 0.0 and database.depth > 0 and cooking.depth > 0


def test_a_single_topic_stays_one_segment() -> None:
    (segment,) = topic_boundaries(ONE_TOPIC)
    assert (segment.start, segment.end) == (0, len(ONE_TOPIC))
    assert any(w in words(segment) for w in ("order", "index", "query", "items"))


def test_three_chinese_topics_are_found() -> None:
    segments = topic_boundaries(ZH_TOPICS)
    assert_covers(segments, len(ZH_TOPICS))
    assert_switches(segments, ZH_SWITCHES)
    trip, database, cooking = (words(segment) for segment in segments)
    assert "熊猫" in trip or "成都" in trip or "青城山" in trip
    assert "死锁" in database or "库存表" in database or "事务" in database
    assert "红烧肉" in cooking or "五花肉" in cooking


def test_the_hashing_embedder_blends_in() -> None:
    embedder = HashingEmbedder()
    assert_switches(topic_boundaries(THREE_TOPICS, embedder=embedder), EN_SWITCHES)
    assert_switches(topic_boundaries(ZH_TOPICS, embedder=embedder), ZH_SWITCHES)
    # Embeddings alone decide when the lexical weight is zero.
    alone = topic_boundaries(THREE_TOPICS, embedder=embedder, embedding_weight=1.0)
    assert_covers(alone, len(THREE_TOPICS))


@pytest.fixture(scope="module")
def local_embedder(tmp_path_factory: pytest.TempPathFactory) -> LocalEmbedder:
    return LocalEmbedder(models_dir=tmp_path_factory.mktemp("models"))


@pytest.mark.slow
def test_the_local_model_blends_in_and_a_poorly_read_language_does_not_drown_the_terms(
    local_embedder: LocalEmbedder,
) -> None:
    assert_switches(topic_boundaries(THREE_TOPICS, embedder=local_embedder), EN_SWITCHES)
    assert len(topic_boundaries(ONE_TOPIC, embedder=local_embedder)) == 1
    # all-MiniLM-L6-v2 reads English: every Chinese message looks alike to it. Its
    # cohesion is measured above that baseline, so the term cohesion still decides.
    assert_switches(topic_boundaries(ZH_TOPICS, embedder=local_embedder), ZH_SWITCHES)


def test_an_unreachable_embedder_is_left_out(caplog: pytest.LogCaptureFixture) -> None:
    with socket.socket() as probe:  # a local port with nothing listening
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    embedder = OpenAIEmbedder(
        model="text-embedding-3-small",
        base_url=f"http://127.0.0.1:{port}/v1",
        api_key="sk-test",
        max_retries=0,
        timeout=5,
    )
    with caplog.at_level(logging.WARNING, logger="agentctx.compaction.offline.segment"):
        segments = topic_boundaries(THREE_TOPICS, embedder=embedder)
    assert segments == topic_boundaries(THREE_TOPICS)
    assert "without embeddings" in caplog.text


def test_short_segments_merge_into_their_neighbours() -> None:
    # Eight messages per topic: a minimum of eight keeps all three, nine none.
    assert len(topic_boundaries(THREE_TOPICS, min_segment=8)) == 3
    (whole,) = topic_boundaries(THREE_TOPICS, min_segment=9)
    assert (whole.start, whole.end) == (0, 24)
    # Cut the last topic to four messages: it finds its boundary, then merges.
    shorter = THREE_TOPICS[:20]
    assert [(s.start, s.end) for s in topic_boundaries(shorter, min_segment=3)] == [
        (0, 8),
        (8, 16),
        (16, 20),
    ]
    assert [(s.start, s.end) for s in topic_boundaries(shorter, min_segment=5)] == [
        (0, 8),
        (8, 20),
    ]


def test_the_threshold_is_what_keeps_one_topic_whole() -> None:
    # Hearst's cut-off alone is relative: it always finds a valley somewhere.
    assert len(topic_boundaries(ONE_TOPIC, threshold=0.0)) > 1
    assert len(topic_boundaries(ONE_TOPIC)) == 1


def test_the_same_input_gives_the_same_segments() -> None:
    first = topic_boundaries(THREE_TOPICS, embedder=HashingEmbedder())
    assert first == topic_boundaries(THREE_TOPICS, embedder=HashingEmbedder())


@pytest.mark.parametrize(
    "texts",
    [
        [],
        [""],
        ["only one message"],
        ["", "", "", "", "", "", "", ""],
        ["😀", "🎉", "👍", "❤️", "😀", "🎉", "👍", "❤️"],
        ['{"a": 1}', "[1, 2, 3]", "def f(): pass", "SELECT 1;", "x" * 50_000, "。", "...", " "],
    ],
    ids=lambda texts: f"{len(texts)} texts",
)
def test_odd_input_never_raises(texts: list[str]) -> None:
    segments = topic_boundaries(texts, embedder=HashingEmbedder())
    if not texts:
        assert segments == []
    else:
        assert_covers(segments, len(texts))


@pytest.mark.parametrize(
    ("option", "value"),
    [
        ("min_segment", 0),
        ("block", 0),
        ("threshold", 1.5),
        ("threshold", -0.1),
        ("embedding_weight", 2.0),
        ("keyword_count", -1),
    ],
)
def test_bad_options_are_invalid_input(option: str, value: float) -> None:
    with pytest.raises(InvalidInput, match=option):
        topic_boundaries(["a", "b"], **{option: value})  # type: ignore[arg-type]


def test_keywords_per_segment_can_be_switched_off() -> None:
    segments = topic_boundaries(THREE_TOPICS, keyword_count=0)
    assert all(segment.keywords == () and segment.title == "" for segment in segments)
