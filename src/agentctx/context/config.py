"""How a context window is assembled: strategy, budget split, sections, per-strategy knobs.

Seed 004 names the strategies and their settings (``full_context``, ``compressed_context``,
``adaptive_context``) and seed 002 the budget split. A :class:`ContextConfig` is read
from the engine settings (YAML ``context:``), may be overridden per agent
(``AgentConfig.context``) and per call (``build_context(strategy=…, budget_split=…)``).
Unknown keys and bad values raise ``ConfigError`` naming the field.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agentctx.errors import ConfigError

StrategyName = Literal["full", "compressed", "adaptive", "semantic"]
STRATEGIES: tuple[str, ...] = ("full", "compressed", "adaptive", "semantic")

SECTIONS: tuple[str, ...] = ("system", "summary", "retrieved", "recent", "input")
"""The budget sections of seed 002. ``system`` also pays for the active task and the
pinned instruction; ``retrieved`` for long-term memories and relevant older events."""

DEFAULT_BUDGET_SPLIT: dict[str, float] = {
    "system": 0.20,
    "summary": 0.10,
    "retrieved": 0.10,
    "recent": 0.55,
    "input": 0.05,
}


class _Strict(BaseModel):
    # NaN passes every comparison-free check (and makes shares add up to anything):
    # numbers in a context configuration are finite.
    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)


class FullSettings(_Strict):
    """``full``: the newest whole turns, up to ``max_messages`` messages and ``max_tokens``
    tokens for the whole window; a marker counts what was left out (seed 004)."""

    max_messages: int = Field(default=100, ge=1)
    max_tokens: int | None = Field(default=None, ge=1)


class CompressedSettings(_Strict):
    """``compressed``: the newest ``recent_messages`` whole, the ``medium_recent`` before
    them shortened to ``compression_ratio``, older ones left to the summaries (topic
    summaries kept when ``preserve_topics``); a marker counts what no summary covers."""

    recent_messages: int = Field(default=5, ge=0)
    medium_recent: int = Field(default=10, ge=0)
    compression_ratio: float = Field(default=0.3, ge=0.1, le=1.0)
    preserve_topics: bool = True


class AdaptiveSettings(_Strict):
    """``adaptive`` (the default): the window an agent loop needs.

    The system prompt, the compacted past, then the recent history as chat exactly as
    recorded, sliding in whole-turn steps down to ``low_water`` of its share so the next
    calls only append; what varies per call (older events relevant to the query,
    memories, the active task, the pinned instruction) comes last. The search settings
    below serve ``semantic`` as well.
    """

    low_water: float = Field(
        default=0.3,
        ge=0,
        lt=1,
        description="About what share of its capacity the history keeps when it slides: "
        "turns leave its old end in steps of (1 - low_water) of the recent share.",
    )
    recent_messages: int = Field(
        default=4,
        ge=1,
        description="The history always holds at least this many of the newest messages "
        "(their turns whole), however it slid.",
    )
    digest_share: float = Field(
        default=0.4,
        ge=0,
        le=0.9,
        description="Share of the history's room given, once turns have left it, to the "
        "compacted past: those turns as compact dated lines, newest first (0: off).",
    )
    ledger_share: float = Field(
        default=0.5,
        ge=0,
        le=1,
        description="Share of a compacted block (the compacted past, the compacted part of "
        "a long turn) kept for the values its lines leave out: ids, codes, dates and names, "
        "listed once each (0: off).",
    )
    important_keywords: tuple[str, ...] = (
        "decision",
        "decided",
        "important",
        "error",
        "failed",
        "problem",
        "solution",
        "must",
        "决定",
        "重要",
        "错误",
        "失败",
        "问题",
        "解决",
        "必须",
    )
    retrieval_candidates: int = Field(
        default=60,
        ge=1,
        le=1000,
        description="Search hits asked for at least; larger budgets ask for one per 12 tokens.",
    )
    neighbours: int = Field(
        default=1,
        ge=0,
        le=10,
        description="Events on each side of a hit also considered (for the best 60 hits).",
    )
    neighbour_weight: float = Field(
        default=0.3,
        ge=0,
        le=1,
        description="A neighbour's relevance as a share of its hit's, divided by its distance.",
    )


class SemanticSettings(_Strict):
    """``semantic``: the window for a question about a long past, filled by relevance.

    The current turn and at least ``min_recent`` messages are always kept (left at its
    default, one message per 1,000 tokens of budget in windows under 3,000). What budget
    is left goes to older events by relevance to the query, lifted by the priors below
    (measured on the development chats; see docs/benchmarks.md), then decisions and
    errors, then recency.
    """

    min_recent: int = Field(
        default=3,
        ge=0,
        description="Messages always kept, the current turn's included (when not set: "
        "at most one per 1,000 tokens of budget).",
    )
    day_weight: float = Field(
        default=0.4,
        ge=0,
        le=2,
        description="What a relevant older event gains from its day: the day's summed "
        "relevance (its three best hits), as a share of the best day's (0: off).",
    )
    fact_weight: float = Field(
        default=0.05,
        ge=0,
        le=1,
        description="What a relevant older user message gains when it states a fact "
        "about the user that the memory extractor would learn (0: off).",
    )
    name_weight: float = Field(
        default=0.03,
        ge=0,
        le=1,
        description="What a relevant older event gains when it names something: a "
        "capitalised word inside a sentence (0: off).",
    )
    subject_weight: float = Field(
        default=0.08,
        ge=0,
        le=1,
        description="What a relevant older event gains when its author is the one session "
        "participant the query names, by name or alias (0: off).",
    )


class SectionSwitches(_Strict):
    """Which sections a window may contain."""

    system: bool = True
    summaries: bool = True
    memories: bool = True
    retrieved: bool = True
    recent: bool = True
    active_task: bool = True
    pinned_instruction: bool = True


class ContextConfig(_Strict):
    """Everything that shapes a context window. Every field has a working default."""

    strategy: StrategyName = "adaptive"
    budget_split: dict[str, float] = Field(default_factory=lambda: dict(DEFAULT_BUDGET_SPLIT))
    sections: SectionSwitches = Field(default_factory=SectionSwitches)
    tokenizer: str = Field(
        default="estimate",
        description='"estimate", "tiktoken:o200k_base", "tiktoken:cl100k_base" or '
        '"hf:/path/tokenizer.json": what the budget is counted with.',
    )
    max_message_tokens: int | None = Field(
        default=None,
        ge=16,
        description="Longer single messages are cut in the middle with a marker "
        "(default: half the budget).",
    )
    image_provider: Literal["openai", "anthropic", "gemini"] = "openai"
    images: Literal["inline", "placeholder"] = Field(
        default="inline",
        description="inline: image bytes as data URLs; placeholder: a text reference only.",
    )
    image_max_width: int | None = Field(
        default=768,
        ge=16,
        description="Images wider than this are sent downscaled to it (seed 000: 768 px, "
        "about 1,500 tokens for a screenshot); None sends them at their stored size.",
    )
    history_image_detail: Literal["auto", "low"] = Field(
        default="low",
        description="Kept frames (anchor, result, error) of compacted turns older than the "
        "last history_full_turns: 'low' sends them within 512x512 at OpenAI's low detail "
        "(85 tokens), 'auto' as the active turn's images.",
    )
    history_full_turns: int = Field(
        default=1,
        ge=0,
        description="The newest compacted turns whose kept frames go at full detail.",
    )
    restore_images: tuple[str, ...] = Field(
        default=(),
        description="Image ids (img_…) to show in full in this window although visual "
        "compaction replaced them with placeholders.",
    )
    full: FullSettings = Field(default_factory=FullSettings)
    compressed: CompressedSettings = Field(default_factory=CompressedSettings)
    adaptive: AdaptiveSettings = Field(default_factory=AdaptiveSettings)
    semantic: SemanticSettings = Field(default_factory=SemanticSettings)

    @model_validator(mode="after")
    def _check_split(self) -> ContextConfig:
        unknown = set(self.budget_split) - set(SECTIONS)
        if unknown:
            raise ValueError(
                f"budget_split: unknown sections {sorted(unknown)}; known: {list(SECTIONS)}"
            )
        if any(share < 0 for share in self.budget_split.values()):
            raise ValueError("budget_split: shares must be non-negative")
        total = sum(self.budget_split.values())
        if abs(total - 1.0) > 1e-6:
            raise ValueError(f"budget_split: shares must add up to 1.0, got {total:.4f}")
        return self

    def merged(self, overrides: dict[str, Any] | None) -> ContextConfig:
        """This configuration with ``overrides`` (nested dicts merge) applied and checked."""
        if not overrides:
            return self
        # Only what was set is carried over, so defaults that depend on the window (such
        # as semantic.min_recent) still know they were not chosen.
        return parse_context_config(_deep_merge(self.model_dump(exclude_unset=True), overrides))


def parse_context_config(data: dict[str, Any] | ContextConfig | None) -> ContextConfig:
    """A validated :class:`ContextConfig`; ``ConfigError`` names every bad field."""
    if isinstance(data, ContextConfig):
        return data
    try:
        return ContextConfig.model_validate(data or {})
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in err['loc']) or 'context'}: {err['msg']}"
            for err in exc.errors()
        )
        raise ConfigError(f"invalid context configuration: {problems}") from exc


def _deep_merge(base: dict[str, Any], overrides: dict[str, Any]) -> dict[str, Any]:
    merged = dict(base)
    for key, value in overrides.items():
        if key == "budget_split":
            merged[key] = value  # a split is replaced whole: its shares must add up
        elif isinstance(value, dict) and isinstance(merged.get(key), dict):
            merged[key] = _deep_merge(merged[key], value)
        else:
            merged[key] = value
    return merged


class ContextPreset(_Strict):
    """Compaction thresholds by model context size (seed 001's table)."""

    context_limit: int
    context_threshold: float
    min_archive_messages: int


PRESETS: tuple[ContextPreset, ...] = (
    ContextPreset(context_limit=32_000, context_threshold=0.60, min_archive_messages=10),
    ContextPreset(context_limit=64_000, context_threshold=0.70, min_archive_messages=15),
    ContextPreset(context_limit=128_000, context_threshold=0.70, min_archive_messages=20),
)


def preset_for(context_limit: int) -> ContextPreset:
    """The preset of the largest listed size not above ``context_limit`` (the smallest
    preset for smaller models)."""
    if context_limit <= 0:
        raise ConfigError("context_limit must be positive")
    chosen = PRESETS[0]
    for preset in PRESETS:
        if preset.context_limit <= context_limit:
            chosen = preset
    return chosen
