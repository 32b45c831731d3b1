"""Perceptual hashes of the downscaled decode equal imagehash's on the full-size image.

``perceptual_hashes`` decodes an image once, reduces it once and takes every hash and
the mean colour from the small copy. Whatever the image's size and mode, the result
must stay what ``imagehash`` gives on the full-size image, and the mean colour what the
full image's pixels average to: stored hashes are compared with hashes computed later,
so a shortcut that drifted would break deduplication.

The bounds: phash (dedup's default) within 2 bits of 64; dhash and ahash within 3, as
each of their bits compares a pixel with a neighbour or the mean, and a pixel a fraction
of a grey level from it flips with any resampling (1280x800 scene 7's ahash is 3 bits
off); the mean colour within 2 of 255 per channel.
"""

from __future__ import annotations

import io

import imagehash
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from visual_screens import desktop, encode

from agentctx.perception import color_distance, hamming, perceptual_hashes

SIZES = (
    (1280, 800),
    (2560, 1600),
    (1920, 1080),
    (800, 1280),
    (3840, 2160),
    (333, 217),
    (640, 400),
    (520, 330),
)
MODES = ("RGB", "RGBA", "P", "L", "I;16", "JPEG", "WEBP")


def _encoded(image: Image.Image, mode: str) -> bytes:
    """``image`` stored as a screenshot of ``mode`` would be."""
    if mode == "JPEG":
        return encode(image, "JPEG", quality=90)
    if mode == "WEBP":
        return encode(image, "WEBP", quality=90)
    if mode == "RGBA":
        # Translucent in part, as a screenshot with a transparent window edge is.
        rgba = image.convert("RGBA")
        alpha = np.full((image.height, image.width), 255, dtype=np.uint8)
        alpha[: image.height // 5, : image.width // 3] = 96
        rgba.putalpha(Image.fromarray(alpha))
        return encode(rgba)
    if mode == "P":
        return encode(image.convert("P", palette=Image.Palette.ADAPTIVE, colors=64))
    if mode == "I;16":
        # 16-bit grey, holding the 8-bit levels (Pillow clips 16-bit values to 255 when
        # it converts to 8 bits, for imagehash as for agentctx).
        grey = np.asarray(image.convert("L"), dtype="<u2")
        return encode(Image.frombytes("I;16", image.size, grey.tobytes()))
    return encode(image.convert(mode))


def _full_size(data: bytes) -> tuple[str, str, str, str]:
    """phash, dhash, ahash and mean colour, computed on the full-size decode."""
    with Image.open(io.BytesIO(data)) as image:
        image.load()
        rgb = np.asarray(image.convert("RGB"), dtype=np.float64).reshape(-1, 3).mean(axis=0)
        return (
            str(imagehash.phash(image)),
            str(imagehash.dhash(image)),
            str(imagehash.average_hash(image)),
            "".join(f"{round(float(c)):02x}" for c in rgb),
        )


@settings(max_examples=14, deadline=None, derandomize=True)
@given(
    scene=st.integers(min_value=0, max_value=40),
    size=st.sampled_from(SIZES),
    mode=st.sampled_from(MODES),
)
def test_hashes_of_the_reduced_image_match_the_full_size_image(
    scene: int, size: tuple[int, int], mode: str
) -> None:
    data = _encoded(desktop(scene, size=size), mode)
    ours = perceptual_hashes(data)
    phash, dhash, ahash, mean_color = _full_size(data)
    assert hamming(ours.phash, phash) <= 2, (ours.phash, phash)
    assert hamming(ours.dhash, dhash) <= 3, (ours.dhash, dhash)
    assert hamming(ours.ahash, ahash) <= 3, (ours.ahash, ahash)
    assert color_distance(ours.mean_color, mean_color) <= 2, (ours.mean_color, mean_color)


def test_every_mode_is_covered() -> None:
    """Each mode the property draws really decodes as that mode (a palette PNG as "P",
    16-bit grey as "I;16"), so the property exercises every conversion path."""
    image = desktop(3, size=(320, 200))
    opened = {}
    for mode in MODES:
        with Image.open(io.BytesIO(_encoded(image, mode))) as decoded:
            opened[mode] = (decoded.format, decoded.mode)
    assert opened["P"] == ("PNG", "P")
    assert opened["I;16"] == ("PNG", "I;16")
    assert opened["RGBA"] == ("PNG", "RGBA")
    assert opened["L"] == ("PNG", "L")
    assert opened["JPEG"] == ("JPEG", "RGB")
    assert opened["WEBP"][0] == "WEBP"
