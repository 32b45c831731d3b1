"""Perceptual hashes of an image, computed on a downscaled decode.

A 1280x800 screenshot has a million pixels; the hashes look at 64 (ahash, dhash) or
1,024 (phash). So the image is decoded once, as small as its format allows (JPEG: the
decoder's draft mode scales by up to 8 while decoding), reduced once by box averaging,
and every hash and the mean colour are taken from that one small image: hashing costs
the decode plus about one pass over the decoded pixels. A PNG has no draft mode, and
its decode is most of the time; the rest, imagehash's resizes and DCT on the small
image included, is under a millisecond at 1280x800; an 8-bit PNG (a screenshot) is
decoded by libspng (:mod:`agentctx.perception.decode`).
"""

from __future__ import annotations

import io
from concurrent.futures import Future
from dataclasses import dataclass
from math import ceil

import imagehash
import numpy as np
from PIL import Image, UnidentifiedImageError

from agentctx.errors import InvalidInput
from agentctx.perception.decode import decoded_png
from agentctx.perception.pool import image_pool

# The reduced image's long side: comfortably above phash's 32x32 input, so the
# hashes match those of the full-size image (a test pins that).
_WORK_SIDE = 128
# The largest box of one reduce. Past it Pillow's reduce gets slower, not faster (a
# 30x30 box over a 3840x2160 image takes twice a 20x20 one's time), and a larger small
# image costs imagehash next to nothing. At 20, images under 2688 pixels on their long
# side (2560x1600 included) keep the hashes they had before the cap.
_MAX_FACTOR = 20
# The smallest reduction worth its drift: below 4 (images under 512 pixels on their long
# side) the hashes of a 2x reduced image were measured up to 6 bits from the full one's.
_MIN_FACTOR = 4

# phash as imagehash computes it: the image as 32x32 grey, the 8x8 lowest frequencies of
# its 2-D DCT-II (unnormalized, scipy's), each bit whether one is above their median.
# Here the DCT is two products with the cosine rows it keeps: imagehash's own phash
# imports scipy.fftpack on its first call, 200-370 ms that an agent's first screenshot
# waited for (270 ms of it with nothing else running), and nothing else agentctx runs
# needs scipy.
_PHASH_BITS = 8
_PHASH_SIDE = 32
_DCT_ROWS = 2.0 * np.cos(
    np.pi * np.outer(np.arange(_PHASH_BITS), 2 * np.arange(_PHASH_SIDE) + 1) / (2 * _PHASH_SIDE)
)
# The products leave float noise (about 1e-11 on coefficients up to 1e6) where scipy's
# FFT gives exact values: a flat image's or a gradient's zero coefficients. Rounded
# away, so that noise never decides a bit.
_DCT_DECIMALS = 6


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
            decoded = decoded_png(image, data)
            if decoded is not None:
                small = _reduced(decoded)
            else:
                scale = max(image.size) / _WORK_SIDE
                if scale >= _MIN_FACTOR:
                    # JPEG: decode at 1/2, 1/4 or 1/8 scale, never below the work size.
                    image.draft("RGB", (ceil(image.width / scale), ceil(image.height / scale)))
                image.load()
                small = _reduced(image)
    except (UnidentifiedImageError, OSError, ValueError) as exc:
        raise InvalidInput(f"not a readable image: {exc}") from exc
    rgb = np.asarray(small, dtype=np.float32).reshape(-1, 3).mean(axis=0)
    mean_color = "".join(f"{round(float(c)):02x}" for c in rgb)
    grey = small.convert("L")
    return ImageHashes(
        phash=str(_phash(grey)),
        dhash=str(imagehash.dhash(grey)),
        ahash=str(imagehash.average_hash(grey)),
        mean_color=mean_color,
    )


def _phash(grey: Image.Image) -> imagehash.ImageHash:
    """``imagehash.phash(grey)``, without scipy (see ``_DCT_ROWS``)."""
    pixels = np.asarray(
        grey.resize((_PHASH_SIDE, _PHASH_SIDE), Image.Resampling.LANCZOS), dtype=np.float64
    )
    low = np.round(_DCT_ROWS @ pixels @ _DCT_ROWS.T, _DCT_DECIMALS)
    return imagehash.ImageHash(low > _median(low))


def _median(values: np.ndarray) -> float:
    """``np.median(values)``, the same float: its first call imports ``numpy.ma`` (10 ms,
    on an agent's first screenshot) to check for a masked array."""
    ordered = np.sort(values, axis=None)
    middle = ordered.size // 2
    if ordered.size % 2:
        return float(ordered[middle])
    return float((ordered[middle - 1] + ordered[middle]) / 2)


def hash_in_background(data: bytes) -> Future[ImageHashes]:
    """:func:`perceptual_hashes` of ``data`` on a pool thread.

    Pillow releases the interpreter lock while it decodes and reduces, so the caller
    can do other work meanwhile (an append writes the image's bytes and reads the
    session's latest image) on the other core. ``result()`` raises what
    ``perceptual_hashes`` raises.
    """
    return image_pool().submit(perceptual_hashes, data)


def _reduced(image: Image.Image) -> Image.Image:
    if image.mode not in ("L", "RGB"):
        # reduce() works on 8-bit bands only: palette (GIF, optimised PNG), 1-bit and
        # 16-bit images are converted first. So is an image with alpha (a macOS
        # screenshot): reduce() would premultiply it, two full-size passes more (at
        # 1280x800 six times the reduce's own cost), and the hashes, as imagehash's,
        # look at the colour bands only.
        image = image.convert("RGB")
    factor = min(_MAX_FACTOR, max(image.size) // _WORK_SIDE)
    # Reduce first (box averaging in the decoded mode), then convert the small image. A
    # small image is hashed as it is: reducing it saves little and moves its hashes.
    small = image.reduce(factor) if factor >= _MIN_FACTOR else image
    return small if small.mode == "RGB" else small.convert("RGB")


def hamming(first: str, second: str) -> int:
    """Bits that differ between two hashes of equal length (hex strings)."""
    if len(first) != len(second):
        raise InvalidInput(f"hashes of different lengths: {first!r}, {second!r}")
    return (int(first, 16) ^ int(second, 16)).bit_count()


def color_distance(first: str, second: str) -> int:
    """The largest per-channel difference between two ``rrggbb`` colours."""
    return max(abs(int(first[i : i + 2], 16) - int(second[i : i + 2], 16)) for i in (0, 2, 4))
