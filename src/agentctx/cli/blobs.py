"""``agentctx blobs …``: restore images, list a session's frames, run cold-storage cleanup.

Like the API, images are reached through their owner (``--user``): an image of another
user is "not found", exactly like an unknown id. An image whose bytes cold-storage
retention removed is reported as expired (exit code 2), never as a traceback.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

import typer
from PIL import Image, UnidentifiedImageError
from rich.markup import escape
from rich.text import Text

from agentctx.cli._common import Column, FitTable, fail, open_engine, out, print_counts
from agentctx.cli.sessions import short_id

blobs_app = typer.Typer(
    help="Restore images, list a session's frames, clean up cold storage.",
    no_args_is_help=True,
)

# Pillow's format names -> the file extension restore gives an image by default.
_EXTENSIONS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "GIF": "gif"}
_UNKNOWN_EXTENSION = "bin"  # bytes Pillow cannot identify are still written, as they are

IMAGE_ID = 28  # "img_" and 24 hex digits
FRAME_COLUMNS = (
    Column("seq", 5, 0, "right"),
    Column("image", IMAGE_ID, 0),
    Column("turn", 8, 2),
    Column("frame", 7, 1),
    Column("compressed", 10, 1),
    Column("dedup", 5, 3, "right"),
)


@dataclass(frozen=True, slots=True)
class ImageFacts:
    """What Pillow reads from an image's header (None when it cannot identify it)."""

    format: str | None
    width: int | None
    height: int | None

    @property
    def extension(self) -> str:
        """The file extension for this format (``bin`` for an unidentified one)."""
        return _EXTENSIONS.get(self.format or "", (self.format or _UNKNOWN_EXTENSION).lower())

    @property
    def dimensions(self) -> str:
        """``WxH``, or a question mark when the size is unknown."""
        return f"{self.width}x{self.height}" if self.width and self.height else "?"


def image_facts(data: bytes) -> ImageFacts:
    """Format and size of encoded image bytes; only the header is decoded."""
    try:
        with Image.open(io.BytesIO(data)) as image:
            return ImageFacts(image.format, image.width, image.height)
    except (UnidentifiedImageError, OSError, ValueError):
        return ImageFacts(None, None, None)


def write_bytes_atomically(path: Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path``, then rename it into place,
    so an interrupted restore never leaves a truncated image under the final name."""
    if not path.parent.is_dir():
        fail(f"cannot write {path}: no such folder {path.parent}")
    try:
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    except OSError as exc:
        fail(f"cannot write {path}: {exc.strerror or exc}")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        fail(f"cannot write {path}: {exc.strerror or exc}")
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


# Commands ---------------------------------------------------------------------------------


@blobs_app.command("restore")
def restore(
    ctx: typer.Context,
    image_id: str = typer.Argument(..., metavar="IMAGE_ID", help="The image id (img_…)."),
    user: str = typer.Option(..., "--user", "-u", help="The user whose event holds the image."),
    out_file: Path | None = typer.Option(
        None,
        "--out",
        "-o",
        dir_okay=False,
        help="Write to this file. Default: IMAGE_ID.<ext> in the current folder.",
    ),
) -> None:
    """Write the original bytes of an image (e.g. behind a placeholder) to a file."""
    with open_engine(ctx) as engine:
        # Read first: an unknown or expired image fails before any file exists.
        data = engine.restore_image(image_id, user_id=user)
    facts = image_facts(data)
    path = (out_file or Path(f"{image_id}.{facts.extension}")).expanduser().absolute()
    write_bytes_atomically(path, data)
    console = out()
    lines = (
        ("image", image_id),
        ("file", str(path)),
        ("size", f"{len(data):,} bytes"),
        ("pixels", f"{facts.dimensions} ({facts.format or 'unknown format'})"),
        ("sha256", hashlib.sha256(data).hexdigest()),
    )
    for name, value in lines:
        console.print(f"{name:<8}{value}", markup=False, soft_wrap=True)


@blobs_app.command("cleanup")
def cleanup(
    ctx: typer.Context,
    retention_days: int | None = typer.Option(
        None,
        "--retention-days",
        "-d",
        min=1,
        help="Remove images older than this. Default: the visual.retention_days setting (30).",
        show_default=False,
    ),
) -> None:
    """Cold-storage retention: remove the bytes of old images no live window needs."""
    with open_engine(ctx) as engine:
        days = (
            retention_days if retention_days is not None else engine.settings.visual.retention_days
        )
        report = engine.cleanup(retention_days=days)
    lines = (
        ("images expired", report.expired),
        ("bytes freed", report.bytes_freed),
        ("files removed", report.files_removed),
        ("retention days", report.retention_days),
    )
    print_counts(lines)


@blobs_app.command("list")
def list_images(
    ctx: typer.Context,
    user: str = typer.Option(..., "--user", "-u", help="The user the session belongs to."),
    session_id: str = typer.Option(..., "--session", "-s", help="The session id."),
) -> None:
    """List a session's images in log order: frame, whether windows compress it, dedup."""
    with open_engine(ctx) as engine:
        frames = engine.get_session(session_id, user_id=user).images()
    console = out()
    if not frames:
        console.print(f"session {escape(session_id)} has no images")
        return
    table = FitTable(f"Images ({len(frames)})", FRAME_COLUMNS, console.width)
    for frame in frames:
        table.add_row(
            {
                "seq": str(frame.seq) if frame.seq is not None else "-",
                "image": Text(frame.image_id),
                "turn": short_id(frame.turn_id),
                # No frame yet: the turn is open, or compaction has not run for it.
                "frame": frame.frame or "-",
                "compressed": "yes" if frame.is_compressed else "no",
                "dedup": str(frame.dedup_distance) if frame.dedup_distance is not None else "",
            },
            style="dim" if frame.is_compressed else None,
        )
    console.print(table.table)
