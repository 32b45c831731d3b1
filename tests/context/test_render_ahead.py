"""A new screenshot's window copy is rendered ahead, on an image thread, as it is
appended: the window that shows it finds it ready (or waits for it under way) instead
of decoding, resizing and encoding it on the agent's thread."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import pytest
from tests.conftest import make_png

from agentctx import ContextEngine, Session
from agentctx.context import window_images
from agentctx.context.images import RENDERS_AHEAD, RenderedImage, RenderedImageCache, render_image
from agentctx.events import ImagePart
from agentctx.perception.pool import render_pool


def _image_urls(messages: list[dict[str, Any]]) -> list[str]:
    return [
        p["image_url"]["url"]
        for m in messages
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]


def _part(data: bytes, width: int, height: int, blob_id: str = "blob-1") -> ImagePart:
    return ImagePart(
        image_id="img_1",
        blob_id=blob_id,
        media_type="image/png",
        width=width,
        height=height,
        size=len(data),
    )


def _engine(tmp_path: Path, **settings: Any) -> ContextEngine:
    """An engine on a SQLite file, the hashing embedder, jobs run by hand."""
    return ContextEngine(
        url=f"sqlite:///{tmp_path / 'a.db'}",
        home=tmp_path / "home",
        embeddings={"provider": "hashing"},
        jobs="manual",
        **settings,
    )


@pytest.fixture
def busy_pool() -> Iterator[threading.Event]:
    """The render thread held until the event is set: a render submitted meanwhile
    waits in the queue, so a test can act while it is under way."""
    release = threading.Event()
    started = threading.Event()

    def hold() -> None:
        started.set()
        release.wait(30)

    held = render_pool().submit(hold)
    assert started.wait(30)
    yield release
    release.set()
    held.result(30)


def _screenshot(session: Session, seed: int) -> tuple[bytes, ImagePart]:
    shot = make_png(1280, 800, seed=seed)
    call = session.add_tool_call("screenshot", {})
    event = session.add_tool_result(call.call_id, content="screen", images=[shot])
    return shot, next(p for p in event.parts if isinstance(p, ImagePart))


def test_an_appended_screenshot_is_rendered_before_the_next_window_asks(
    tmp_path: Path,
) -> None:
    with _engine(tmp_path) as engine:
        session = engine.create_session("u1", "agent")
        session.add_message("user", "Open the settings page")
        session.build_context(budget=8000)  # an agent loop: windows are built here
        shot, part = _screenshot(session, seed=3)
        cache = engine.context_builder.rendered_images
        # No window since the append: the copy is there (or under way, and waited for).
        ahead = cache.get(part.blob_id, 768, None)
        assert ahead is not None
        assert (ahead.width, ahead.height) == (768, 480)
        assert ahead.url == render_image(shot, part, 768).url
        # The window sends that copy.
        window = session.build_context(budget=8000)
        assert _image_urls(window.messages) == [ahead.url]


def test_a_session_no_window_was_built_for_has_nothing_rendered_ahead(tmp_path: Path) -> None:
    """A session only recorded (an import, a recorder that never asks for windows) costs
    no renders; once a window was built for it, its new images are rendered ahead."""
    with _engine(tmp_path) as engine:
        cache = engine.context_builder.rendered_images
        recorded, agent_loop = (engine.create_session("u1", "agent") for _ in range(2))
        agent_loop.build_context(budget=8000)
        _, part = _screenshot(recorded, seed=8)
        assert cache.get(part.blob_id, 768, None) is None
        _, part = _screenshot(agent_loop, seed=9)
        assert cache.get(part.blob_id, 768, None) is not None
        # The recorded session once a window is built for it.
        recorded.build_context(budget=8000)
        _, part = _screenshot(recorded, seed=10)
        assert cache.get(part.blob_id, 768, None) is not None


def test_an_agent_with_no_inline_images_renders_nothing_ahead(tmp_path: Path) -> None:
    with _engine(tmp_path, context={"images": "placeholder"}) as engine:
        session = engine.create_session("u1", "agent")
        session.build_context(budget=8000)
        _, part = _screenshot(session, seed=4)
        assert engine.context_builder.rendered_images.get(part.blob_id, 768, None) is None


def test_a_window_waits_for_the_copy_under_way(busy_pool: threading.Event) -> None:
    cache = RenderedImageCache()
    data = make_png(1280, 800, seed=5)
    part = _part(data, 1280, 800)
    future = cache.render_ahead(data, part, 768)
    assert future is not None and not future.done()
    # Asked again while under way: nothing more starts.
    assert cache.render_ahead(data, part, 768) is None
    got: list[RenderedImage | None] = []
    reader = threading.Thread(target=lambda: got.append(cache.get(part.blob_id, 768, None)))
    reader.start()
    reader.join(0.2)
    assert reader.is_alive()  # waiting, not rendering on its own nor giving up
    busy_pool.set()
    reader.join(30)
    assert got and got[0] is not None
    assert got[0].url == render_image(data, part, 768).url
    # Kept: asked again, the same copy, and nothing starts.
    assert cache.get(part.blob_id, 768, None) == got[0]
    assert cache.render_ahead(data, part, 768) is None


def test_a_copy_under_way_when_the_cache_is_cleared_is_not_kept(
    busy_pool: threading.Event,
) -> None:
    """An erasure clears the cache: a copy rendered from bytes it erased must not come
    back into it when its render ends."""
    cache = RenderedImageCache()
    data = make_png(1280, 800, seed=6)
    part = _part(data, 1280, 800)
    future = cache.render_ahead(data, part, 768)
    assert future is not None
    cache.clear()
    busy_pool.set()
    future.result(30)
    _settled(future)
    assert cache.get(part.blob_id, 768, None) is None
    # A new render after the clear is kept.
    again = cache.render_ahead(data, part, 768)
    assert again is not None
    again.result(30)
    _settled(again)
    assert cache.get(part.blob_id, 768, None) is not None


def test_at_most_a_few_copies_are_rendered_ahead_at_once(busy_pool: threading.Event) -> None:
    """A burst of screenshots holds the bytes of a few only; the windows render the rest."""
    cache = RenderedImageCache()
    shots = [make_png(1280, 800, seed=20 + k) for k in range(RENDERS_AHEAD + 1)]
    parts = [_part(data, 1280, 800, blob_id=f"blob-{k}") for k, data in enumerate(shots)]
    started = [cache.render_ahead(data, part, 768) for data, part in zip(shots, parts, strict=True)]
    assert all(f is not None for f in started[:RENDERS_AHEAD]) and started[-1] is None
    busy_pool.set()
    for future in started[:RENDERS_AHEAD]:
        assert future is not None
        _settled(future)
    # Room again: the one left out starts now.
    assert cache.render_ahead(shots[-1], parts[-1], 768) is not None


def test_copies_rendered_ahead_never_delay_an_appends_hashes(
    tmp_path: Path, busy_pool: threading.Event
) -> None:
    """An image append waits for its perceptual hashes; they never queue behind the
    copies rendered ahead of windows."""
    with _engine(tmp_path) as engine:
        assert engine.settings.visual.dedup.enabled
        session = engine.create_session("u1", "agent")
        session.build_context(budget=8000)  # so that its screenshots are rendered ahead
        appended: list[int] = []

        def append_screens() -> None:
            for k in range(RENDERS_AHEAD + 2):
                call = session.add_tool_call("screenshot", {})
                event = session.add_tool_result(
                    call.call_id, content="screen", images=[make_png(1280, 800, seed=40 + k)]
                )
                appended.append(event.seq)

        writer = threading.Thread(target=append_screens)
        writer.start()
        writer.join(30)
        assert not writer.is_alive() and len(appended) == RENDERS_AHEAD + 2
        # The renders did queue behind the held thread meanwhile.
        assert len(engine.context_builder.rendered_images._pending) == RENDERS_AHEAD
        busy_pool.set()


def test_a_render_that_fails_leaves_the_window_to_render_it() -> None:
    cache = RenderedImageCache()
    broken = b"\x89PNG\r\n\x1a\n not really"
    part = _part(broken, 1280, 800)
    future = cache.render_ahead(broken, part, 768)
    assert future is not None
    with pytest.raises(Exception):  # noqa: B017 - whatever Pillow raises
        future.result(30)
    _settled(future)
    assert cache.get(part.blob_id, 768, None) is None


def test_an_image_that_fits_is_not_rendered() -> None:
    cache = RenderedImageCache()
    data = make_png(640, 400, seed=7)
    assert cache.render_ahead(data, _part(data, 640, 400), 768) is None
    assert cache.get("blob-1", 768, None) is None


def _settled(future: Future[RenderedImage]) -> None:
    """Wait until ``future`` and its done-callbacks ended: the one render thread runs a
    task's callbacks before it takes the next task."""
    future.exception(30)  # waits for it to end, however it ended
    render_pool().submit(lambda: None).result(30)


