"""Extractive summaries: budget by exact and estimated counts, content, provenance, merging."""
# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest
from test_offline_corpus import THREE_TOPICS, ZH_TOPICS

from agentctx.compaction.offline import (
    ExtractiveSummary,
    SourceText,
    extractive_summary,
    graph,
    split_sentences,
    summarize,
)
from agentctx.compaction.offline.vectors import cosine_matrix
from agentctx.errors import InvalidInput
from agentctx.retrieval.terms import document_terms
from agentctx.tokens import EstimateCounter, TiktokenCounter, TokenCounter

COUNTERS: list[TokenCounter] = [
    EstimateCounter(),
    TiktokenCounter("o200k_base"),
    TiktokenCounter("cl100k_base"),
]

# A team chat: a few facts and decisions among a lot of chit-chat.
STANDUP = [
    "Morning everyone!",
    "Hi! Good morning :)",
    "Haha, I just got my coffee.",
    "Quick update: the nightly export failed with a timeout at 02:14 because the reports "
    "table grew to 38 GB.",
    "Oh no. Thanks for checking.",
    "No problem!",
    "We decided to move the export to the read replica and raise the timeout to 900 seconds.",
    "Sounds good.",
    "Cool, cool.",
    "Also, the release is moved to Thursday, March 14, because QA needs two more days.",
    "Great, thanks!",
    "lol ok",
    "The invoice total for Acme is 12,480 euros, due on April 2.",
    "Nice!",
    "Have a good day all.",
]
KEY_FACTS = (
    "the nightly export failed with a timeout",
    "We decided to move the export to the read replica",
    "the release is moved to Thursday, March 14",
    "The invoice total for Acme is 12,480 euros",
)
CHIT_CHAT = ("Morning everyone", "coffee", "No problem", "Sounds good", "Cool, cool", "lol ok")


@pytest.mark.parametrize("counter", COUNTERS, ids=lambda c: c.name)
@pytest.mark.parametrize("budget", [1, 5, 20, 60, 150, 400, 5000])
def test_the_budget_holds_by_the_given_counter(counter: TokenCounter, budget: int) -> None:
    for texts in (THREE_TOPICS, ZH_TOPICS):
        summary = extractive_summary(texts, budget_tokens=budget, counter=counter)
        assert summary.tokens == counter.count(summary.text) <= budget
        assert summary.counter == counter.name
        if budget >= 20:
            assert summary.sentences


def test_a_large_budget_keeps_everything_in_order() -> None:
    counter = TiktokenCounter()
    summary = extractive_summary(THREE_TOPICS, budget_tokens=100_000, counter=counter)
    # Every informative sentence fits; only filler under the score floor is left out.
    kept = [s.text for s in summary.sentences]
    assert "We decided to book the 7:45 flight to Lisbon on May 3 and fly back on May 8." in kept
    assert "Haha, great." not in kept
    positions = [(s.source, s.start) for s in summary.sentences]
    assert positions == sorted(positions)


def test_decisions_and_numbers_win_over_chit_chat() -> None:
    counter = TiktokenCounter()
    # The four facts take 86 tokens of the chat's 131 (o200k_base).
    assert counter.count("\n".join(STANDUP)) == 131
    summary = extractive_summary(STANDUP, budget_tokens=90, counter=counter)
    for fact in KEY_FACTS:
        assert fact in summary.text, (fact, summary.text)
    for filler in CHIT_CHAT:
        assert filler not in summary.text, (filler, summary.text)


def test_the_decision_sentences_of_a_long_chat_survive_a_small_budget() -> None:
    summary = extractive_summary(THREE_TOPICS, budget_tokens=200, counter=TiktokenCounter())
    assert "We decided to book the 7:45 flight to Lisbon on May 3" in summary.text
    assert "We decided to deploy PgBouncer with a default_pool_size of 40" in summary.text
    for filler in ("Haha, great.", "Perfect, thanks!", "Good result.", "Any idea?", "Done."):
        assert filler not in summary.text


def test_provenance_points_at_the_exact_source_text() -> None:
    messages = [SourceText(text, source=1000 + 7 * i) for i, text in enumerate(STANDUP)]
    summary = extractive_summary(messages, budget_tokens=120, counter=EstimateCounter())
    by_source = {m.source: m.text for m in messages}
    assert summary.sentences
    for sentence in summary.sentences:
        assert sentence.source is not None
        assert by_source[sentence.source][sentence.start : sentence.end] == sentence.text
        assert sentence.text in summary.text
        assert not sentence.cut
    assert summary.sources == tuple(sorted({s.source for s in summary.sentences if s.source}))
    assert summary.kept_previous == 0
    # One line per source message, sentences of one message side by side.
    assert summary.text.count("\n") == len(summary.sources) - 1


