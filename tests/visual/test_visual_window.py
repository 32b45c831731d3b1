"""How windows send images: downscaled to ``image_max_width``, priced at that size.

Guarantees: an image wider than ``image_max_width`` (768 by default) is sent at that
width in its own format family, never upscaled; ``image_max_width=None`` sends the
stored bytes; ``window.tokens`` counts each image by the provider's formula at the size
sent; ``to_anthropic()`` carries images as base64 sources; kept frames of older
compacted turns go at low detail.
"""

from __future__ import annotations

import base64
import io
from pathlib import Path

import pytest
from PIL import Image
from visual_screens import (
    BIG,
    HEIGHT,
    WIDTH,
    content_parts,
    desktop,
    distinct_screens,
    encode,
    image_urls,
    open_engine,
    screen_turn,
    screenshot,
)

from agentctx import ContextEngine
from agentctx.sessions.session import Session
from agentctx.tokens import image_tokens


def decoded(url: str) -> tuple[str, bytes]:
    head, _, data = url.partition(",")
    return head.removeprefix("data:").removesuffix(";base64"), base64.b64decode(data)


def size_and_format(data: bytes) -> tuple[tuple[int, int], str | None]:
    with Image.open(io.BytesIO(data)) as image:
        return image.size, image.format


def one_screenshot_session(engine: ContextEngine, data: bytes) -> Session:
    session = engine.create_session(user_id="u1")
    with session.turn() as turn:
        call = turn.add_tool_call("computer", {"action": "screenshot"})
        turn.add_tool_result(call.call_id, "ok", images=[data])
    return session


@pytest.mark.parametrize(
    ("fmt", "media_type"),
    [("PNG", "image/png"), ("JPEG", "image/jpeg"), ("WEBP", "image/webp")],
)
def test_images_are_downscaled_to_the_max_width(
    db_url: str, home: Path, fmt: str, media_type: str
) -> None:
    shot = screenshot(1, fmt=fmt)
    with open_engine(db_url, home) as engine:
        session = one_screenshot_session(engine, shot)
        window = session.build_context(budget=BIG, strategy="full")
        (url,) = image_urls(window)
        media, data = decoded(url)
        assert media == media_type
        assert size_and_format(data) == ((768, 480), fmt)
        full = session.build_context(budget=BIG, strategy="full", config={"image_max_width": None})
        (url,) = image_urls(full)
        assert decoded(url) == (media_type, shot)  # the stored bytes, untouched
        # Tokens: each image priced at the size it is sent at, nothing else differs.
        small, large = image_tokens(768, 480), image_tokens(WIDTH, HEIGHT)
        assert small < large
        assert full.tokens - window.tokens == large - small
        assert window.report.images.image_tokens == small
        # The stored original is what restore_image returns, not the downscaled copy.
        (image_id,) = window.report.images.inline
        assert engine.restore_image(image_id, user_id="u1") == shot


def test_narrow_images_are_not_upscaled_and_providers_price_them(db_url: str, home: Path) -> None:
    narrow = encode(desktop(2, size=(640, 400)))
    with open_engine(db_url, home, context={"image_provider": "anthropic"}) as engine:
        session = one_screenshot_session(engine, narrow)
        window = session.build_context(budget=BIG, strategy="full")
        (url,) = image_urls(window)
        assert decoded(url) == ("image/png", narrow)
        wide = one_screenshot_session(engine, screenshot(4))
        wide_window = wide.build_context(budget=BIG, strategy="full")
        assert wide_window.report.images.image_tokens == image_tokens(768, 480, "anthropic")
        assert window.report.images.image_tokens == image_tokens(640, 400, "anthropic")
        assert window.tokens > image_tokens(640, 400, "anthropic")


def test_to_anthropic_carries_the_image_as_a_base64_source(db_url: str, home: Path) -> None:
    with open_engine(db_url, home) as engine:
        session = one_screenshot_session(engine, screenshot(5, fmt="JPEG"))
        window = session.build_context(budget=BIG, strategy="full")
        converted = window.to_anthropic()

        def blocks(items: list[dict[str, object]]) -> list[dict[str, object]]:
            found = []
            for block in items:
                found.append(block)
                inner = block.get("content")
                if isinstance(inner, list):
                    found.extend(blocks(inner))
            return found

        images = [
            b for m in converted["messages"] for b in blocks(m["content"]) if b["type"] == "image"
        ]
        assert len(images) == 1
        source = images[0]["source"]
        assert isinstance(source, dict)
        assert source["type"] == "base64" and source["media_type"] == "image/jpeg"
        assert size_and_format(base64.b64decode(source["data"])) == ((768, 480), "JPEG")
        assert not [p for p in content_parts(window) if p.get("type") == "image"]


def test_older_compacted_turns_send_kept_frames_at_low_detail(db_url: str, home: Path) -> None:
    with open_engine(db_url, home, jobs="inline") as engine:
        session = engine.create_session(user_id="u1")
        screen_turn(session, distinct_screens(0, 3))
        screen_turn(session, distinct_screens(3, 3))
        window = session.build_context(budget=BIG, strategy="full")
        parts = [p for p in content_parts(window) if p.get("type") == "image_url"]
        assert [p["image_url"]["detail"] for p in parts] == ["low", "low", "auto", "auto"]
        sizes = [size_and_format(decoded(p["image_url"]["url"])[1])[0] for p in parts]
        assert sizes[:2] == [(512, 320)] * 2 and sizes[2:] == [(768, 480)] * 2
        report = window.report.images
        assert len(report.low_detail) == 2 and len(report.placeholders) == 2
        assert report.image_tokens == 2 * image_tokens(512, 320, detail="low") + 2 * image_tokens(
            768, 480
        )
