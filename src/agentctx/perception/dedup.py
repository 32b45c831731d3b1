"""Perceptual deduplication of a session's screenshots (seed 000, Phase 3).

Computer-use agents send a screenshot after nearly every action, and many show the
same screen. A new image whose perceptual hash is within the threshold of the
session's previous image reuses that image's id: nothing new is stored, and the part
records the distance, so the log still says a screenshot was taken.

The baseline is the previous *stored* image, not the previous submitted one: a screen
drifting by a few bits per frame is compared with where it started, so drift cannot
accumulate into a duplicate of something it no longer resembles.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from agentctx.perception.config import DedupConfig
from agentctx.perception.hashing import ImageHashes, color_distance, hamming


@dataclass(frozen=True, slots=True)
class StoredImage:
    """An image already in the blob store: what a near-duplicate's part will reference."""

    blob_id: str
    image_id: str
    media_type: str
    width: int
    height: int
    size: int
    hashes: ImageHashes | None  # None: stored before hashes were kept, never a baseline


def duplicate_distance(
    config: DedupConfig, hashes: ImageHashes, previous: StoredImage | None
) -> int | None:
    """The Hamming distance to ``previous`` when the new image counts as its duplicate."""
    if not config.enabled or previous is None or previous.hashes is None:
        return None
    distance = hamming(hashes.get(config.algorithm), previous.hashes.get(config.algorithm))
    if distance > config.threshold:
        return None
    if color_distance(hashes.mean_color, previous.hashes.mean_color) > config.color_tolerance:
        return None
    return distance


class SessionImages:
    """The latest image of one session while one write is being prepared.

    Loaded from the database on first use, then advanced by each image the write
    stores, so the images of one batch are compared with each other in order.
    """

    def __init__(self, load: Callable[[], StoredImage | None]) -> None:
        self._load = load
        self._loaded = False
        self._latest: StoredImage | None = None

    def latest(self) -> StoredImage | None:
        """The session's most recent stored image, if any."""
        if not self._loaded:
            self._latest, self._loaded = self._load(), True
        return self._latest

    def stored(self, image: StoredImage) -> None:
        """Record that the write stores ``image`` (it becomes the baseline)."""
        self._latest, self._loaded = image, True
