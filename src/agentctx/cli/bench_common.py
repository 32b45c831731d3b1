"""What every ``agentctx bench …`` command shares: the command group, backends, running a
benchmark with progress and writing its files, and the parsing of size and budget lists."""

from __future__ import annotations

import enum
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import typer
from pydantic import BaseModel
from rich.console import Console

from agentctx.errors import AgentCtxError

bench_app = typer.Typer(help="Benchmarks (figures go to docs/benchmarks.md).", no_args_is_help=True)


@bench_app.callback()
def _bench() -> None:
    """Benchmarks (figures go to docs/benchmarks.md)."""
    # A callback keeps ``store`` a subcommand even while it is the only one.


class BackendChoice(enum.StrEnum):
    """Which agentctx backends to measure."""

    sqlite = "sqlite"
    postgresql = "postgresql"
    all = "all"


Report = TypeVar("Report", bound=BaseModel)


def run_and_write(
    console: Console,
    run: Callable[[Callable[[str], None]], Report],
    *,
    show: Callable[[Report, Console], None],
    markdown_of: Callable[[Report], str],
    out: Path | None,
    markdown: Path | None,
) -> None:
    """Run a benchmark with progress lines, print its report and write the files asked for.

    An agentctx error (a missing extra, bad data) is printed in red and exits with 1.
    """
    try:
        report = run(
            lambda message: console.print(f"… {message}", style="dim", markup=False),
        )
    except AgentCtxError as exc:
        console.print(str(exc), style="red", markup=False, highlight=False)
        raise typer.Exit(1) from exc
    show(report, console)
    if out is not None:
        out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
        console.print(f"results written to {out}", markup=False, highlight=False)
    if markdown is not None:
        markdown.write_text(markdown_of(report), encoding="utf-8")
        console.print(f"tables written to {markdown}", markup=False, highlight=False)


def _positive_counts(value: str, what: str, example: str) -> list[int]:
    try:
        counts = [int(part.replace("_", "").strip()) for part in value.split(",") if part.strip()]
    except ValueError as exc:
        raise typer.BadParameter(f"{what}s are comma-separated integers, e.g. {example}") from exc
    if not counts or min(counts) < 1:
        raise typer.BadParameter(f"give at least one positive {what}")
    return counts


def parse_sizes(value: str | None) -> list[int] | None:
    """``--sizes 1000,10_000``: history sizes; None when the option is not given."""
    return None if value is None else _positive_counts(value, "size", "1000,10000")


def parse_budgets(value: str) -> list[int]:
    """``--budget 1000,4000``: token budgets."""
    return _positive_counts(value, "budget", "1000,4000")
