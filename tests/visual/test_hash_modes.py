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
from collections.abc import Iterator
from pathlib import Path

import imagehash
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image
from visual_screens import desktop, encode

from agentctx.perception import color_distance, hamming, perceptual_hashes
from agentctx.perception.hashing import _phash
from fresh_python import run_python

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


def _phash_cases() -> Iterator[tuple[str, Image.Image]]:
    """Grey images whose exact DCT has many equal coefficients (flat, gradients, stripes,
    checkerboards: where float noise would decide bits), and scenes and noise."""
    for level in (0, 1, 77, 128, 254, 255):
        yield f"flat {level}", Image.new("L", (1280, 800), level)
    for width, height in ((1280, 800), (33, 7), (7, 33), (2560, 1600)):
        across = np.tile(np.linspace(0, 255, width), (height, 1))
        down = np.tile(np.linspace(0, 255, height), (width, 1)).T
        for name, ramp in (
            ("across", across),
            ("back", across[:, ::-1]),
            ("down", down),
            ("diagonal", (across + down) / 2),
        ):
            grey = np.ascontiguousarray(ramp.astype(np.uint8))
            yield f"{name} {width}x{height}", Image.fromarray(grey)
    for period in (2, 8, 32, 64):
        band = (np.arange(256) // period % 2 * 255).astype(np.uint8)
        stripes = np.tile(band, (256, 1))
        yield f"stripes {period}", Image.fromarray(stripes)
        yield f"stripes {period} down", Image.fromarray(np.ascontiguousarray(stripes.T))
        cells = np.add.outer(np.arange(256), np.arange(256)) // period % 2 * 255
        yield f"checkerboard {period}", Image.fromarray(cells.astype(np.uint8))
    for scene in range(0, 41, 4):
        yield f"scene {scene}", desktop(scene, size=(640, 400)).convert("L")
    rng = np.random.default_rng(7)
    for case in range(20):
        shape = (int(rng.integers(8, 300)), int(rng.integers(8, 300)))
        yield f"noise {case}", Image.fromarray(rng.integers(0, 256, shape, dtype=np.uint8))


def test_phash_is_imagehash_phash() -> None:
    """agentctx computes phash without scipy, bit for bit as imagehash does, also where
    the exact coefficients tie (a flat image's are all zero): stored hashes and new ones
    must compare."""
    differing = [
        (name, str(_phash(image)), str(imagehash.phash(image)))
        for name, image in _phash_cases()
        if str(_phash(image)) != str(imagehash.phash(image))
    ]
    assert differing == []


def test_hashing_a_screenshot_leaves_scipy_unloaded(tmp_path: Path) -> None:
    """An engine's first screenshot does not wait for scipy to load (imagehash's phash
    imports it: 200-370 ms): nothing on the image path imports it, nor ``numpy.ma``."""
    script = f"""
        import sys
        from agentctx import ContextEngine
        from agentctx.perception import perceptual_hashes
        from visual_screens import desktop, encode
        data = encode(desktop(3))
        hashes = perceptual_hashes(data)
        masked = "numpy.ma" in sys.modules  # np.median imports it on its first call: 10 ms
        with ContextEngine(url="sqlite:///{tmp_path}/a.db", home="{tmp_path}/home") as engine:
            session = engine.create_session(user_id="u", agent_id="a")
            session.add_message("user", "the screen", images=[data])
            session.add_message("user", "again", images=[encode(desktop(3, cursor=(641, 400)))])
            parts = [event.parts[-1] for event in session.events()]
        assert parts[1].dedup_distance is not None, parts
        scipy = sorted(name for name in sys.modules if name.startswith("scipy"))
        print(hashes.phash, masked, scipy)
        """
    done = run_python(script, cwd=Path(__file__).parent, timeout=240)
    phash, masked, loaded = done.stdout.split(maxsplit=2)
    assert len(phash) == 16
    assert masked == "False"
    assert loaded.strip() == "[]"
