"""An image's header, read before anything is decoded.

Decoding costs memory and time in proportion to the pixels, and a small file can
declare enormous dimensions (a decompression bomb: a few kilobytes of PNG that
inflate to gigabytes). So an image is measured from its header first, and refused
with :class:`~agentctx.errors.ImageTooLarge` past ``max_pixels``, before any decode.
"""

from __future__ import annotations

import io
import warnings
from dataclasses import dataclass

from PIL import Image, UnidentifiedImageError

from agentctx.errors import ImageTooLarge, InvalidInput

MEDIA_TYPES = {
    "PNG": "image/png",
    "JPEG": "image/jpeg",
    "WEBP": "image/webp",
    "GIF": "image/gif",
}
"""The image formats agentctx stores, by Pillow's format name."""


@dataclass(frozen=True, slots=True)
class ImageHeader:
    """What an image's header says: its size and media type."""

    width: int
    height: int
    media_type: str


def read_header(data: bytes, *, max_pixels: int, where: str = "image") -> ImageHeader:
    """The header of the image in ``data``; ``InvalidInput`` if it is not a PNG, JPEG,
    WebP or GIF, ``ImageTooLarge`` if it has more than ``max_pixels`` pixels."""
    try:
        with warnings.catch_warnings():
            # Pillow warns (and past twice its own limit raises) on large images; the
            # limit that counts here is agentctx's, checked below.
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(io.BytesIO(data)) as image:
                width, height = image.size
                media_type = MEDIA_TYPES.get(image.format or "")
    except Image.DecompressionBombError:
        raise ImageTooLarge(f"{where} has more pixels than max_image_pixels={max_pixels}") from None
    except (UnidentifiedImageError, OSError, ValueError, SyntaxError) as exc:
        raise InvalidInput(f"{where} is not a readable image: {type(exc).__name__}") from None
    if media_type is None:
        raise InvalidInput(f"{where}: format not supported (use PNG, JPEG, WebP or GIF)")
    if width < 1 or height < 1:
        raise InvalidInput(f"{where} has no pixels")
    if width * height > max_pixels:
        raise ImageTooLarge(
            f"{where} is {width}x{height} pixels, more than max_image_pixels={max_pixels}"
        )
    return ImageHeader(width, height, media_type)
