"""Screenshots, engines and window readers shared by the visual-context tests.

A 1280x800 desktop: a taskbar, overlapping windows with title bars, lines of text and
buttons, and a mouse cursor. ``scene`` picks the layout (different scenes are
different screens); ``cursor`` moves only the pointer (a near-duplicate of the same
scene, as an agent's "take another screenshot" gives).
"""

from __future__ import annotations

import functools
import io
import random
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from PIL import Image, ImageDraw

from agentctx import ContextEngine
from agentctx.context.window import ContextWindow
from agentctx.events import Event
from agentctx.sessions.session import Session

WIDTH, HEIGHT = 1280, 800
_WORDS = ("invoice", "total", "account", "order", "refund", "status", "pending", "shipped")


def desktop(
    scene: int = 0,
    *,
    cursor: tuple[int, int] = (640, 400),
    size: tuple[int, int] = (WIDTH, HEIGHT),
) -> Image.Image:
    """The desktop of ``scene`` with the mouse pointer at ``cursor``."""
    rng = random.Random(scene)
    width, height = size
    image = Image.new("RGB", size, (34 + scene * 7 % 60, 84, 120 + scene * 13 % 90))
    draw = ImageDraw.Draw(image)
    draw.rectangle((0, height - 40, width, height), fill=(24, 24, 28))
    for slot in range(6):
        draw.rectangle((8 + slot * 52, height - 34, 52 + slot * 52, height - 6), fill=(70, 70, 90))
    for _ in range(2 + scene % 3):
        w, h = rng.randint(width // 3, width // 2), rng.randint(height // 3, height * 2 // 3)
        x, y = rng.randint(0, width - w), rng.randint(0, height - 40 - h)
        body = tuple(rng.randint(170, 255) for _ in range(3))
        draw.rectangle((x, y, x + w, y + h), fill=body, outline=(40, 40, 40))
        draw.rectangle((x, y, x + w, y + 28), fill=tuple(rng.randint(20, 120) for _ in range(3)))
        draw.text((x + 10, y + 8), f"Window {scene}-{rng.randint(1, 99)}", fill=(255, 255, 255))
        for line in range(min(12, (h - 60) // 18)):
            text = " ".join(rng.choice(_WORDS) for _ in range(rng.randint(3, 8)))
            draw.text((x + 14, y + 40 + line * 18), text, fill=(20, 20, 20))
        draw.rectangle((x + w - 100, y + h - 36, x + w - 14, y + h - 10), fill=(50, 110, 200))
    cx, cy = cursor
    draw.polygon([(cx, cy), (cx, cy + 18), (cx + 5, cy + 13), (cx + 12, cy + 13)], fill=(0, 0, 0))
    return image


def flat(color: tuple[int, int, int], size: tuple[int, int] = (WIDTH, HEIGHT)) -> Image.Image:
    """A screen of one colour (a blank page, a full-screen error)."""
    return Image.new("RGB", size, color)


def encode(image: Image.Image, fmt: str = "PNG", **options: object) -> bytes:
    """``image`` as PNG, JPEG or WebP bytes (PNG at a fast compression level)."""
    if fmt == "PNG":
        options.setdefault("compress_level", 1)
    buffer = io.BytesIO()
    image.save(buffer, fmt, **options)
    return buffer.getvalue()


@functools.lru_cache(maxsize=128)
def screenshot(scene: int = 0, *, cursor: tuple[int, int] = (640, 400), fmt: str = "PNG") -> bytes:
    """A 1280x800 desktop screenshot, encoded (cached: drawing costs tens of ms)."""
    return encode(desktop(scene, cursor=cursor), fmt)


# Scenes no two of which are near-duplicates (phash distance > 12 between any pair).
DISTINCT_SCENES = tuple(s for s in range(40) if s not in (6, 21, 24, 27, 33))


def distinct_screens(start: int, count: int) -> list[bytes]:
    """``count`` screenshots of different screens, from the ``start``-th distinct scene."""
    return [screenshot(DISTINCT_SCENES[(start + i) % len(DISTINCT_SCENES)]) for i in range(count)]


@functools.lru_cache(maxsize=64)
def drifting(step: int, scene: int = 3) -> bytes:
    """Scene ``scene`` with a dark panel ``80 * step`` px wide sliding in from the left:
    each step is a small change, many steps a large one."""
    image = desktop(scene)
    ImageDraw.Draw(image).rectangle((0, 0, 80 * step, HEIGHT - 40), fill=(10, 10, 10))
    return encode(image)


def error_dialog(scene: int = 0) -> bytes:
    """Scene ``scene`` dimmed, under a modal error dialog."""
    image = Image.blend(desktop(scene), flat((0, 0, 0)), 0.5)
    draw = ImageDraw.Draw(image)
    draw.rectangle((440, 300, 840, 480), fill=(245, 245, 245), outline=(200, 0, 0), width=3)
    draw.text((470, 330), "Error: the file could not be saved", fill=(200, 0, 0))
    draw.rectangle((740, 430, 820, 462), fill=(200, 40, 40))
    return encode(image)


# Engines ------------------------------------------------------------------------------


@contextmanager
def open_engine(db_url: str, home: Path, **settings: Any) -> Iterator[ContextEngine]:
    """An engine on ``db_url``: sessions never expire, embeddings offline, ``settings``
    on top (``visual={...}``, ``context={...}``, ``jobs=...``; default "manual")."""
    settings.setdefault("session_ttl", None)
    settings.setdefault("jobs", "manual")
    settings.setdefault("embeddings", {"provider": "hashing"})
    with ContextEngine(url=db_url, home=home, **settings) as engine:
        yield engine


def screen_turn(
    session: Session,
    frames: Sequence[bytes],
    *,
    errors: Sequence[int] = (),
    pinned: Sequence[int] = (),
) -> tuple[str, list[Event]]:
    """A computer-use turn: a request, then one screenshot action per frame (a tool call
    and its result carrying the image); ``errors``/``pinned``: indexes of frames whose
    result failed / carries ``keep_images``. Returns the turn id and the result events."""
    results = []
    with session.turn() as turn:
        turn.add_message("user", "Open the Q3 report and export it as PDF")
        for index, frame in enumerate(frames):
            call = turn.add_tool_call("computer", {"action": "screenshot", "step": index})
            results.append(
                turn.add_tool_result(
                    call.call_id,
                    "Save failed: permission denied" if index in errors else f"step {index} done",
                    images=[frame],
                    is_error=index in errors,
                    metadata={"keep_images": True} if index in pinned else None,
                )
            )
        turn.add_message("assistant", "Exported.")
    return turn.turn_id, results


# Windows ------------------------------------------------------------------------------

PLACEHOLDER = re.compile(r"\[Visual_Placeholder: (img_[0-9a-f]+)\]")
BIG = 500_000  # a budget every test window fits in


def content_parts(window: ContextWindow) -> list[dict[str, Any]]:
    """Every content part of the window's messages, in order (text content as a part)."""
    parts: list[dict[str, Any]] = []
    for message in window.messages:
        content = message.get("content")
        if isinstance(content, list):
            parts.extend(content)
        elif isinstance(content, str):
            parts.append({"type": "text", "text": content})
    return parts


def image_urls(window: ContextWindow) -> list[str]:
    """The data URLs of the images the window sends, in order."""
    return [p["image_url"]["url"] for p in content_parts(window) if p.get("type") == "image_url"]


def placeholders(window: ContextWindow) -> list[str]:
    """The image ids of the window's ``[Visual_Placeholder: …]`` lines, in order."""
    return [
        image_id
        for part in content_parts(window)
        if part.get("type") == "text"
        for image_id in PLACEHOLDER.findall(part["text"])
    ]
