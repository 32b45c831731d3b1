"""Images as windows send them: downscaled to a maximum width, as ``data:`` URLs.

A 1280x800 screenshot sent whole costs a provider as much as the pixels it is charged
for; seed 000 assumes screenshots go to the model at 768 px wide (about 1,500 tokens).
Downscaled copies are made on first use, or rendered ahead as a new image is appended,
and kept in a byte-bounded in-process cache, keyed by content and width, so the windows
of an agent loop pay for each image once.
The stored original never changes, and ``restore_image`` returns it.
"""

from __future__ import annotations

import base64
import io
import threading
from concurrent.futures import Future
from dataclasses import dataclass

from PIL import Image

from agentctx.cache.bounded import WeightedLru
from agentctx.events import ImagePart
from agentctx.perception.decode import decoded_png
from agentctx.perception.pool import render_pool

_Box = tuple[str, int | None, int | None]  # blob id, max width, max height

RENDERS_AHEAD = 4
"""The most copies under way or queued at once; past it, the windows render their images
themselves (a burst of screenshots holds no more than this many images' bytes)."""

RENDER_AHEAD_WAIT = 5.0
"""The longest a window waits for a copy rendered ahead (seconds) before it renders the
image itself: a copy under way is a few tens of milliseconds from ready."""

# The formats a downscaled copy is encoded in: screenshots stay lossless (text must
# stay legible); photographs stay JPEG.
_ENCODINGS = {
    # Level 1: a window's copy is sent once and not kept on disk; level 3 took 1.7x as
    # long for files 4% smaller (a 768x480 screenshot).
    "image/png": ("PNG", "image/png", {"compress_level": 1}),
    "image/gif": ("PNG", "image/png", {"compress_level": 1}),
    "image/webp": ("WEBP", "image/webp", {"quality": 90, "method": 0}),
    "image/jpeg": ("JPEG", "image/jpeg", {"quality": 88}),
}


@dataclass(frozen=True, slots=True)
class RenderedImage:
    """An image ready for a window: its data URL and the size it is sent at."""

    url: str
    width: int
    height: int


LOW_DETAIL_SIDE = 512
"""OpenAI's low detail looks at a 512x512 version of an image (85 tokens); history
frames sent at low detail are downscaled to fit that box, so no provider is charged
for pixels it would not look at."""


def scaled_size(
    width: int, height: int, max_width: int | None, max_height: int | None = None
) -> tuple[int, int]:
    """The size an image of ``width`` x ``height`` is sent at: within the box, never
    scaled up, aspect kept."""
    scale = 1.0
    if max_width is not None:
        scale = min(scale, max_width / width)
    if max_height is not None:
        scale = min(scale, max_height / height)
    if scale >= 1.0:
        return width, height
    return max(1, round(width * scale)), max(1, round(height * scale))


def render_image(
    data: bytes, part: ImagePart, max_width: int | None, max_height: int | None = None
) -> RenderedImage:
    """``data`` (the bytes behind ``part``) as a data URL within the box."""
    width, height = scaled_size(part.width, part.height, max_width, max_height)
    if (width, height) == (part.width, part.height):
        encoded = base64.b64encode(data).decode("ascii")
        return RenderedImage(f"data:{part.media_type};base64,{encoded}", width, height)
    fmt, media_type, options = _ENCODINGS.get(part.media_type, _ENCODINGS["image/png"])
    with Image.open(io.BytesIO(data)) as image:
        mode = "RGBA" if fmt == "PNG" and "A" in image.getbands() else "RGB"
        decoded = decoded_png(image, data)  # a screenshot: by libspng, faster
        if decoded is not None:
            frame = decoded if decoded.mode == mode else decoded.convert(mode)
        else:
            image.draft("RGB", (width, height))  # JPEG decodes straight at a smaller scale
            frame = image.convert(mode)  # decoded here, while the file is open
    # Hamming: a windowed sinc of support 1 (Pillow filters over the whole source area
    # when it shrinks an image, so text stays legible); Lanczos (support 3) took 3x as
    # long on a 1280x800 screenshot, the largest part of a window that shows a new one.
    small = frame.resize((width, height), Image.Resampling.HAMMING, reducing_gap=2.0)
    buffer = io.BytesIO()
    small.save(buffer, fmt, **options)
    encoded = base64.b64encode(buffer.getvalue()).decode("ascii")
    return RenderedImage(f"data:{media_type};base64,{encoded}", width, height)


