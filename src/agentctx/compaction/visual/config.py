"""Configuration of visual context: dedup, turn-end compaction, cold-storage retention."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from agentctx.perception.config import DedupConfig


class VisualConfig(BaseModel):
    """Seed 000: screenshots deduplicated on arrival, compacted when their turn ends,
    kept in cold storage for ``retention_days``."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    compaction: bool = Field(
        default=True,
        description="At turn end, keep the turn's first (anchor), last (result) and error "
        "frames in full and show every other image as [Visual_Placeholder: img_…].",
    )
    dedup: DedupConfig = Field(default_factory=DedupConfig)
    retention_days: int = Field(
        default=30,
        ge=1,
        description="cleanup() removes the bytes of images older than this that no live "
        "window needs (compressed, or only in expired sessions).",
    )
