"""``agentctx bench visual``: visual compaction and dedup of a long screenshot task.

1. **The task** (``bench.visual_frames``): ``turns`` turns (default 50) of a simulated
   desktop task, 3 to 10 PNG screenshots (1280x800, drawn with Pillow) per turn, with
   planted near-duplicates and error dialogs, deterministic from ``seed``.
2. **Engines.** The same task is recorded by several engines (SQLite in a temporary
   folder, redaction off, ``jobs="manual"``):

   * ``naive``: visual compaction off, dedup off, ``image_max_width=None`` (every
     screenshot sent whole, at 1280x800): the baseline;
   * ``kept frames at full detail``: the defaults but ``history_image_detail="auto"``
     (anchor, result and error frames of every ended turn sent as the active turn's);
   * ``defaults``: the engine's defaults (kept frames of turns before the newest ended
     one at low detail).

   Each turn is ``user message; per action a computer tool call and its result with the
   screenshot (is_error for error dialogs); the answer``. Right after a turn ends,
   ``engine.visual.compact_turn`` is called and timed (the queued turn-end job is
   never run first: ``jobs="manual"``).
3. **History tokens.** After the task every turn has ended, so every image is history:
   a ``build_context(strategy="full")`` window at a budget no history reaches is read,
   and its image slots (``image_url`` parts, priced with ``agentctx.tokens.image_tokens``
   at the size actually sent; placeholders, counted as the text they are) are summed.
   The slots, in order, are the screenshots in the order they were recorded.
4. **Checks.** Anchor, result and error frames kept in full (by the engine's frame
   table and by the window); every placeholder restorable (``restore_image`` returns
   bytes whose sha256 is the image's blob id and that Pillow decodes); planted
   near-duplicates caught and false positives; cold-storage read time.
5. **The write path** (``bench.visual_writes``): perceptual hash time per frame (PNG at
   1280x800 and 2560x1600, JPEG) and the time of a full screenshot append through the
   public API, in a turn and as a one-event turn.
"""

from __future__ import annotations

import base64
import hashlib
import io
import tempfile
import time
from collections.abc import Callable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from PIL import Image
from pydantic import BaseModel, Field

from agentctx.bench.machine import Machine, load_average, machine_facts
from agentctx.bench.stats import Latency, summarize
from agentctx.bench.visual_frames import Frame, TaskTurn, generate_task
from agentctx.bench.visual_writes import (
    APPEND_P95_TARGET_MS,
    HASH_HIDPI_P95_TARGET_MS,
    HASH_P95_TARGET_MS,
    WritePath,
    measure_write_path,
)
from agentctx.context.render import PLACEHOLDER_PATTERN
from agentctx.engine import ContextEngine
from agentctx.errors import AgentCtxError
from agentctx.events import ImagePart
from agentctx.sessions.session import Session
from agentctx.tokens import image_tokens

Progress = Callable[[str], None]
BENCH_USER = "visual-bench"
BENCH_AGENT = "visual-bench"
FULL_BUDGET = 2_000_000  # more than any history of the task: nothing is dropped
HISTORY_SAVING_TARGET = 0.95
COMPACTION_P95_TARGET_MS = 100.0
RESTORE_P95_TARGET_MS = 20.0
KEPT_KINDS = ("anchor", "result", "error")


class VisualBenchConfig(BaseModel):
    """One ``bench visual`` run."""

    turns: int = Field(default=50, ge=1)
    seed: int = 0
    command: str = "agentctx bench visual"


class HistoryRow(BaseModel):
    """History image tokens of one engine configuration, from its window."""

    name: str
    settings: dict[str, Any]
    images: int  # image slots in the window
    inline: int  # sent as images
    placeholders: int
    image_tokens: int  # of the images sent
    placeholder_tokens: int  # of the placeholder texts
    report_image_tokens: int | None = None  # window.report.images.image_tokens, when reported
    duplicates_caught: int
    build_ms: float

    @property
    def tokens(self) -> int:
        """What the history's images cost in the window: images plus placeholders."""
        return self.image_tokens + self.placeholder_tokens


