"""The threads of this process that work on images off the caller's thread.

Pillow and libspng release the interpreter lock while they decode, reduce, resize and
encode, so an image's work on one of these threads runs on another core beside the
agent's own Python: an append's perceptual hashes while it stages the image's bytes,
and a window's downscaled copy of a new screenshot rendered ahead of the window that
shows it (:meth:`agentctx.context.images.RenderedImageCache.render_ahead`).
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_POOL: tuple[int, ThreadPoolExecutor] | None = None
_POOL_LOCK = threading.Lock()


def image_pool() -> ThreadPoolExecutor:
    """The image threads of this process, made on first use (again in a forked child:
    a pool's threads do not survive a fork)."""
    global _POOL  # noqa: PLW0603 - one pool per process
    with _POOL_LOCK:
        if _POOL is None or _POOL[0] != os.getpid():
            workers = max(2, os.cpu_count() or 2)
            _POOL = (os.getpid(), ThreadPoolExecutor(workers, thread_name_prefix="agentctx-image"))
        return _POOL[1]
