"""The threads of this process that work on images off the caller's thread.

Pillow and libspng release the interpreter lock while they decode, reduce, resize and
encode, so an image's work on one of these threads runs on another core beside the
agent's own Python. Two pools, so that one kind of work never queues behind the other:

* :func:`image_pool`: an append's perceptual hashes, computed while the append stages
  the image's bytes (the append waits for them);
* :func:`render_pool`: one thread rendering ahead the downscaled copy of a new
  screenshot that the next window shows
  (:meth:`agentctx.context.images.RenderedImageCache.render_ahead`); nobody waits for it
  but that window, and a burst of screenshots never delays the next append's hashes.
"""

from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor

_POOLS: dict[str, tuple[int, ThreadPoolExecutor]] = {}
_POOLS_LOCK = threading.Lock()


def image_pool() -> ThreadPoolExecutor:
    """The hashing threads of this process (as many as cores, at least two)."""
    return _pool("agentctx-image", max(2, os.cpu_count() or 2))


def render_pool() -> ThreadPoolExecutor:
    """The thread of this process that renders windows' image copies ahead."""
    return _pool("agentctx-render", 1)


def _pool(name: str, workers: int) -> ThreadPoolExecutor:
    """The pool ``name`` of this process, made on first use (again in a forked child: a
    pool's threads do not survive a fork)."""
    with _POOLS_LOCK:
        held = _POOLS.get(name)
        if held is None or held[0] != os.getpid():
            held = _POOLS[name] = (
                os.getpid(),
                ThreadPoolExecutor(workers, thread_name_prefix=name),
            )
        return held[1]