def test_chinese_summary_keeps_the_decisions() -> None:
    counter = TiktokenCounter()
    summary = extractive_summary(ZH_TOPICS, budget_tokens=150, counter=counter)
    assert summary.tokens <= 150
    assert "我们决定统一加锁顺序，并且给库存表的商品编号字段加索引。" in summary.text
    assert "很好。" not in summary.text
    assert "来得及。" not in summary.text
    # Sentences of one Chinese message join without a space.
    for sentence in summary.sentences:
        assert ZH_TOPICS[sentence.source or 0][sentence.start : sentence.end] == sentence.text


def test_exact_repeats_are_kept_once() -> None:
    texts = ["The deploy failed with error 137 at 14:02."] * 5 + [
        "We decided to raise the memory limit to 2 GiB."
    ]
    summary = extractive_summary(texts, budget_tokens=500, counter=EstimateCounter())
    assert summary.text.count("error 137") == 1
    assert summary.sources == (0, 5)


def test_given_keywords_steer_the_choice() -> None:
    counter = EstimateCounter()
    plain = extractive_summary(THREE_TOPICS, budget_tokens=45, counter=counter)
    steered = extractive_summary(
        THREE_TOPICS, budget_tokens=45, counter=counter, keywords=["parmesan", "butter"]
    )
    assert "parmesan" not in plain.text.lower() or "butter" not in plain.text.lower()
    assert "parmesan" in steered.text or "butter" in steered.text


def test_the_merge_keeps_the_previous_summary_when_room_allows() -> None:
    counter = TiktokenCounter()
    trip, database = THREE_TOPICS[:8], THREE_TOPICS[8:16]
    first = extractive_summary(trip, budget_tokens=90, counter=counter)
    assert "7:45 flight" in first.text
    merged = extractive_summary(
        [SourceText(text, source=8 + i) for i, text in enumerate(database)],
        budget_tokens=300,
        counter=counter,
        previous=first.text,
    )
    assert merged.tokens <= 300
    # The previous summary fits in half the budget, so all of it stays, first.
    assert merged.kept_previous == len(first.sentences)
    assert merged.text.startswith(first.text.split("\n")[0])
    assert [s.text for s in merged.sentences[: merged.kept_previous]] == [
        s.text for s in first.sentences
    ]
    assert all(s.source is None for s in merged.sentences[: merged.kept_previous])
    assert "We decided to deploy PgBouncer" in merged.text
    assert set(merged.sources) <= set(range(8, 16))


def test_a_tight_merge_stays_in_budget_and_gives_the_new_part_half() -> None:
    counter = TiktokenCounter()
    first = extractive_summary(THREE_TOPICS[:8], budget_tokens=200, counter=counter)
    merged = extractive_summary(
        THREE_TOPICS[8:16], budget_tokens=100, counter=counter, previous=first.text
    )
    assert merged.tokens <= 100
    new_part = [s for s in merged.sentences if s.source is not None]
    old_part = [s for s in merged.sentences if s.source is None]
    assert new_part and old_part
    assert sum(counter.count(s.text) for s in new_part) >= 40
    # The earlier decision is the fact the previous summary keeps.
    assert any("7:45 flight" in s.text for s in old_part)


def test_rolling_merges_never_exceed_the_budget() -> None:
    counter = EstimateCounter()
    summary: ExtractiveSummary | None = None
    for start in range(0, len(THREE_TOPICS), 4):
        chunk = [SourceText(THREE_TOPICS[i], i) for i in range(start, start + 4)]
        summary = extractive_summary(
            chunk,
            budget_tokens=120,
            counter=counter,
            previous=summary.text if summary else None,
        )
        assert summary.tokens == counter.count(summary.text) <= 120
        assert all(s.source is None or start <= s.source < start + 4 for s in summary.sentences)
    assert summary is not None and "risotto" in summary.text.lower()


def test_the_same_input_gives_the_same_summary() -> None:
    counter = TiktokenCounter()
    runs = [
        extractive_summary(THREE_TOPICS, budget_tokens=150, counter=counter, previous="Earlier.")
        for _ in range(3)
    ]
    assert runs[0] == runs[1] == runs[2]


