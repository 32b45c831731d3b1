"""Perception: perceptual hashes of images and deduplication of near-identical screens."""

from agentctx.perception.config import HASH_ALGORITHMS, DedupConfig, HashAlgorithm
from agentctx.perception.dedup import SessionImages, StoredImage, duplicate_distance
from agentctx.perception.hashing import (
    ImageHashes,
    color_distance,
    hamming,
    hash_in_background,
    perceptual_hashes,
)

__all__ = [
    "HASH_ALGORITHMS",
    "DedupConfig",
    "HashAlgorithm",
    "ImageHashes",
    "SessionImages",
    "StoredImage",
    "color_distance",
    "duplicate_distance",
    "hamming",
    "hash_in_background",
    "perceptual_hashes",
]
