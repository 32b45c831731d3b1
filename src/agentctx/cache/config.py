"""Configuration of the optional Redis hot cache (seed 003 A.1.5)."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field


class BreakerConfig(BaseModel):
    """The circuit breaker that keeps a dead Redis from adding latency to every call."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    failures: int = Field(
        default=3,
        ge=1,
        description="Consecutive Redis errors (timeouts, refused connections) that open "
        "the breaker: while open, the cache is skipped and the database read.",
    )
    reset_after: timedelta = Field(
        default=timedelta(seconds=5),
        description="How long the breaker stays open before one call tries Redis again.",
    )


class CacheConfig(BaseModel):
    """A cache in front of the database for the hot reads: the events of active
    sessions and a user's memories. In this process's memory by default
    (``local_events``), in a Redis shared by every process when ``url`` is set; with
    it on or off (or Redis gone) the engine returns the same results."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    url: str | None = Field(
        default=None,
        description="Redis URL (redis://host:6379/0, rediss://, unix://); None = the "
        "in-process cache (local_events, local_tokens).",
    )
    local_events: int = Field(
        default=20_000,
        ge=0,
        description="Without a url: events kept in this process's memory, least recently "
        "used sessions dropped first; 0 = no cache.",
    )
    local_tokens: int = Field(
        default=4_000_000,
        ge=0,
        description="Without a url: the most estimated tokens of text those events may "
        "hold together (about four bytes each).",
    )
    ttl: timedelta = Field(
        default=timedelta(hours=1),
        description="How long a cached entry lives after it was last filled.",
    )
    timeout_ms: float = Field(
        default=50.0,
        gt=0,
        description="Connect and socket timeout of every Redis call; past it the call "
        "counts as an error and the database is read instead.",
    )
    prefix: str = Field(
        default="agentctx:",
        description="Prepended to every key, so deployments can share one Redis.",
    )
    max_events: int = Field(
        default=2000,
        ge=1,
        description="Reads of more events than this (exports, full scans) bypass the cache.",
    )
    breaker: BreakerConfig = Field(default_factory=BreakerConfig)
