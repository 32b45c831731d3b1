"""``agentctx demo``: record the demo session (see :mod:`agentctx.demo`) and print it."""

from __future__ import annotations

import hashlib

import typer
from rich.markup import escape

from agentctx.cli._common import EXIT_FAILED_CHECK, command_line, open_engine, out, safe_url
from agentctx.cli.sessions import print_verify, render_session
from agentctx.demo import DEMO_USER, run_demo


def demo(
    ctx: typer.Context,
    user: str = typer.Option(DEMO_USER, "--user", "-u", help="The user to record it for."),
) -> None:
    """Record a tool-using browser session with real screenshots, then print and verify it."""
    console = out()
    with open_engine(ctx) as engine:
        session = run_demo(engine, user_id=user)
        console.print(f"recorded a demo session in {escape(safe_url(engine.db.url))}\n")
        render_session(console, engine, session, last=0)
        console.print()
        report = session.verify()
        print_verify(console, report, session.user_id)
        frames = session.images()
        kinds = ", ".join(
            f"{frame.frame or 'active'}{' (placeholder)' if frame.is_compressed else ''}"
            + (
                f" (same screen, {frame.dedup_distance} bits)"
                if frame.dedup_distance is not None
                else ""
            )
            for frame in frames
        )
        console.print(f"screenshots: {len(frames)}: {kinds}")
        first = next(image for event in session.events() for image in event.images)
        restored = engine.restore_image(first.image_id, user_id=session.user_id)
        intact = hashlib.sha256(restored).hexdigest() == first.blob_id
        console.print(
            f"restored {first.image_id}: {len(restored):,} bytes "
            f"({first.media_type}, {first.width}x{first.height}), "
            + ("matches its content address" if intact else "[red]DOES NOT match its address[/]")
        )
        show = command_line(ctx, "sessions", "show", session.id, "--user", session.user_id)
        # One line however long (a wrapped command would not work when pasted).
        console.print(f"\nnext: {show}", style="dim", markup=False, soft_wrap=True)
    if not (report.ok and intact):
        raise typer.Exit(EXIT_FAILED_CHECK)