def _turn_with_screenshot(session: Session, seed: int) -> tuple[bytes, ImagePart]:
    with session.turn() as turn:
        turn.add_message("user", f"Check the screen, step {seed}")
        shot = make_png(1280, 800, seed=seed)
        call = turn.add_tool_call("screenshot", {})
        event = turn.add_tool_result(call.call_id, content="screen", images=[shot])
        turn.add_message("assistant", f"Step {seed} looks right.")
    return shot, next(p for p in event.parts if isinstance(p, ImagePart))


def test_a_compacted_turns_kept_frame_is_rendered_ahead_at_low_detail(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Once newer turns hold the full frames, the history shows an older turn's kept frame
    within 512x512: its copy is rendered when the turn's images are compacted (a job),
    not by the window that first shows it so."""
    with _engine(tmp_path) as engine:
        session = engine.create_session("u1", "agent")
        session.add_message("user", "Let's start")
        session.build_context(budget=20000)
        shot, part = _turn_with_screenshot(session, seed=21)
        cache = engine.context_builder.rendered_images
        assert cache.get(part.blob_id, 512, 512) is None  # the turn's images not compacted
        engine.jobs.run_pending()
        ahead = cache.get(part.blob_id, 512, 512)
        assert ahead is not None
        assert ahead.url == render_image(shot, part, 512, 512).url
        # Newer turns: the first turn's frame goes at low detail, from the copy made ahead.
        for seed in (22, 23):
            _turn_with_screenshot(session, seed)
        engine.jobs.run_pending()
        rendered_here: list[tuple[int | None, int | None]] = []
        render = window_images.render_image

        def counting(data: bytes, image: ImagePart, width: int | None, height: int | None) -> Any:
            rendered_here.append((width, height))
            return render(data, image, width, height)

        monkeypatch.setattr(window_images, "render_image", counting)
        window = session.build_context(budget=20000)
        assert ahead.url in _image_urls(window.messages)
        assert (512, 512) not in rendered_here


def test_kept_frames_sent_at_full_detail_are_not_rendered_ahead_again(tmp_path: Path) -> None:
    with _engine(tmp_path, context={"history_image_detail": "auto"}) as engine:
        session = engine.create_session("u1", "agent")
        session.add_message("user", "Let's start")
        session.build_context(budget=20000)
        _, part = _turn_with_screenshot(session, seed=31)
        engine.jobs.run_pending()
        assert engine.context_builder.rendered_images.get(part.blob_id, 512, 512) is None
        assert engine.context_builder.rendered_images.get(part.blob_id, 768, None) is not None
