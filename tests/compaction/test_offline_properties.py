"""Properties: any texts and any budget give a summary within budget, never an exception."""
# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentctx.compaction.offline import (
    SourceText,
    extract_keywords,
    extractive_summary,
    split_sentences,
    topic_boundaries,
)
from agentctx.tokens import EstimateCounter, TiktokenCounter

ESTIMATE = EstimateCounter()
EXACT = TiktokenCounter("o200k_base")

FRAGMENTS = [
    "We decided to book the 7:45 flight on May 3.",
    "The deploy failed with error 137.",
    "Thanks!",
    "我们决定明天出发。",
    "预算是3000元！",
    "数据库连接池满了？",
    '{"status": "error", "code": 500}',
    "```python\nprint('x. y')\n```",
    "- a bullet\n- another bullet",
    "e.g. Dr. Smith paid 3.14 dollars. Then left...",
    "😀🎉 ok",
    "\n\n",
    "",
]
# Letters, CJK, kana, digits, punctuation of both kinds, whitespace, emoji.
ALPHABET = st.one_of(
    st.sampled_from(list("abcXYZ019 .,!?;:\"'()[]{}-_\n\t。！？，、「」…")),
    st.characters(min_codepoint=0x4E00, max_codepoint=0x4E80),
    st.characters(min_codepoint=0x3040, max_codepoint=0x30FF),
    st.characters(min_codepoint=0x1F600, max_codepoint=0x1F64F),
    st.characters(blacklist_categories=("Cs",)),
)
TEXT = st.one_of(
    st.sampled_from(FRAGMENTS),
    st.text(ALPHABET, max_size=200),
    st.lists(st.sampled_from(FRAGMENTS), max_size=6).map(" ".join),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    texts=st.lists(TEXT, max_size=12),
    budget=st.integers(min_value=1, max_value=2000),
    previous=st.one_of(st.none(), TEXT),
)
def test_any_texts_fit_any_budget(texts: list[str], budget: int, previous: str | None) -> None:
    for counter in (ESTIMATE, EXACT):
        summary = extractive_summary(
            texts, budget_tokens=budget, counter=counter, previous=previous
        )
        assert summary.tokens == counter.count(summary.text) <= budget
        for sentence in summary.sentences:
            assert sentence.text in summary.text
            if sentence.source is not None and not sentence.cut:
                source = texts[sentence.source]
                assert 0 <= sentence.start < sentence.end <= len(source)


@settings(max_examples=100, deadline=None)
@given(texts=st.lists(TEXT, max_size=16), block=st.integers(1, 5), minimum=st.integers(1, 5))
def test_any_texts_segment_and_yield_keywords(texts: list[str], block: int, minimum: int) -> None:
    segments = topic_boundaries(texts, block=block, min_segment=minimum)
    edges = [0, *[s.end for s in segments]] if segments else [0]
    assert [s.start for s in segments] == edges[:-1]
    assert edges[-1] == len(texts)
    if len(segments) > 1:
        assert all(s.end - s.start >= minimum for s in segments)
    keywords = extract_keywords(texts, k=5)
    assert len(keywords) <= 5
    assert all(0 < keyword.score <= 1 for keyword in keywords)


@settings(max_examples=200, deadline=None)
@given(text=TEXT, source=st.integers(-5, 10**9))
def test_any_text_splits_into_spans_of_itself(text: str, source: int) -> None:
    for sentence in split_sentences(text, source):
        assert sentence.source == source
        assert 0 <= sentence.start < sentence.end <= len(text)
        if sentence.kind == "code":
            assert text[sentence.start : sentence.end] == sentence.text
        else:
            assert " ".join(text[sentence.start : sentence.end].split()) == sentence.text
    summary = extractive_summary([SourceText(text, source)], budget_tokens=30, counter=ESTIMATE)
    assert all(s.source in (source, None) for s in summary.sentences)
