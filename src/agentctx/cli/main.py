"""The ``agentctx`` command: global options and the command groups.

``agentctx [--url URL] [--home DIR] COMMAND …``; each group lives in a module of
its own (``db``, ``sessions``, ``blobs``, ``memory``, ``keys``, ``serve``, ``mcp``,
``demo``, ``bench``).
"""

from __future__ import annotations

from pathlib import Path

import typer

from agentctx import __version__
from agentctx.cli._common import CliOptions, RootGroup
from agentctx.cli.bench import bench_app
from agentctx.cli.blobs import blobs_app
from agentctx.cli.db import db_app
from agentctx.cli.demo import demo
from agentctx.cli.keys import keys_app
from agentctx.cli.mcp import mcp
from agentctx.cli.memory import memory_app
from agentctx.cli.serve import serve
from agentctx.cli.sessions import sessions_app

app = typer.Typer(
    name="agentctx",
    cls=RootGroup,
    help="agentctx: a context engine for LLM agents, on a durable, ordered, "
    "tamper-evident event log.",
    no_args_is_help=True,
    pretty_exceptions_show_locals=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"agentctx {__version__}")
        raise typer.Exit()


@app.callback()
def main(
    ctx: typer.Context,
    url: str | None = typer.Option(
        None,
        "--url",
        help="Database URL (sqlite:///… or postgresql://…). Default: $AGENTCTX_URL, "
        "else the embedded SQLite database under the home folder.",
        show_default=False,
    ),
    home: Path | None = typer.Option(
        None,
        "--home",
        help="Folder for the default database, blobs and audit log. "
        "Default: $AGENTCTX_HOME, else ~/.agentctx.",
        show_default=False,
    ),
    version: bool = typer.Option(
        False,
        "--version",
        callback=_version,
        is_eager=True,
        help="Print the version and exit.",
    ),
) -> None:
    """Inspect and maintain an agentctx store."""
    ctx.obj = CliOptions(url=url, home=home)


app.add_typer(db_app, name="db")
app.add_typer(sessions_app, name="sessions")
app.add_typer(blobs_app, name="blobs")
app.add_typer(memory_app, name="memory")
app.add_typer(bench_app, name="bench")
app.add_typer(keys_app, name="keys")
app.command("serve")(serve)
app.command("mcp")(mcp)
app.command("demo")(demo)


if __name__ == "__main__":  # pragma: no cover - `python -m agentctx.cli.main`
    app()
