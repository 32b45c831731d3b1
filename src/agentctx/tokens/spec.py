"""Counters named by a configuration string."""

from __future__ import annotations

from agentctx.errors import ConfigError
from agentctx.tokens.base import TokenCounter
from agentctx.tokens.estimate import ESTIMATE_ENCODINGS, EstimateCounter
from agentctx.tokens.exact import TIKTOKEN_ENCODINGS, HFTokenizerCounter, TiktokenCounter

# The specs that name no file: safe for anyone to choose (a server lets its clients pick
# among these; an ``hf:`` path only when its operator lists it).
BUILTIN_SPECS = (
    "estimate",
    *(f"estimate:{name}" for name in ESTIMATE_ENCODINGS),
    *(f"tiktoken:{name}" for name in TIKTOKEN_ENCODINGS),
)
ACCEPTED_SPECS = (*BUILTIN_SPECS, "hf:/path/to/tokenizer.json")


def counter_from_spec(spec: str) -> TokenCounter:
    """The counter a spec names.

    ``"estimate"`` (no tokenizer, calibrated to o200k_base), ``"estimate:cl100k_base"``,
    ``"tiktoken:o200k_base"``, ``"tiktoken:cl100k_base"`` or
    ``"hf:/path/to/tokenizer.json"``. Anything else is a ``ConfigError`` naming the
    accepted forms; a tokenizer whose package is missing raises
    ``TokenizerNotInstalled`` (a ``ConfigError`` with the ``pip install`` line).
    """
    if not isinstance(spec, str):
        raise ConfigError(f"a tokenizer spec must be a string, got {type(spec).__name__}")
    kind, sep, arg = spec.strip().partition(":")
    if kind == "estimate" and (not sep or arg in ESTIMATE_ENCODINGS):
        return EstimateCounter(arg or "o200k_base")
    if kind == "tiktoken" and arg in TIKTOKEN_ENCODINGS:
        return TiktokenCounter(arg)
    if kind == "hf" and arg:
        return HFTokenizerCounter(arg)
    raise ConfigError(
        f"unknown tokenizer spec {spec[:80]!r}; accepted: {', '.join(ACCEPTED_SPECS)}"
    )
