"""Sentence splitting: English and Chinese ends, abbreviations, lists, code, spans."""
# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import pytest

from agentctx.compaction.offline import SourceText, split_sentences
from agentctx.compaction.offline.sentences import sentences_of


def texts(text: str) -> list[str]:
    return [sentence.text for sentence in split_sentences(text)]


def test_english_ends_respect_abbreviations_decimals_and_urls() -> None:
    text = (
        "Hello there. We moved to PostgreSQL 16.2 on Friday! Is it faster? "
        "Dr. Smith said e.g. the U.S. team agrees. See https://example.com/docs/v1.2/index.html. "
        "J. R. R. Tolkien wrote it. Prices rose approx. five percent, i.e. a lot. It's 3.14 etc. "
        "Then we stopped."
    )
    assert texts(text) == [
        "Hello there.",
        "We moved to PostgreSQL 16.2 on Friday!",
        "Is it faster?",
        "Dr. Smith said e.g. the U.S. team agrees.",
        "See https://example.com/docs/v1.2/index.html.",
        "J. R. R. Tolkien wrote it.",
        "Prices rose approx. five percent, i.e. a lot.",
        "It's 3.14 etc.",
        "Then we stopped.",
    ]


def test_ellipses_and_closing_quotes() -> None:
    text = 'He said "we ship today." Then silence... and more waiting. Wait… What?! (Really.) Ok.'
    assert texts(text) == [
        'He said "we ship today."',
        "Then silence... and more waiting.",
        "Wait…",
        "What?!",
        "(Really.)",
        "Ok.",
    ]


def test_chinese_ends_need_no_space() -> None:
    text = (
        "我们决定明天出发。预算是3000元！你觉得怎么样？好的!下一步是订酒店。版本2.0已经发布“了”。"
    )
    assert texts(text) == [
        "我们决定明天出发。",
        "预算是3000元！",
        "你觉得怎么样？",
        "好的!",
        "下一步是订酒店。",
        "版本2.0已经发布“了”。",
    ]


def test_lines_bullets_and_wrapped_paragraphs() -> None:
    text = (
        "Plan for Monday:\n"
        "- book flights on May 3\n"
        "* reserve the hotel\n"
        "1. pack the bags\n"
        "2) leave at 10:30 a.m. sharp\n"
        "## Notes\n"
        "\n"
        "This paragraph is hard\n"
        "wrapped over two lines. A new sentence\n"
        "Next line starts upper case"
    )
    assert texts(text) == [
        "Plan for Monday:",
        "book flights on May 3",
        "reserve the hotel",
        "pack the bags",
        "leave at 10:30 a.m. sharp",
        "Notes",
        "This paragraph is hard wrapped over two lines.",
        "A new sentence",
        "Next line starts upper case",
    ]


def test_code_and_json_stay_whole() -> None:
    text = (
        '{"status": "error", "detail": "Timeout. Retry later.", "took": 30.5}\n'
        "The call failed. Here is the code:\n"
        "```python\n"
        "def f(x):\n"
        "    return x. y  # not prose\n"
        "```\n"
        "Fixed it."
    )
    found = split_sentences(text)
    assert [(s.text, s.kind) for s in found] == [
        ('{"status": "error", "detail": "Timeout. Retry later.", "took": 30.5}', "code"),
        ("The call failed.", "prose"),
        ("Here is the code:", "prose"),
        ("```python\ndef f(x):\n    return x. y  # not prose\n```", "code"),
        ("Fixed it.", "prose"),
    ]


def test_spans_point_into_the_source_and_positions_count_per_source() -> None:
    messages = [
        SourceText("First one. Second one!", source=41),
        SourceText("  \n", source=42),
        SourceText("第一句。第二句？\n- a bullet point", source=43),
    ]
    found = sentences_of(messages)
    assert [(s.source, s.position, s.text) for s in found] == [
        (41, 0, "First one."),
        (41, 1, "Second one!"),
        (43, 0, "第一句。"),
        (43, 1, "第二句？"),
        (43, 2, "a bullet point"),
    ]
    by_source = {m.source: m.text for m in messages}
    for sentence in found:
        assert by_source[sentence.source][sentence.start : sentence.end] == sentence.text
    # Plain strings get their position as source.
    assert [s.source for s in sentences_of(["One.", "Two. Three."])] == [0, 1, 1]


def test_wrapped_prose_collapses_whitespace_but_keeps_the_span() -> None:
    text = "line one runs\n   on here. Done."
    first, second = split_sentences(text)
    assert first.text == "line one runs on here."
    assert text[first.start : first.end] == "line one runs\n   on here."
    assert second.text == "Done."


@pytest.mark.parametrize(
    "text",
    ["", "   \n\t ", "----", "...", "😀🎉", "```", "```\nunclosed fence", "\r\n\r\n", "。。。"],
)
def test_odd_input_never_raises(text: str) -> None:
    found = split_sentences(text)
    for sentence in found:
        assert sentence.text.strip()
        assert 0 <= sentence.start < sentence.end <= len(text)


def test_an_unclosed_fence_runs_to_the_end() -> None:
    found = split_sentences("Intro.\n```\nx = 1\ny = 2")
    assert [(s.text, s.kind) for s in found] == [
        ("Intro.", "prose"),
        ("```\nx = 1\ny = 2", "code"),
    ]