def test_one_huge_line_is_cut_to_the_budget() -> None:
    counter = TiktokenCounter()
    line = " ".join(f"token{i} value{i * 7}" for i in range(20_000))  # no sentence end at all
    summary = extractive_summary([line], budget_tokens=50, counter=counter)
    assert 0 < summary.tokens <= 50
    (sentence,) = summary.sentences
    assert sentence.cut and "…" in sentence.text
    assert sentence.text.startswith("token0 value0")


def test_a_giant_sentence_among_others_is_cut_only_when_nothing_else_fits() -> None:
    counter = EstimateCounter()
    texts = [
        "We decided to ship on Friday.",
        "Error log: " + "connection reset by peer while reading the response " * 400,
    ]
    summary = extractive_summary(texts, budget_tokens=80, counter=counter)
    assert summary.tokens <= 80
    assert "We decided to ship on Friday." in summary.text
    cut = [s for s in summary.sentences if s.cut]
    assert len(cut) <= 1 and all(s.source == 1 for s in cut)


@pytest.mark.parametrize(
    "texts",
    [
        [],
        [""],
        ["   ", "\n\n", "\t"],
        ["😀🎉👍"],
        ["..."],
        [json.dumps({"rows": [{"id": i, "name": f"n{i}", "ok": True} for i in range(300)]})],
        ["def handler(event):\n    return {'status': 500, 'body': event['x']}\n" * 40],
        ["a" * 100_000],
        ["你" * 30_000],
        ["Normal sentence here.", "", "   ", "Another one, with 42 numbers."],
    ],
    ids=lambda texts: f"{len(texts)} texts",
)
@pytest.mark.parametrize("counter", COUNTERS[:2], ids=lambda c: c.name)
def test_odd_input_never_raises(texts: list[str], counter: TokenCounter) -> None:
    for budget in (0, 1, 3, 64):
        summary = extractive_summary(texts, budget_tokens=budget, counter=counter)
        assert summary.tokens == counter.count(summary.text) <= budget
    assert extractive_summary(texts, budget_tokens=0, counter=counter).text == ""


def test_a_negative_budget_is_invalid_input() -> None:
    with pytest.raises(InvalidInput, match="budget_tokens"):
        extractive_summary(["Hello."], budget_tokens=-1, counter=EstimateCounter())


def test_the_previous_summary_alone_is_compressed_to_the_budget() -> None:
    counter = TiktokenCounter()
    previous = " ".join(STANDUP)
    summary = extractive_summary([], budget_tokens=40, counter=counter, previous=previous)
    assert 0 < summary.tokens <= 40
    assert summary.kept_previous == len(summary.sentences)
    assert summary.sources == ()
    for sentence in summary.sentences:
        assert previous[sentence.start : sentence.end] == sentence.text


def test_the_sparse_similarities_equal_the_dense_product(monkeypatch: pytest.MonkeyPatch) -> None:
    sentences = [s.text for text in THREE_TOPICS + ZH_TOPICS for s in split_sentences(text)]
    matrix = cosine_matrix([Counter(document_terms(text)) for text in sentences])
    dense = matrix @ matrix.T
    np.fill_diagonal(dense, 0.0)
    sparse = graph.similarities(matrix)
    assert sparse is not None and np.allclose(sparse, dense, atol=1e-6)
    monkeypatch.setattr(graph, "_SPARSE_PAIRS", 0)  # force the dense product
    forced = graph.similarities(matrix)
    assert forced is not None and np.allclose(forced, dense, atol=1e-6)


def test_long_inputs_take_the_linear_paths_and_keep_the_budget() -> None:
    counter = EstimateCounter()
    texts = [
        f"Worker {i % 37} uploaded batch {i} of the nightly export in {i % 13 + 2} seconds."
        for i in range(summarize.MAX_CANDIDATES + 500)
    ]
    texts[100] = "We decided to split the nightly export into hourly batches."
    summary = extractive_summary(texts, budget_tokens=120, counter=counter)
    assert 0 < summary.tokens <= 120
    # Past MAX_CANDIDATES sentences the first and the last halves are scored.
    half = summarize.MAX_CANDIDATES // 2
    assert all(s < half or s >= len(texts) - half for s in summary.sources)
    assert "We decided to split the nightly export" in summary.text
