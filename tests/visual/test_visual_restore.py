"""Restoring compressed images (seed 000, section 4.2): by id, in a window, as a tool.

Guarantees: every placeholder's id gives back the exact original bytes (their sha256 is
the blob id); ``build_context(restore_images=[id])`` shows that image in full; the
``restore_image`` tool validates its arguments and never reaches another session's image.
"""

from __future__ import annotations

import hashlib
import io
import json
from pathlib import Path

import pytest
from PIL import Image
from visual_screens import (
    BIG,
    HEIGHT,
    WIDTH,
    image_urls,
    open_engine,
    placeholders,
    screen_turn,
    screenshot,
)

from agentctx.compaction.visual import (
    RestoredImage,
    handle_restore_image,
    parse_restore_image_args,
    restore_image_tool,
)
from agentctx.errors import BlobNotFound, InvalidInput


def test_every_placeholder_restores_the_exact_original(db_url: str, home: Path) -> None:
    # PNG, JPEG and WebP screenshots: the original bytes come back, not a re-encoding.
    frames = [
        screenshot(0),
        screenshot(1, fmt="JPEG"),
        screenshot(2, fmt="WEBP"),
        screenshot(4, fmt="JPEG"),
        screenshot(5),
        screenshot(7),
    ]
    with open_engine(db_url, home, jobs="inline") as engine:
        session = engine.create_session(user_id="u1")
        screen_turn(session, frames)
        window = session.build_context(budget=BIG, strategy="full")
        ids = placeholders(window)
        assert len(ids) == 4 and len(set(ids)) == 4
        by_id = {f.image_id: f for f in session.images()}
        originals = {
            part.image_id: frame
            for frame, part in zip(
                frames, (p for e in session.events() for p in e.images), strict=True
            )
        }
        for image_id in ids:
            data = engine.restore_image(image_id, user_id="u1")
            assert data == originals[image_id]
            assert hashlib.sha256(data).hexdigest() == by_id[image_id].blob_id
            assert session.restore_image(image_id) == data

        # One placeholder restored in this window: it is an image again, the rest stay.
        restored = session.build_context(budget=BIG, strategy="full", restore_images=[ids[1]])
        assert placeholders(restored) == [ids[0], ids[2], ids[3]]
        assert len(image_urls(restored)) == len(image_urls(window)) + 1
        assert restored.tokens > window.tokens
        # Restoring is per window: the next window shows the placeholder again.
        again = session.build_context(budget=BIG, strategy="full")
        assert placeholders(again) == ids


def test_restore_image_tool_shapes() -> None:
    openai = restore_image_tool("openai")
    assert openai["type"] == "function" and openai["function"]["name"] == "restore_image"
    assert openai["function"]["parameters"]["required"] == ["image_id"]
    anthropic = restore_image_tool("anthropic")
    assert set(anthropic) == {"name", "description", "input_schema"}
    assert anthropic["input_schema"] == openai["function"]["parameters"]
    json.dumps(openai), json.dumps(anthropic)  # JSON-ready as sent to a provider
    with pytest.raises(InvalidInput):
        restore_image_tool("gemini")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "bad",
    [
        "{not json",
        "[1, 2]",
        {},
        {"image_id": 42},
        {"image_id": "img_XYZ"},
        {"image_id": "../../etc/passwd"},
        {"image_id": "img_ab12", "extra": 1},
    ],
)
def test_bad_tool_arguments_are_invalid_input(bad: object) -> None:
    with pytest.raises(InvalidInput, match="restore_image"):
        parse_restore_image_args(bad)  # type: ignore[arg-type]


def test_tool_call_restores_within_the_session_only(db_url: str, home: Path) -> None:
    frames = [screenshot(0), screenshot(1, fmt="JPEG"), screenshot(2)]
    with open_engine(db_url, home, jobs="inline") as engine:
        session = engine.create_session(user_id="u1")
        screen_turn(session, frames)
        (image_id,) = placeholders(session.build_context(budget=BIG, strategy="full"))
        for args in ({"image_id": image_id}, json.dumps({"image_id": image_id})):
            result = handle_restore_image(session, args)
            assert isinstance(result, RestoredImage)
            assert result.data == frames[1]
            assert (result.width, result.height, result.media_type) == (
                WIDTH,
                HEIGHT,
                "image/jpeg",
            )
            assert image_id in result.text() and "1280x800" in result.text()
            with Image.open(io.BytesIO(result.data)) as image:
                assert image.format == "JPEG"
        # The same user's other session cannot reach it through the tool...
        other = engine.create_session(user_id="u1")
        screen_turn(other, [screenshot(4)])
        with pytest.raises(BlobNotFound):
            handle_restore_image(other, {"image_id": image_id})
        # ...nor another user at all; an id nobody has is BlobNotFound too.
        with pytest.raises(BlobNotFound):
            engine.restore_image(image_id, user_id="mallory")
        with pytest.raises(BlobNotFound):
            handle_restore_image(session, {"image_id": "img_" + "0" * 24})
