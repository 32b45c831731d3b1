"""The write path of ``agentctx bench visual``: perceptual hashing and screenshot appends.

A computer-use agent appends a screenshot after most actions, so what one append costs
is paid at every step. Measured on the task's frames (``bench.visual_frames``):

* **hashing** (``perceptual_hashes``, what dedup compares): each frame as 1280x800 PNG
  and as JPEG (quality 85), and up to :data:`HIDPI_FRAMES` frames at 2560x1600 (the
  frame scaled 2x, as a HiDPI screen shows the same desktop);
* **appends**: each frame, with a photograph pasted into the front window (flat UI
  alone compresses to almost nothing, and a PNG's decode costs by its compressed
  data), appended as a computer tool's result through the public API, timed from call
  to return: once inside the task's turns (``session.turn()``, as an agent loop
  records), once as one-event turns (``session.add_tool_result`` outside a turn: each
  ends a turn and queues the turn-end jobs, visual compaction and HITL evaluation,
  which the default ``jobs="background"`` runs in the job worker). The engine is the
  defaults (redaction on, dedup on, background work) on SQLite in a temporary folder.
"""

from __future__ import annotations

import io
import time
from collections.abc import Sequence
from contextlib import nullcontext
from pathlib import Path

import numpy as np
from PIL import Image
from pydantic import BaseModel

from agentctx.bench.stats import Latency, summarize
from agentctx.bench.visual_frames import HEIGHT, WIDTH, Frame, TaskTurn
from agentctx.engine import ContextEngine
from agentctx.perception import perceptual_hashes

HASH_P95_TARGET_MS = 10.0
"""Perceptual hashes of a 1280x800 PNG screenshot, p95."""
HASH_HIDPI_P95_TARGET_MS = 25.0
"""Perceptual hashes of a 2560x1600 PNG screenshot, p95."""
APPEND_P95_TARGET_MS = 20.0
"""A screenshot append at 1280x800, end to end, p95."""
HIDPI_FRAMES = 60
"""Frames hashed at 2560x1600 (each is scaled and encoded first, which takes a while)."""
WRITE_USER = "visual-bench-writes"


class WritePath(BaseModel):
    """Hashing and append latency of one run."""

    hash_png: Latency  # 1280x800
    hash_jpeg: Latency  # the same frames as JPEG q85
    hash_png_hidpi: Latency  # 2560x1600
    append_in_turn: Latency  # add_tool_result inside a turn
    append_own_turn: Latency  # add_tool_result outside a turn (a one-event turn)
    append_png_bytes_mean: float  # of the appended frames (with their photograph)


def hidpi(png: bytes) -> bytes:
    """The frame at twice its size (2560x1600), as PNG."""
    with Image.open(io.BytesIO(png)) as image:
        large = image.convert("RGB").resize((WIDTH * 2, HEIGHT * 2), Image.Resampling.BICUBIC)
    return _png(large)


def photographed(png: bytes, seed: int) -> bytes:
    """The frame with a photograph (320x200: a smooth gradient and sensor noise) pasted
    at a place drawn from ``seed``, as PNG: a web page or a document with a picture,
    whose pixels a PNG cannot squeeze as it does flat UI."""
    rng = np.random.default_rng(seed)
    rows, cols = np.mgrid[0:200, 0:320]
    tint = rng.integers(40, 220, size=3)
    gradient = (rows[..., None] * 0.4 + cols[..., None] * 0.3 + tint * 0.5) % 256
    noise = rng.normal(0.0, 18.0, size=(200, 320, 3))
    pixels = np.clip(gradient + noise, 0, 255).astype(np.uint8)
    with Image.open(io.BytesIO(png)) as image:
        frame = image.convert("RGB")
    x, y = int(rng.integers(0, WIDTH - 320)), int(rng.integers(0, HEIGHT - 240))
    frame.paste(Image.fromarray(pixels, "RGB"), (x, y))
    return _png(frame)


def _png(image: Image.Image) -> bytes:
    buffer = io.BytesIO()
    image.save(buffer, "PNG", compress_level=3)  # as the task's frames are saved
    return buffer.getvalue()


def _timed_hashes(images: Sequence[bytes]) -> Latency:
    seconds = []
    for data in images:
        started = time.perf_counter()
        perceptual_hashes(data)
        seconds.append(time.perf_counter() - started)
    return summarize(seconds)


def _jpeg(png: bytes) -> bytes:
    with Image.open(io.BytesIO(png)) as image:
        buffer = io.BytesIO()
        image.convert("RGB").save(buffer, "JPEG", quality=85)
    return buffer.getvalue()


def _open_defaults(home: Path) -> ContextEngine:
    home.mkdir(parents=True, exist_ok=True)
    # The defaults, but nothing that reaches a model, and an explicit URL: an
    # AGENTCTX_URL in the environment must not receive bench data.
    return ContextEngine(
        url=f"sqlite:///{home / 'agentctx.db'}",
        home=home,
        embeddings={"provider": "none"},
        llm={"provider": "none"},
    )


def _appends(
    home: Path, task: Sequence[TaskTurn], frames: dict[int, bytes], *, in_turn: bool
) -> Latency:
    """Every frame appended as a tool result: inside its turn, or (``in_turn`` false)
    as a one-event turn, its call outside any turn too."""
    engine = _open_defaults(home)
    seconds: list[float] = []
    try:
        session = engine.create_session(user_id=WRITE_USER)
        for turn in task:
            with session.turn() if in_turn else nullcontext(session) as writer:
                for frame in turn.frames:
                    call = writer.add_tool_call("computer", frame.action)
                    started = time.perf_counter()
                    writer.add_tool_result(
                        call.call_id,
                        content=frame.result,
                        images=[frames[id(frame)]],
                        is_error=frame.error,
                    )
                    seconds.append(time.perf_counter() - started)
    finally:
        engine.close()
    return summarize(seconds)


def measure_write_path(task: Sequence[TaskTurn], home: Path) -> WritePath:
    """Hash every frame (1280x800 PNG and JPEG, the first :data:`HIDPI_FRAMES` at
    2560x1600), then append every frame, with its photograph, both ways."""
    frames: list[Frame] = [frame for turn in task for frame in turn.frames]
    hash_png = _timed_hashes([f.png for f in frames])
    hash_jpeg = _timed_hashes([_jpeg(f.png) for f in frames])
    hash_hidpi = _timed_hashes([hidpi(f.png) for f in frames[:HIDPI_FRAMES]])
    # A near-duplicate keeps its photograph where its previous frame had it: the same
    # seed as the frame before, so it stays a near-duplicate.
    with_photo: dict[int, bytes] = {}
    seed = 0
    for frame in frames:
        seed += not frame.near_duplicate
        with_photo[id(frame)] = photographed(frame.png, seed)
    in_turn = _appends(home / "in-turn", task, with_photo, in_turn=True)
    own_turn = _appends(home / "own-turn", task, with_photo, in_turn=False)
    return WritePath(
        hash_png=hash_png,
        hash_jpeg=hash_jpeg,
        hash_png_hidpi=hash_hidpi,
        append_in_turn=in_turn,
        append_own_turn=own_turn,
        append_png_bytes_mean=sum(len(p) for p in with_photo.values()) / len(with_photo),
    )
