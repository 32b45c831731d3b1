"""The tool-output compressor: thresholds, and which strategy shortens which tool's output.

Strategies are registered by tool name, exactly (``"web_search"``) or as a glob
(``"search_*"``); a tool nothing is registered for gets the default chain (``"auto"``):
JSON keeps its first list items when that leaves at least a few of them, otherwise its
structure and keys (:func:`shorten_json`); text keeps its head and tail.
"""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentctx.compaction.tool_output.strategies import (
    BUILTIN,
    Counter,
    Strategy,
    ToolContent,
    content_text,
    head_tail,
    list_cut,
    parse_content,
    shorten_json,
)
from agentctx.errors import ConfigError, InvalidInput
from agentctx.tokens import truncate_text

AUTO = "auto"
STRATEGY_NAMES: tuple[str, ...] = (AUTO, *BUILTIN)
"""The strategy names a configuration may use."""

_GLOB_CHARS = frozenset("*?[")
# The default chain takes truncate_list's result only if every list keeps this many items
# whole: fewer says less than shorten_json's shortened structure.
_MIN_LIST_ITEMS = 3


class ToolOutputConfig(BaseModel):
    """When tool output is compressed or offloaded, and by which strategy.

    Output of more than ``compress_over_tokens`` tokens is shortened to that many; output
    of more than ``offload_over_tokens`` goes to the blob store, and the window shows a
    preview of ``preview_tokens`` plus a pointer the model can follow with
    ``read_offloaded``. ``strategies`` maps tool names or globs to a strategy name
    (``auto``, ``truncate_list``, ``shorten_json``, ``head_tail``).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(default=True, description="Compress tool results in the window.")
    compress_over_tokens: int = Field(
        default=1000, ge=20, description="Longer output is shortened to this many tokens."
    )
    offload_over_tokens: int = Field(
        default=4000, ge=20, description="Longer output is offloaded behind a pointer."
    )
    preview_tokens: int = Field(
        default=200, ge=20, description="The preview shown above an offloaded output's pointer."
    )
    strategies: dict[str, str] = Field(
        default_factory=dict, description="Tool name or glob -> strategy name."
    )

    @model_validator(mode="after")
    def _consistent(self) -> ToolOutputConfig:
        if self.offload_over_tokens < self.compress_over_tokens:
            raise ValueError(
                f"offload_over_tokens ({self.offload_over_tokens}) must be >= "
                f"compress_over_tokens ({self.compress_over_tokens})"
            )
        if self.preview_tokens > self.compress_over_tokens:
            raise ValueError(
                f"preview_tokens ({self.preview_tokens}) must be <= "
                f"compress_over_tokens ({self.compress_over_tokens})"
            )
        for pattern, name in self.strategies.items():
            if not pattern:
                raise ValueError("strategies: a tool name or pattern may not be empty")
            if name not in STRATEGY_NAMES:
                raise ValueError(
                    f"strategies[{pattern!r}]: unknown strategy {name!r}; "
                    f"accepted: {', '.join(STRATEGY_NAMES)}"
                )
        return self


def parse_tool_output_config(data: dict[str, Any] | ToolOutputConfig | None) -> ToolOutputConfig:
    """A validated :class:`ToolOutputConfig`; ``ConfigError`` names every bad field."""
    if isinstance(data, ToolOutputConfig):
        return data
    try:
        return ToolOutputConfig.model_validate(data or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'tool_output'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(f"invalid tool_output configuration: {problems}") from exc


class CompressedOutput(BaseModel):
    """A tool output as it enters the window: ``text`` and what it cost before and after.

    ``strategy`` is ``"none"`` when the output fits as it is. ``needs_offload`` says the
    output is over the offload threshold: ``text`` is then the preview to show above
    the pointer (see :func:`~agentctx.compaction.tool_output.offload`).
    """

    model_config = ConfigDict(frozen=True)

    text: str
    original_tokens: int
    tokens: int
    strategy: str
    kind: Literal["json", "text"]
    needs_offload: bool = False

    @property
    def compressed(self) -> bool:
        """Whether the text differs from the original."""
        return self.strategy != "none"


@dataclass(frozen=True, slots=True)
class _Entry:
    name: str
    strategy: Strategy | None  # None: the default chain
    order: int


def _literal_chars(pattern: str) -> int:
    return sum(1 for char in pattern if char not in _GLOB_CHARS)


class ToolOutputCompressor:
    """Shortens tool output by the strategy registered for the tool (``compress``).

    ``config.strategies`` is registered first; :meth:`register` adds or replaces more.
    An exact tool name wins over any glob; among globs the one with the most literal
    characters wins, then the one registered first.
    """

    def __init__(self, config: ToolOutputConfig | None = None) -> None:
        self.config = config or ToolOutputConfig()
        self._exact: dict[str, _Entry] = {}
        self._globs: dict[str, _Entry] = {}
        self._order = 0
        for pattern, name in self.config.strategies.items():
            self.register(pattern, name)

    def register(self, pattern: str, strategy: str | Strategy, *, name: str | None = None) -> None:
        """Use ``strategy`` (a built-in's name or a function) for tools matching ``pattern``.

        ``pattern`` is a tool name or a glob (``*``, ``?``, ``[…]``). A function must
        follow the strategy signature ``(content, target, counter) -> str``; ``name``
        is what :attr:`CompressedOutput.strategy` reports (default: the function's name).
        """
        if not isinstance(pattern, str) or not pattern:
            raise InvalidInput("a tool name or pattern must be a non-empty string")
        if isinstance(strategy, str):
            if strategy not in STRATEGY_NAMES:
                raise InvalidInput(
                    f"unknown strategy {strategy!r}; accepted: {', '.join(STRATEGY_NAMES)}"
                )
            entry_name, function = strategy, (None if strategy == AUTO else BUILTIN[strategy])
        elif callable(strategy):
            entry_name = name or getattr(strategy, "__name__", None) or "custom"
            function = strategy
        else:
            raise InvalidInput(f"a strategy is a name or a function, not {type(strategy).__name__}")
        table = self._globs if _GLOB_CHARS & set(pattern) else self._exact
        previous = table.get(pattern)
        order = previous.order if previous is not None else self._next_order()
        table[pattern] = _Entry(entry_name, function, order)

    def _next_order(self) -> int:
        self._order += 1
        return self._order

    def strategy_for(self, tool_name: str | None) -> str:
        """The name of the strategy ``tool_name``'s output gets."""
        return self._resolve(tool_name).name

    def _resolve(self, tool_name: str | None) -> _Entry:
        if tool_name is not None:
            exact = self._exact.get(tool_name)
            if exact is not None:
                return exact
            matches = [
                (pattern, entry)
                for pattern, entry in self._globs.items()
                if fnmatch.fnmatchcase(tool_name, pattern)
            ]
            if matches:
                return min(matches, key=lambda m: (-_literal_chars(m[0]), m[1].order))[1]
        return _Entry(AUTO, None, 0)

    def compress(
        self,
        tool_name: str | None,
        content: ToolContent,
        *,
        counter: Counter,
        max_tokens: int | None = None,
    ) -> CompressedOutput:
        """``content`` as it should enter the window.

        Output within ``compress_over_tokens`` comes back unchanged; longer output is
        shortened to ``compress_over_tokens`` by the tool's strategy; output over
        ``offload_over_tokens`` is shortened to ``preview_tokens`` and marked
        ``needs_offload``. ``max_tokens`` replaces the target (the offload mark stays).
        The result never counts more than the target by ``counter``, whatever the
        strategy returns.
        """
        if max_tokens is not None and (isinstance(max_tokens, bool) or max_tokens < 0):
            raise InvalidInput(f"max_tokens must be >= 0, got {max_tokens!r}")
        text = content_text(content)
        original = counter.count(text)
        needs_offload = original > self.config.offload_over_tokens
        if max_tokens is not None:
            target = max_tokens
        elif needs_offload:
            target = self.config.preview_tokens
        else:
            target = self.config.compress_over_tokens
        is_json, value = parse_content(content)
        kind: Literal["json", "text"] = "json" if is_json else "text"
        if original <= target:
            return CompressedOutput(
                text=text,
                original_tokens=original,
                tokens=original,
                strategy="none",
                kind=kind,
                needs_offload=needs_offload,
            )
        entry = self._resolve(tool_name)
        if entry.strategy is None:
            result, name = _chain(content, is_json, value, target, counter, known_tokens=original)
        elif entry.strategy is BUILTIN.get(entry.name):
            # The built-ins take the parse and the count made here; head_tail cuts the
            # text as it came (its lines), the others the parsed value.
            builtin: Any = entry.strategy
            given = value if is_json and entry.name != "head_tail" else content
            result, name = builtin(given, target, counter, known_tokens=original), entry.name
        else:
            result, name = entry.strategy(content, target, counter), entry.name
        tokens = counter.count(result)
        if tokens > target:  # a registered function overshot: hold the bound anyway
            result = truncate_text(counter, result, target, keep="head")
            tokens = counter.count(result)
            name += "+cut"
        return CompressedOutput(
            text=result,
            original_tokens=original,
            tokens=tokens,
            strategy=name,
            kind=kind,
            needs_offload=needs_offload,
        )


def default_chain(
    content: ToolContent, target: int, counter: Counter, *, known_tokens: int | None = None
) -> tuple[str, str]:
    """The ``auto`` strategy: its text and the name of the strategy that made it."""
    is_json, value = parse_content(content)
    return _chain(content, is_json, value, target, counter, known_tokens=known_tokens)


def _chain(
    content: ToolContent,
    is_json: bool,
    value: Any,
    target: int,
    counter: Counter,
    *,
    known_tokens: int | None,
) -> tuple[str, str]:
    if not is_json:
        return head_tail(content, target, counter, known_tokens=known_tokens), "head_tail"
    try:
        text, kept = list_cut(value, target, counter)
    except RecursionError:
        kept = None
    if kept is not None and kept >= _MIN_LIST_ITEMS:
        return text, "truncate_list"
    return shorten_json(value, target, counter, known_tokens=known_tokens), "shorten_json"