class ConfigResult(BaseModel):
    """Everything measured for one engine configuration."""

    history: HistoryRow
    saving: float | None = None  # 1 - tokens / naive tokens
    kept_expected: int = 0  # planted first, last and error frames
    kept_in_window: int = 0  # of those, sent as images in the window
    kept_by_frames: int = 0  # engine frames classified anchor/result/error ...
    kept_by_frames_full: int = 0  # ... of which not compressed
    placeholder_ids: int = 0
    restored_ok: int = 0  # sha256 == blob id and Pillow decodes
    compressed_tokens_replaced: int = 0  # what the compressed images would have cost
    compressed_placeholder_tokens: int = 0
    planted_duplicates: int = 0
    duplicates_caught: int = 0  # planted ones with dedup_distance set
    false_positives: int = 0  # non-planted frames deduplicated
    compaction: Latency | None = None  # compact_turn per turn
    compressed_per_turn_max: int = 0  # images compressed by one compact_turn
    compressed_total: int = 0
    restore: Latency | None = None


class Verdict(BaseModel):
    """One target: its name, PASS / FAIL / None (not applicable), the figure."""

    name: str
    passed: bool | None
    detail: str


class VisualReport(BaseModel):
    """Everything one ``bench visual`` run measured."""

    started_at: datetime
    machine: Machine
    config: VisualBenchConfig
    frames: int
    turns: int
    near_duplicates: int
    error_frames: int
    png_bytes_mean: float
    results: list[ConfigResult]
    writes: WritePath
    generate_s: float
    total_s: float = 0.0
    verdicts: list[Verdict] = []
    notes: list[str] = []


# ---------------------------------------------------------------- engines


def configurations() -> list[tuple[str, dict[str, Any]]]:
    """The engine configurations compared: name and ContextEngine keyword arguments."""
    naive: dict[str, Any] = {
        "visual": {"compaction": False, "dedup": {"enabled": False}},
        "context": {"image_max_width": None},
    }
    full_history: dict[str, Any] = {"context": {"history_image_detail": "auto"}}
    return [
        ("naive (no compaction)", naive),
        ("kept frames at full detail", full_history),
        ("defaults", {}),
    ]


def _open(home: Path, overrides: dict[str, Any]) -> ContextEngine:
    home.mkdir(parents=True, exist_ok=True)
    # The "full" strategy keeps the newest 100 messages by default: the whole task must fit.
    context = {"full": {"max_messages": 1_000_000}, **overrides.get("context", {})}
    overrides = {**overrides, "context": context}
    # An explicit URL: an AGENTCTX_URL in the environment must not receive bench data.
    return ContextEngine(
        url=f"sqlite:///{home / 'agentctx.db'}",
        home=home,
        redaction={"enabled": False},
        embeddings={"provider": "none"},
        llm={"provider": "none"},
        jobs="manual",
        **overrides,
    )


def _record(
    engine: ContextEngine, task: Sequence[TaskTurn], *, compact: bool
) -> tuple[Session, list[ImagePart], list[tuple[float, int]]]:
    """Record the task; the session, each frame's ImagePart, compact_turn timings."""
    session = engine.create_session(user_id=BENCH_USER, agent_id=BENCH_AGENT)
    parts: list[ImagePart] = []
    timings: list[tuple[float, int]] = []
    for turn in task:
        with session.turn() as recorder:
            recorder.add_message("user", turn.user)
            for frame in turn.frames:
                call = recorder.add_tool_call("computer", frame.action)
                event = recorder.add_tool_result(
                    call.call_id, content=frame.result, images=[frame.png], is_error=frame.error
                )
                parts.extend(p for p in event.parts if isinstance(p, ImagePart))
            recorder.add_message("assistant", turn.answer)
            turn_id = recorder.turn_id
        if compact:
            started = time.perf_counter()
            done = engine.visual.compact_turn(session.user_id, session.id, turn_id)
            timings.append((time.perf_counter() - started, done.newly_compressed))
    return session, parts, timings