class RenderedImageCache:
    """Downscaled images by (blob id, box), least recently used first out.

    Bounded by the bytes of the URLs it holds; thread-safe. Content-addressed keys
    never go stale: a blob id always names the same bytes.

    A copy can be rendered ahead (:meth:`render_ahead`): the engine starts one when an
    append stores a new image, on the render thread
    (:func:`~agentctx.perception.pool.render_pool`), so that the window built right
    after it (an agent's next model call, which shows the new screenshot) finds it ready
    or under way instead of decoding, resizing and encoding it itself (about 15-25 ms of
    a 1280x800 screenshot at 768 px). :meth:`get` waits for a copy under way.
    """

    def __init__(self, max_bytes: int = 64 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._items: WeightedLru[_Box, RenderedImage] = WeightedLru(
            max_bytes, weigh=lambda item: len(item.url)
        )
        self._lock = threading.Lock()
        self._pending: dict[_Box, Future[RenderedImage]] = {}
        # Bumped by clear(): a copy under way when the cache was cleared is not kept.
        self._generation = 0

    def get(
        self, blob_id: str, max_width: int | None, max_height: int | None
    ) -> RenderedImage | None:
        """The cached copy of ``blob_id`` for this box, if any; a copy being rendered
        ahead is waited for (None if its render failed: the caller renders, and sees
        why)."""
        key = (blob_id, max_width, max_height)
        item = self._items.get(key)
        if item is not None:
            return item
        with self._lock:
            pending = self._pending.get(key)
        if pending is None:
            return None
        try:
            return pending.result(timeout=RENDER_AHEAD_WAIT)
        except Exception:  # failed or too slow: the caller renders it itself
            return None

    def clear(self) -> None:
        """Drop every copy held; copies under way are not kept when they end."""
        with self._lock:
            self._generation += 1
            self._pending.clear()
            self._items.clear()

    def put(
        self, blob_id: str, max_width: int | None, max_height: int | None, item: RenderedImage
    ) -> None:
        """Keep ``item`` as the copy of ``blob_id`` for this box (not if it alone is
        larger than the cache)."""
        if len(item.url) <= self.max_bytes:
            self._items.put((blob_id, max_width, max_height), item)

    def render_ahead(
        self, data: bytes, part: ImagePart, max_width: int | None, max_height: int | None = None
    ) -> Future[RenderedImage] | None:
        """Start rendering ``data`` (the bytes behind ``part``) for this box on the render
        thread; the render under way, or None when none started: the copy is held or
        under way already, :data:`RENDERS_AHEAD` others are, or the image needs no
        rendering (it fits the box, and a window sends its bytes as they are)."""
        if scaled_size(part.width, part.height, max_width, max_height) == (
            part.width,
            part.height,
        ):
            return None
        key = (part.blob_id, max_width, max_height)
        if self._items.get(key) is not None:
            return None
        with self._lock:
            if key in self._pending or len(self._pending) >= RENDERS_AHEAD:
                return None
            generation = self._generation
            future = render_pool().submit(render_image, data, part, max_width, max_height)
            self._pending[key] = future
        future.add_done_callback(lambda done: self._rendered(key, generation, done))
        return future

    def _rendered(self, key: _Box, generation: int, done: Future[RenderedImage]) -> None:
        with self._lock:
            if self._pending.get(key) is done:
                del self._pending[key]
            if generation != self._generation or done.cancelled() or done.exception():
                return
            # Under the lock: clear() cannot come between the check and the put.
            self.put(*key, done.result())
