"""Perceptual hashes of an image, computed on a downscaled decode.

A 1280x800 screenshot has a million pixels; the hashes look at 64 (ahash, dhash) or
1,024 (phash). So the image is decoded as small as its format allows (JPEG: the
decoder's draft mode scales by up to 8 while decoding) and reduced by box averaging
before ``imagehash`` resizes it, which keeps hashing near the cost of the decode.
"""

from __future__ import annotations

import io
from dataclasses import dataclass

import imagehash
import numpy as np
from PIL import Image, UnidentifiedImageError

from agentctx.errors import InvalidInput

# The reduced image's long side: comfortably above phash's 32x32 input, so the
# hashes match those of the full-size image (a test pins that).
_WORK_SIDE = 128


@dataclass(frozen=True, slots=True)
class ImageHashes:
    """The three perceptual hashes (16 hex digits each) and the mean colour of an image."""

    phash: str
    dhash: str
    ahash: str
    mean_color: str  # "rrggbb"

    def get(self, algorithm: str) -> str:
        """The hash of ``algorithm`` ("phash", "dhash" or "ahash")."""
        if algorithm == "phash":
            return self.phash
        if algorithm == "dhash":
            return self.dhash
        if algorithm == "ahash":
            return self.ahash
        raise InvalidInput(f"unknown hash algorithm {algorithm!r}; accepted: phash, dhash, ahash")


def perceptual_hashes(data: bytes) -> ImageHashes:
    """The perceptual hashes of the image in ``data`` (PNG, JPEG, WebP or GIF bytes)."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.draft("RGB", (image.width // 8 or 1, image.height // 8 or 1))
            image.load()
            small = _reduced(image)
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise InvalidInput(f"not a readable image: {exc}") from exc
    rgb = np.asarray(small, dtype=np.float32).reshape(-1, 3).mean(axis=0)
    mean_color = "".join(f"{round(float(c)):02x}" for c in rgb)
    grey = small.convert("L")
    return ImageHashes(
        phash=str(imagehash.phash(grey)),
        dhash=str(imagehash.dhash(grey)),
        ahash=str(imagehash.average_hash(grey)),
        mean_color=mean_color,
    )


def _reduced(image: Image.Image) -> Image.Image:
    if image.mode not in ("L", "LA", "RGB", "RGBA", "CMYK"):
        # reduce() works on 8-bit bands only: palette (GIF, optimised PNG), 1-bit and
        # 16-bit images are converted first.
        image = image.convert("RGB")
    factor = max(1, max(image.size) // _WORK_SIDE)
    # Reduce first (box averaging in the decoded mode), then convert the small image.
    small = image.reduce(factor) if factor > 1 else image
    return small if small.mode == "RGB" else small.convert("RGB")


def hamming(first: str, second: str) -> int:
    """Bits that differ between two hashes of equal length (hex strings)."""
    if len(first) != len(second):
        raise InvalidInput(f"hashes of different lengths: {first!r}, {second!r}")
    return (int(first, 16) ^ int(second, 16)).bit_count()


def color_distance(first: str, second: str) -> int:
    """The largest per-channel difference between two ``rrggbb`` colours."""
    return max(abs(int(first[i : i + 2], 16) - int(second[i : i + 2], 16)) for i in (0, 2, 4))
