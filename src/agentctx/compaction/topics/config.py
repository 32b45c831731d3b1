"""When topic archiving runs, and how much one run may take on."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

# The presets of the design: (largest context size, threshold, min archive messages).
_PRESETS: tuple[tuple[int, float, int], ...] = (
    (32_000, 0.60, 10),
    (64_000, 0.70, 15),
)
_LARGE_PRESET = (0.70, 20)  # 128k and above


def preset_thresholds(context_tokens: int) -> tuple[float, int]:
    """(context_threshold, min_archive_messages) of the design's preset for a model with
    ``context_tokens`` of context (see :meth:`TopicArchiveConfig.preset_for`)."""
    for limit, threshold, minimum in _PRESETS:
        if context_tokens <= limit:
            return threshold, minimum
    return _LARGE_PRESET


class ArchiveThresholds(BaseModel):
    """When archiving a session is due: its unarchived messages take ``context_threshold``
    of ``context_limit`` tokens and number at least ``min_archive_messages``."""

    model_config = ConfigDict(frozen=True)

    context_limit: int
    context_threshold: float
    min_archive_messages: int

    @classmethod
    def for_agent(
        cls,
        config: TopicArchiveConfig,
        *,
        context_limit: int | None = None,
        context_threshold: float | None = None,
        min_archive_messages: int | None = None,
    ) -> ArchiveThresholds:
        """An agent's thresholds: what it sets; for what it leaves out, the preset of its
        context size when it names one (seed 001's table), else the engine's settings."""
        if context_limit is None:
            threshold, minimum = config.context_threshold, config.min_archive_messages
        else:
            threshold, minimum = preset_thresholds(context_limit)
        return cls(
            context_limit=context_limit or config.context_limit,
            context_threshold=context_threshold or threshold,
            min_archive_messages=min_archive_messages or minimum,
        )


class TopicArchiveConfig(BaseModel):
    """Topic archiving settings (one per engine; presets by model context size).

    Archiving is due when the unarchived messages count at least
    ``context_threshold x context_limit`` tokens *and* at least
    ``min_archive_messages`` messages. The newest ``keep_recent_messages`` are never
    offered, so the window keeps the thread of the conversation; one identification
    call sees at most ``max_batch_messages`` messages and ``max_batch_tokens`` tokens,
    and a longer backlog is archived in several steps.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        default=False, description="Archive old messages into topics (off by default)."
    )
    context_limit: int = Field(
        default=32_000,
        ge=256,
        description="The model's context size in tokens, when a caller does not name one.",
    )
    context_threshold: float = Field(
        default=0.70,
        gt=0.0,
        le=1.0,
        description="Archive once unarchived messages take this share of the context limit.",
    )
    min_archive_messages: int = Field(
        default=20, ge=1, description="…and at least this many messages are unarchived."
    )
    min_topic_messages: int = Field(
        default=10,
        ge=1,
        description="Fewest messages per topic; a shorter one is merged into a neighbour.",
    )
    keep_recent_messages: int = Field(
        default=10,
        ge=0,
        description="The newest messages are never archived, so the window keeps continuity.",
    )
    max_batch_messages: int = Field(
        default=200,
        ge=2,
        description="The most messages one identification call sees; a longer backlog is "
        "archived in several steps.",
    )
    max_batch_tokens: int = Field(
        default=24_000,
        ge=256,
        description="…and the most tokens (by the events' stored estimates).",
    )
    summary_tokens: int = Field(
        default=150, ge=16, le=4_000, description="The most one topic summary may count."
    )
    max_steps: int = Field(
        default=8,
        ge=1,
        description="The most archive steps one maybe_archive call (or one job) takes.",
    )

    @model_validator(mode="after")
    def _consistent(self) -> TopicArchiveConfig:
        if self.min_topic_messages > self.max_batch_messages:
            raise ValueError(
                f"min_topic_messages ({self.min_topic_messages}) must not exceed "
                f"max_batch_messages ({self.max_batch_messages})"
            )
        return self

    @classmethod
    def preset_for(cls, context_tokens: int, **overrides: Any) -> TopicArchiveConfig:
        """The design's preset for a model with ``context_tokens`` of context, enabled.

        =========  =========  =====================
        context    threshold  min archive messages
        =========  =========  =====================
        ≤ 32k      0.60       10
        ≤ 64k      0.70       15
        larger     0.70       20
        =========  =========  =====================

        ``overrides`` set any other field (or replace a preset value).
        """
        threshold, minimum = preset_thresholds(context_tokens)
        values: dict[str, Any] = {
            "enabled": True,
            "context_limit": context_tokens,
            "context_threshold": threshold,
            "min_archive_messages": minimum,
        }
        values.update(overrides)
        return cls(**values)
