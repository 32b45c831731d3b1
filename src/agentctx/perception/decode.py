"""Decoding a screenshot: an 8-bit PNG by libspng, anything else by Pillow.

Decoding is most of what hashing a screenshot or downscaling it for a window costs, and a
PNG cannot be decoded at a reduced size. libspng (``pyspng``, installed with agentctx
where a wheel exists) decodes an 8-bit, non-interlaced PNG into an array Pillow reads in
place, the same pixels in less than half Pillow's time (2560x1600: 10 ms against 22;
1280x800: 2 against 5). Without ``pyspng``, or for any other image, Pillow decodes.
"""

from __future__ import annotations

import numpy as np
from PIL import Image, ImageFile

try:
    import pyspng
except ImportError:  # no wheel for this platform: Pillow decodes every PNG
    pyspng = None

# A PNG's raw modes (8 bits per sample) libspng decodes to the same pixels as Pillow.
_SPNG_MODES = ("RGB", "RGBA", "L")


def decoded_png(image: ImageFile.ImageFile, data: bytes) -> Image.Image | None:
    """An 8-bit, non-interlaced PNG decoded by libspng, as a Pillow image over its
    pixels (RGB, RGBA or L); None when Pillow should decode it (no ``pyspng``, another format
    or pixel layout, or a file libspng refuses: Pillow then says what is wrong)."""
    if pyspng is None or image.format != "PNG" or image.info.get("interlace"):
        return None
    tiles = image.tile
    raw = tiles[0].args if len(tiles) == 1 else None
    if not isinstance(raw, str) or raw not in _SPNG_MODES:
        return None
    try:
        pixels = pyspng.load(data)
    except Exception:  # pyspng raises bare Exceptions; Pillow then decides
        return None
    channels = 1 if pixels.ndim == 2 else pixels.shape[2]
    if pixels.dtype != np.uint8 or channels != len(raw) or pixels.shape[:2] != image.size[::-1]:
        return None
    return Image.frombuffer(raw, image.size, pixels, "raw", raw, 0, 1)
