"""An 8-bit PNG is decoded by libspng (``pyspng``) into the same pixels Pillow gives.

Hashes are stored and compared with hashes computed later, possibly on a machine
without ``pyspng`` (no wheel for its platform): both decodes must give the same hashes,
bit for bit, and every image libspng does not take (palette, 16-bit, grey with alpha,
interlaced, broken) must go to Pillow, which still refuses what is not an image.
"""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image
from visual_screens import desktop, encode

from agentctx.context.images import render_image
from agentctx.errors import InvalidInput
from agentctx.events import ImagePart
from agentctx.perception import decode, perceptual_hashes

pytest.importorskip("pyspng", reason="pyspng has no wheel for this platform")


def _translucent(image: Image.Image) -> Image.Image:
    rgba = image.convert("RGBA")
    alpha = np.full((image.height, image.width), 255, dtype=np.uint8)
    alpha[:40, :60] = 90
    rgba.putalpha(Image.fromarray(alpha))
    return rgba


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L"])
def test_libspng_decodes_the_pixels_pillow_decodes(mode: str) -> None:
    image = desktop(5, size=(643, 401))  # odd sizes: no row padding is assumed
    source = _translucent(image) if mode == "RGBA" else image.convert(mode)
    data = encode(source, compress_level=6)
    with Image.open(io.BytesIO(data)) as opened:
        decoded = decode.decoded_png(opened, data)
    assert decoded is not None
    assert decoded.size == (643, 401)
    assert decoded.mode == mode
    with Image.open(io.BytesIO(data)) as pillow:
        assert decoded.tobytes() == pillow.tobytes()


@pytest.mark.parametrize("mode", ["RGB", "RGBA", "L", "P"])
def test_hashes_are_the_same_with_and_without_libspng(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = desktop(9, size=(2560, 1600))
    if mode == "RGBA":
        image = _translucent(image)
    elif mode == "P":
        image = image.convert("P", palette=Image.Palette.ADAPTIVE, colors=64)
    else:
        image = image.convert(mode)
    data = encode(image)
    with_spng = perceptual_hashes(data)
    monkeypatch.setattr(decode, "pyspng", None)
    assert perceptual_hashes(data) == with_spng


def _png(image: Image.Image, **options: object) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG", **options)
    return buffer.getvalue()


def test_what_libspng_does_not_take_goes_to_pillow() -> None:
    image = desktop(2, size=(320, 200))
    grey = np.asarray(image.convert("L"), dtype="<u2")
    others = {
        "palette": _png(image.convert("P", palette=Image.Palette.ADAPTIVE, colors=32)),
        "16-bit grey": _png(Image.frombytes("I;16", image.size, grey.tobytes())),
        "grey with alpha": _png(image.convert("LA")),
        "jpeg": encode(image, "JPEG", quality=85),
    }
    for name, data in others.items():
        with Image.open(io.BytesIO(data)) as opened:
            assert decode.decoded_png(opened, data) is None, name
        assert len(perceptual_hashes(data).phash) == 16, name


def test_a_broken_png_is_refused_as_before() -> None:
    data = encode(desktop(1, size=(640, 400)))
    truncated = data[: len(data) // 2]
    with pytest.raises(InvalidInput, match="not a readable image"):
        perceptual_hashes(truncated)
    corrupt = bytearray(data)
    corrupt[len(data) // 2 : len(data) // 2 + 64] = bytes(64)  # a damaged IDAT
    with pytest.raises(InvalidInput, match="not a readable image"):
        perceptual_hashes(bytes(corrupt))


@pytest.mark.parametrize("mode", ["RGB", "RGBA"])
def test_a_window_downscales_the_same_image_with_and_without_libspng(
    mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    image = desktop(4)
    data = encode(_translucent(image) if mode == "RGBA" else image)
    part = ImagePart(
        image_id="img_1",
        blob_id="b" * 64,
        media_type="image/png",
        width=image.width,
        height=image.height,
        size=len(data),
    )
    with_spng = render_image(data, part, 768)
    monkeypatch.setattr(decode, "pyspng", None)
    assert render_image(data, part, 768) == with_spng
    assert (with_spng.width, with_spng.height) == (768, 480)