def _slots(messages: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """The window's image slots in order: image_url parts and placeholder texts."""
    slots: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        if not isinstance(content, list):
            continue
        for part in content:
            if part.get("type") == "image_url" or (
                part.get("type") == "text" and PLACEHOLDER_PATTERN.fullmatch(part.get("text", ""))
            ):
                slots.append(part)
    return slots


def _url_tokens(part: dict[str, Any], provider: str) -> int:
    url = part["image_url"]["url"]
    data = base64.b64decode(url.split(",", 1)[1])
    with Image.open(io.BytesIO(data)) as image:
        width, height = image.size
    return image_tokens(
        width, height, provider=provider, detail=part["image_url"].get("detail", "auto")
    )


def _measure(
    name: str,
    overrides: dict[str, Any],
    home: Path,
    task: Sequence[TaskTurn],
    frames: Sequence[Frame],
) -> ConfigResult:
    engine = _open(home, overrides)
    try:
        compact = engine.settings.visual.compaction
        session, parts, timings = _record(engine, task, compact=compact)
        session_id = session.id
        started = time.perf_counter()
        window = session.build_context(budget=FULL_BUDGET, strategy="full")
        build_ms = (time.perf_counter() - started) * 1e3
        counter = engine.token_counter()
        provider = engine.settings.context.image_provider
        slots = _slots(window.messages)
        if len(slots) != len(frames) or len(parts) != len(frames):
            raise AgentCtxError(
                f"{name}: {len(slots)} image slots in the window and {len(parts)} image "
                f"parts for {len(frames)} screenshots"
            )
        image_tok = placeholder_tok = 0
        kept_expected = kept_in_window = 0
        replaced = replaced_by = 0
        placeholder_ids: list[tuple[str, ImagePart]] = []
        max_width = engine.settings.context.image_max_width
        for frame, part, slot in zip(frames, parts, slots, strict=True):
            inline = slot["type"] == "image_url"
            if inline:
                image_tok += _url_tokens(slot, provider)
            else:
                text_tokens = counter.count(slot["text"])
                placeholder_tok += text_tokens
                match = PLACEHOLDER_PATTERN.fullmatch(slot["text"])
                assert match is not None  # _slots kept only full matches
                placeholder_ids.append((match.group(1), part))
                # What the image would have cost, sent as the same engine sends images.
                width, height = part.width, part.height
                if max_width is not None and width > max_width:
                    width, height = max_width, max(1, round(height * max_width / width))
                replaced += image_tokens(width, height, provider=provider)
                replaced_by += text_tokens
            if frame.first or frame.last or frame.error:
                kept_expected += 1
                kept_in_window += inline
        images_report = getattr(window.report, "images", None)
        caught = sum(
            1
            for f, p in zip(frames, parts, strict=True)
            if f.near_duplicate and p.dedup_distance is not None
        )
        false_pos = sum(
            1
            for f, p in zip(frames, parts, strict=True)
            if not f.near_duplicate and p.dedup_distance is not None
        )
        history = HistoryRow(
            name=name,
            settings=overrides,
            images=len(slots),
            inline=len(slots) - len(placeholder_ids),
            placeholders=len(placeholder_ids),
            image_tokens=image_tok,
            placeholder_tokens=placeholder_tok,
            report_image_tokens=getattr(images_report, "image_tokens", None),
            duplicates_caught=caught,
            build_ms=build_ms,
        )
        result = ConfigResult(
            history=history,
            kept_expected=kept_expected,
            kept_in_window=kept_in_window,
            placeholder_ids=len(placeholder_ids),
            compressed_tokens_replaced=replaced,
            compressed_placeholder_tokens=replaced_by,
            planted_duplicates=sum(f.near_duplicate for f in frames),
            duplicates_caught=caught,
            false_positives=false_pos,
        )
        if compact:
            stored = engine.visual.frames(BENCH_USER, session_id)
            kept = [f for f in stored if f.frame in KEPT_KINDS]
            result.kept_by_frames = len(kept)
            result.kept_by_frames_full = sum(not f.is_compressed for f in kept)
            result.compaction = summarize([seconds for seconds, _ in timings])
            result.compressed_total = sum(n for _, n in timings)
            result.compressed_per_turn_max = max((n for _, n in timings), default=0)
        restores: list[float] = []
        ok = 0
        for image_id, part in placeholder_ids:
            started = time.perf_counter()
            data = engine.restore_image(image_id, user_id=BENCH_USER)
            restores.append(time.perf_counter() - started)
            if hashlib.sha256(data).hexdigest() == part.blob_id and _decodes(data):
                ok += 1
        result.restored_ok = ok
        result.restore = summarize(restores) if restores else None
        return result
    finally:
        engine.close()


def _decodes(data: bytes) -> bool:
    try:
        with Image.open(io.BytesIO(data)) as image:
            image.load()
    except (OSError, ValueError):
        return False
    return True


# ---------------------------------------------------------------- the run


def _verdicts(report: VisualReport) -> list[Verdict]:
    out: list[Verdict] = []
    # The target is the engine's defaults; the other rows show where the saving comes from.
    main = next((r for r in report.results if r.history.name == "defaults"), None)
    if main is not None:
        saving = main.saving or 0.0
        out.append(
            Verdict(
                name=f"history image tokens >= {HISTORY_SAVING_TARGET:.0%} fewer (defaults)",
                passed=saving >= HISTORY_SAVING_TARGET,
                detail=f"{saving:.1%} fewer ({main.history.tokens:,} vs "
                f"{report.results[0].history.tokens:,})",
            )
        )
    if main is not None:
        out.append(
            Verdict(
                name="anchor/result/error frames kept in full = 100%",
                passed=main.kept_in_window == main.kept_expected
                and main.kept_by_frames_full == main.kept_by_frames,
                detail=f"window {main.kept_in_window}/{main.kept_expected}, "
                f"frame table {main.kept_by_frames_full}/{main.kept_by_frames}",
            )
        )
        out.append(
            Verdict(
                name="placeholders restorable = 100%",
                passed=main.restored_ok == main.placeholder_ids and main.placeholder_ids > 0,
                detail=f"{main.restored_ok}/{main.placeholder_ids}",
            )
        )
        out.append(
            Verdict(
                name="planted near-duplicates caught",
                passed=None,
                detail=f"{main.duplicates_caught}/{main.planted_duplicates}, "
                f"{main.false_positives} false positives",
            )
        )
        if main.compaction is not None:
            out.append(
                Verdict(
                    name=f"compact_turn p95 < {COMPACTION_P95_TARGET_MS:g} ms",
                    passed=main.compaction.p95_ms < COMPACTION_P95_TARGET_MS,
                    detail=f"p95 {main.compaction.p95_ms:.1f} ms",
                )
            )
        if main.restore is not None:
            out.append(
                Verdict(
                    name=f"cold-storage read p95 < {RESTORE_P95_TARGET_MS:g} ms",
                    passed=main.restore.p95_ms < RESTORE_P95_TARGET_MS,
                    detail=f"p95 {main.restore.p95_ms:.2f} ms",
                )
            )
    writes = report.writes
    for name, latency, bound in (
        ("perceptual hash per 1280x800 PNG", writes.hash_png, HASH_P95_TARGET_MS),
        ("perceptual hash per 2560x1600 PNG", writes.hash_png_hidpi, HASH_HIDPI_P95_TARGET_MS),
        ("screenshot append at 1280x800, in a turn", writes.append_in_turn, APPEND_P95_TARGET_MS),
        (
            "screenshot append at 1280x800, one-event turn (its jobs queued)",
            writes.append_own_turn,
            APPEND_P95_TARGET_MS,
        ),
    ):
        out.append(
            Verdict(
                name=f"{name} p95 <= {bound:g} ms",
                passed=latency.p95_ms <= bound,
                detail=f"p50 {latency.p50_ms:.2f} ms, p95 {latency.p95_ms:.2f} ms",
            )
        )
    return out


def run_visual_benchmark(
    config: VisualBenchConfig, *, progress: Progress | None = None
) -> VisualReport:
    """Generate the task, record it with each configuration, measure and check."""
    say = progress or (lambda _message: None)
    started_at = datetime.now(UTC)
    began = time.perf_counter()
    say(f"drawing {config.turns} turns of screenshots (seed {config.seed})")
    task = generate_task(config.turns, config.seed)
    generate_s = time.perf_counter() - began
    frames = [frame for turn in task for frame in turn.frames]
    with tempfile.TemporaryDirectory(prefix="agentctx-visual-") as tmp:
        home = Path(tmp)
        machine = machine_facts(home)
        say(f"hashing and appending {len(frames)} screenshots")
        writes = measure_write_path(task, home / "writes")
        results: list[ConfigResult] = []
        for number, (name, overrides) in enumerate(configurations()):
            say(f"recording the task: {name}")
            results.append(_measure(name, overrides, home / f"engine-{number}", task, frames))
    naive = results[0].history.tokens
    for result in results:
        result.saving = 1 - result.history.tokens / naive if naive else None
    machine.load_average_end = load_average()
    machine.agentctx_settings = {
        "jobs": "manual (compact_turn called and timed by the bench)",
        "redaction": "False",
    }
    report = VisualReport(
        started_at=started_at,
        machine=machine,
        config=config,
        frames=len(frames),
        turns=len(task),
        near_duplicates=sum(f.near_duplicate for f in frames),
        error_frames=sum(f.error for f in frames),
        png_bytes_mean=sum(len(f.png) for f in frames) / len(frames),
        results=results,
        writes=writes,
        generate_s=generate_s,
    )
    report.verdicts = _verdicts(report)
    report.total_s = time.perf_counter() - began
    return report
