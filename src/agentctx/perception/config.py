"""Configuration of perceptual deduplication (seed 000, section 3.2)."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

HashAlgorithm = Literal["phash", "dhash", "ahash"]
HASH_ALGORITHMS: tuple[str, ...] = ("phash", "dhash", "ahash")


class DedupConfig(BaseModel):
    """When a new image counts as the same screen as the session's previous one.

    A new image whose ``algorithm`` hash is within ``threshold`` bits (Hamming distance,
    of 64) of the previous image of the same session, and whose mean colour is within
    ``color_tolerance`` on every channel, reuses the previous image's id: its bytes are
    not stored and the part records the distance. The colour check exists because the
    hashes are computed on grey levels, relative to the image's own median: two flat
    screens of different colours (a white page and a red error screen) hash alike.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = True
    threshold: int = Field(
        default=10,
        ge=0,
        le=64,
        description="Most differing hash bits (of 64) for a duplicate (0: identical hashes).",
    )
    algorithm: HashAlgorithm = "phash"
    color_tolerance: int = Field(
        default=24,
        ge=0,
        le=255,
        description="Most difference of mean colour, per RGB channel (0-255), for a duplicate.",
    )
