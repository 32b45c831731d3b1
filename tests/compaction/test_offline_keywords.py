"""Keywords: English words and phrases, Chinese n-grams, stopwords, rarity, determinism."""
# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import json

import pytest
from test_offline_corpus import THREE_TOPICS, ZH_TOPICS

from agentctx.compaction.offline import extract_keywords
from agentctx.compaction.offline.keywords import keywords_of_spans
from agentctx.errors import InvalidInput


def texts_of(keywords: list) -> list[str]:  # type: ignore[type-arg]
    return [keyword.text for keyword in keywords]


def test_each_topic_yields_its_salient_words() -> None:
    trip = " ".join(texts_of(extract_keywords(THREE_TOPICS[:8], k=8))).lower()
    database = " ".join(texts_of(extract_keywords(THREE_TOPICS[8:16], k=8))).lower()
    cooking = " ".join(texts_of(extract_keywords(THREE_TOPICS[16:], k=8))).lower()
    assert "euros" in trip and "hotel" in trip
    assert "connection" in database and "pgbouncer" in database and "pool" in database
    assert "stock" in cooking and "butter" in cooking and "mushrooms" in cooking
    for words in (trip, database, cooking):
        for filler in ("thanks", "great", "haha", "perfect", "should", "the "):
            assert filler not in words


def test_repeated_phrases_become_key_phrases() -> None:
    text = (
        "The connection pool is exhausted. We resized the connection pool to 40. Connection "
        "errors dropped, and the pool now holds 12 idle connections. Thanks, okay, great!"
    )
    found = extract_keywords(text, k=5)
    assert found[0].text == "connection pool" and found[0].count == 2
    assert found[0].score == 1.0
    assert [k.score for k in found] == sorted((k.score for k in found), reverse=True)
    words = texts_of(found)
    assert not {"thanks", "okay", "great", "the", "40", "12"} & set(words)


def test_surface_forms_keep_their_case() -> None:
    found = texts_of(
        extract_keywords(
            [
                "PostgreSQL rejected the login.",
                "Restart PostgreSQL and check the PgBouncer logs.",
                "PgBouncer reconnects to PostgreSQL now.",
            ],
            k=3,
        )
    )
    assert "PostgreSQL" in found and "PgBouncer" in found


def test_a_word_mostly_inside_a_phrase_gives_way_to_it() -> None:
    texts = [
        "Browns Downtown has rooms for 130 euros.",
        "We booked Browns Downtown for four nights.",
        "Browns Downtown is near the metro.",
    ]
    found = texts_of(extract_keywords(texts, k=5))
    assert found[0] == "Browns Downtown"
    assert "Browns" not in found and "Downtown" not in found


def test_chinese_words_come_from_repetition_without_a_dictionary() -> None:
    text = (
        "我们的数据库连接池经常被占满。数据库连接池的大小是二十。"
        "调大数据库连接池以后，数据库的响应变快了。"
    )
    found = extract_keywords(text, k=5)
    assert found[0].text == "数据库连接池" and found[0].count == 3
    for keyword in found:
        assert keyword.text[0] not in "的了是我" and keyword.text[-1] not in "的了是"
        assert keyword.text not in {"我们", "二十", "以后"}


def test_chinese_topics_yield_their_salient_words() -> None:
    trip = texts_of(extract_keywords(ZH_TOPICS[:6], k=6))
    database = texts_of(extract_keywords(ZH_TOPICS[6:12], k=6))
    cooking = texts_of(extract_keywords(ZH_TOPICS[12:], k=6))
    assert any("熊猫" in k for k in trip) and "青城山" in trip
    assert "库存表" in database and "事务" in database
    assert "五花肉" in cooking and "冰糖" in cooking


def test_background_favours_what_sets_a_text_apart() -> None:
    part = [
        "The project streams its events through Kafka.",
        "Kafka keeps the project events for a week; the project grows fast.",
        "The project needs Kafka retention tuning.",
    ]
    others = ["The project budget was approved.", "The project launch is in June."]
    alone = texts_of(extract_keywords(part, k=5))
    against = texts_of(extract_keywords(part, k=5, background=["\n".join(part), *others]))
    # Within the part "project" is the most frequent word; against the other parts,
    # which all speak of the project, Kafka is what this part is about.
    assert alone[0] == "project"
    assert against[0] == "Kafka"
    assert against.index("project") > alone.index("project")


def test_the_order_is_deterministic() -> None:
    for texts in (THREE_TOPICS, ZH_TOPICS):
        assert extract_keywords(texts, k=15) == extract_keywords(list(texts), k=15)


def test_k_bounds_the_result() -> None:
    assert extract_keywords(THREE_TOPICS, k=0) == []
    assert len(extract_keywords(THREE_TOPICS, k=3)) == 3
    assert len(extract_keywords(THREE_TOPICS, k=10)) == 10
    with pytest.raises(InvalidInput, match="k must be"):
        extract_keywords(THREE_TOPICS, k=-1)


@pytest.mark.parametrize(
    "texts",
    [
        [],
        "",
        ["", "   ", "\n"],
        ["😀🎉", "👍"],
        [json.dumps({"status": "error", "items": list(range(200)), "message": "disk full"})],
        ["def handle(event):\n    return process(event, retries=3)\n" * 20],
        ["1 2 3 4 5 6 7 8 9 10", "2024-05-03 10:30"],
        ["a" * 200_000],
        ["的了是在和也就都" * 100],
    ],
    ids=lambda texts: repr(texts)[:20],
)
def test_odd_input_never_raises(texts: list[str] | str) -> None:
    found = extract_keywords(texts, k=5)
    assert len(found) <= 5
    for keyword in found:
        assert keyword.text.strip() and 0 < keyword.score <= 1.0 and keyword.count >= 1
        assert not keyword.text.isdigit()


def test_span_keywords_match_keywords_against_the_spans() -> None:
    spans = [(0, 8), (8, 16), (16, 24)]
    joined = ["\n".join(THREE_TOPICS[start:end]) for start, end in spans]
    expected = [
        extract_keywords(THREE_TOPICS[start:end], k=6, background=joined) for start, end in spans
    ]
    assert keywords_of_spans(THREE_TOPICS, spans, k=6) == expected
    # One span: the messages themselves are the documents.
    assert keywords_of_spans(ZH_TOPICS, [(0, 18)], k=4) == [extract_keywords(ZH_TOPICS, k=4)]
