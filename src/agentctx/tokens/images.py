"""Image tokens by each provider's published formula, from width and height."""

from __future__ import annotations

import base64
import binascii
import io
import math
from typing import Literal

from PIL import Image, UnidentifiedImageError

from agentctx.errors import InvalidInput

Provider = Literal["openai", "anthropic", "gemini"]
Detail = Literal["auto", "low", "high"]
PROVIDERS: tuple[str, ...] = ("openai", "anthropic", "gemini")
DETAILS: tuple[str, ...] = ("auto", "low", "high")

# OpenAI (GPT-4o class): fit in 2048x2048, then shrink the short side to 768,
# 85 tokens plus 170 per 512-pixel tile; "low" detail is a flat 85.
OPENAI_BASE_TOKENS = 85
OPENAI_TILE_TOKENS = 170
# The most a high-detail image can cost (768x2048 after scaling: 2x4 tiles).
OPENAI_MAX_TOKENS = OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * 8
# Anthropic: width * height / 750, after scaling down so the long edge is at most
# 1568 px and the image at most "~1,600 tokens". The pixel cap is the largest size
# Anthropic lists as not resized (784 x 1568), so every size in that list (1092 x
# 1092, 951 x 1268, 896 x 1344, 819 x 1456, 784 x 1568) is priced unscaled.
ANTHROPIC_PIXELS_PER_TOKEN = 750
ANTHROPIC_MAX_EDGE = 1568
ANTHROPIC_MAX_PIXELS = 784 * 1568
# Gemini: 258 tokens for an image of at most 384x384, else 258 per 768x768 tile.
GEMINI_TOKENS = 258
GEMINI_SMALL_EDGE = 384
GEMINI_TILE = 768


def image_tokens(
    width: int, height: int, provider: Provider | str = "openai", detail: Detail | str = "auto"
) -> int:
    """Tokens an image of ``width`` x ``height`` pixels costs with ``provider``.

    ``detail`` is OpenAI's: ``"low"`` is a flat 85 tokens, ``"high"`` and
    ``"auto"`` use the tile formula (``"auto"`` is priced as ``"high"``, the most
    the provider may charge). The other providers have no detail setting and
    accept any of the three values.
    """
    if provider not in PROVIDERS:
        raise InvalidInput(f"unknown image provider {provider!r}; accepted: {', '.join(PROVIDERS)}")
    if detail not in DETAILS:
        raise InvalidInput(f"unknown image detail {detail!r}; accepted: {', '.join(DETAILS)}")
    if (
        isinstance(width, bool)
        or isinstance(height, bool)
        or not isinstance(width, int)
        or not isinstance(height, int)
        or width <= 0
        or height <= 0
    ):
        raise InvalidInput(f"image size must be positive integers, got {width!r}x{height!r}")
    if provider == "openai":
        return OPENAI_BASE_TOKENS if detail == "low" else _openai_high(width, height)
    if provider == "anthropic":
        return _anthropic(width, height)
    return _gemini(width, height)


def estimate_image_tokens(width: int, height: int) -> int:
    """OpenAI high-detail tokens of an image (85 for a size that is not positive)."""
    if width <= 0 or height <= 0:
        return OPENAI_BASE_TOKENS
    return _openai_high(width, height)


def _openai_high(width: int, height: int) -> int:
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return OPENAI_BASE_TOKENS + OPENAI_TILE_TOKENS * tiles


def _anthropic(width: int, height: int) -> int:
    scale = min(
        1.0,
        ANTHROPIC_MAX_EDGE / max(width, height),
        math.sqrt(ANTHROPIC_MAX_PIXELS / (width * height)),
    )
    # Scaled sizes are whole pixels; flooring keeps the result within both limits.
    w = max(1, math.floor(width * scale)) if scale < 1 else width
    h = max(1, math.floor(height * scale)) if scale < 1 else height
    return math.ceil(w * h / ANTHROPIC_PIXELS_PER_TOKEN)


def _gemini(width: int, height: int) -> int:
    if width <= GEMINI_SMALL_EDGE and height <= GEMINI_SMALL_EDGE:
        return GEMINI_TOKENS
    return GEMINI_TOKENS * math.ceil(width / GEMINI_TILE) * math.ceil(height / GEMINI_TILE)


def image_size_from_data_url(url: str) -> tuple[int, int] | None:
    """Width and height of an image in a ``data:image/...;base64,`` URL, else None.

    Only the header is parsed (Pillow reads the size without decoding pixels).
    """
    if not url.startswith("data:"):
        return None
    header, sep, payload = url.partition(",")
    if not sep or not header.endswith(";base64"):
        return None
    try:
        data = base64.b64decode(payload, validate=False)
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except (
        binascii.Error,
        ValueError,
        OSError,
        UnidentifiedImageError,
        Image.DecompressionBombError,
    ):
        return None  # counted as an image of unknown size
    return int(width), int(height)
