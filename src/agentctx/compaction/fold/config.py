"""When a session's event log is folded, and how far: :class:`FoldConfig`."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, model_validator

from agentctx.events import EventType

DEFAULT_KEY_TYPES: frozenset[EventType] = frozenset(
    {
        EventType.USER_INPUT,
        EventType.TOOL_RESULT,
        EventType.FINAL,
        EventType.ERROR,
        EventType.HITL,
    }
)
"""The events a fold keeps verbatim (seed 003's ``keep_types``)."""


class FoldConfig(BaseModel):
    """Hybrid compaction of the event log: thresholds, key events, summary sizes, recursion."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(default=False, description="Fold old events into summaries.")
    low_tokens: int = Field(
        default=4000, ge=1, description="A fold brings the live tokens down to this many."
    )
    high_tokens: int = Field(
        default=8000, ge=2, description="Folding starts once the live tokens pass this many."
    )
    key_types: frozenset[EventType] = Field(
        default=DEFAULT_KEY_TYPES,
        description="Event types kept verbatim, never folded (a tool call whose result is "
        "key stays with it).",
    )
    keep_key_events: int | None = Field(
        default=None,
        ge=1,
        description="Keep only the newest this many key events verbatim; older ones fold "
        "like any other (seed 003's last_n_events). None: a key event is never folded.",
    )
    summary_tokens: int = Field(
        default=400, ge=16, le=100_000, description="The most one fold summary may count."
    )
    max_events_per_fold: int = Field(
        default=200,
        ge=1,
        description="The most events one fold covers (bounds one model call); a longer "
        "backlog is folded in several folds.",
    )
    fanout: int = Field(
        default=4,
        ge=2,
        description="When more than this many top-level summaries of one level exist, "
        "the oldest this many are folded into one summary a level higher.",
    )
    summaries_tokens: int | None = Field(
        default=None,
        ge=16,
        description="…and while the top-level summaries together count more than this "
        "(default: half of low_tokens), the oldest are folded a level higher.",
    )

    @model_validator(mode="after")
    def _ordered(self) -> FoldConfig:
        if self.low_tokens >= self.high_tokens:
            raise ValueError(
                f"low_tokens ({self.low_tokens}) must be below high_tokens ({self.high_tokens})"
            )
        return self

    @property
    def summaries_budget(self) -> int:
        """What the top-level summaries may count together before they are folded again."""
        return self.summaries_tokens if self.summaries_tokens is not None else self.low_tokens // 2
