"""Images for the client tests."""

from __future__ import annotations

import io

import numpy as np
from PIL import Image


def noise_png(seed: int, size: tuple[int, int] = (96, 64)) -> bytes:
    """A PNG of random pixels: no two seeds are perceptual near-duplicates."""
    pixels = np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)
    buffer = io.BytesIO()
    Image.fromarray(pixels).save(buffer, "PNG")
    return buffer.getvalue()
