"""Token counting.

The estimator here is what the event log records as ``token_estimate`` when an
event is written. It is deliberately cheap (it runs on every append) and
CJK-aware: CJK characters cost far more tokens per character than Latin text.
"""

from __future__ import annotations

import math

# Code point ranges counted as CJK (ideographs, kana, hangul, CJK punctuation, full-width forms).
_CJK_RANGES = (
    (0x3000, 0x303F),
    (0x3040, 0x30FF),
    (0x3400, 0x4DBF),
    (0x4E00, 0x9FFF),
    (0xAC00, 0xD7AF),
    (0xF900, 0xFAFF),
    (0xFF00, 0xFFEF),
    (0x20000, 0x2FA1F),
)
_CJK_CHARS_PER_TOKEN = 1.8
_OTHER_CHARS_PER_TOKEN = 4.0


def _is_cjk(code: int) -> bool:
    return any(low <= code <= high for low, high in _CJK_RANGES)


def estimate_text_tokens(text: str) -> int:
    """Estimate the tokens of ``text`` (CJK ≈ 1.8 chars/token, other ≈ 4)."""
    if not text:
        return 0
    if text.isascii():
        return math.ceil(len(text) / _OTHER_CHARS_PER_TOKEN)
    cjk = sum(1 for char in text if ord(char) >= 0x3000 and _is_cjk(ord(char)))
    other = len(text) - cjk
    return math.ceil(cjk / _CJK_CHARS_PER_TOKEN + other / _OTHER_CHARS_PER_TOKEN)


def estimate_image_tokens(width: int, height: int) -> int:
    """Image tokens by OpenAI's published high-detail formula.

    The image is scaled to fit 2048x2048, then its short side to 768 px; it
    costs 85 tokens plus 170 per 512 px tile.
    """
    if width <= 0 or height <= 0:
        return 85
    scale = min(1.0, 2048 / max(width, height))
    w, h = width * scale, height * scale
    scale = min(1.0, 768 / min(w, h))
    w, h = w * scale, h * scale
    tiles = math.ceil(w / 512) * math.ceil(h / 512)
    return 85 + 170 * tiles
