"""Configuration of long-term memory."""

from __future__ import annotations

from datetime import timedelta

from pydantic import BaseModel, ConfigDict, Field

from agentctx.memory.models import MemoryKind


class MemoryConfig(BaseModel):
    """Extraction, consolidation, trust and injection of long-term memory (seed 003)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(
        default=False,
        description="Extract memories after each turn and inject verified ones into windows.",
    )
    extract_after_each_turn: bool = Field(
        default=True,
        description="Extract at every turn end; when off, only turns that raise a signal "
        "(an error, low confidence, repeated reflection, a final answer) are extracted at "
        "once, the rest by an explicit call or the batch (agentctx memory extract).",
    )
    min_support_sessions: int = Field(
        default=2,
        ge=1,
        description="Independent sessions a memory needs before it is injected (seed 003 "
        "A.1.7); below it, it is stored but only searchable.",
    )
    min_confidence: float = Field(
        default=0.6, ge=0.0, le=1.0, description="Below this confidence a memory is not injected."
    )
    duplicate_similarity: float = Field(
        default=0.9,
        gt=0.0,
        le=1.0,
        description="A candidate this similar to a memory of the same kind merges into it.",
    )
    supersede_support_ratio: float = Field(
        default=3.0,
        ge=1.0,
        description="A later statement contradicting a fact supersedes it unless the fact "
        "has clearly more independent support: at least this many times the sessions …",
    )
    supersede_support_margin: int = Field(
        default=2,
        ge=0,
        description="… and this many sessions more. Outweighed, the later statement is kept "
        "as contested and gains support each time it is said again.",
    )
    inject_tokens: int = Field(
        default=400, ge=0, description="Most tokens of the ## Memory (Verified) block."
    )
    inject_limit: int = Field(default=10, ge=0, description="Most memories injected.")
    retrieval_timeout_ms: float = Field(
        default=500.0,
        gt=0,
        description="A window waits this long for memories (seed 002), then is built without.",
    )
    ttl: dict[MemoryKind, timedelta] = Field(
        default_factory=lambda: {MemoryKind.EPISODIC: timedelta(days=90)},
        description="Time to live per kind, from the last update; kinds not named never expire.",
    )
