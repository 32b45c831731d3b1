"""What every command shares: the global options, opening the engine, output and errors.

Expected failures (any :class:`~agentctx.errors.AgentCtxError`: a missing session,
bad input, a configuration problem) end the command with a one-line message on
stderr and exit code 2, never a traceback. Exit code 1 is kept for "the check ran
and found a problem" (``sessions verify``).
"""

from __future__ import annotations

import contextlib
import os
import shlex
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any, Literal, NoReturn

import typer
from rich import box
from rich.console import Console, RenderableType
from rich.table import Table
from sqlalchemy.engine import make_url
from typer.core import TyperCommand, TyperGroup, TyperOption

from agentctx.config import Settings, load_settings
from agentctx.engine import ContextEngine
from agentctx.errors import AgentCtxError

EXIT_FAILED_CHECK = 1
EXIT_ERROR = 2

# Rich wraps at 80 columns when output is not a terminal; piped tables would then cut ids.
_PIPE_WIDTH = 200


@dataclass(frozen=True, slots=True)
class CliOptions:
    """The global options; None means "let Settings decide" (environment, YAML, default)."""

    url: str | None = None
    home: Path | None = None


def options(ctx: typer.Context) -> CliOptions:
    """The global options stored by the root callback."""
    obj = ctx.find_root().obj
    return obj if isinstance(obj, CliOptions) else CliOptions()


class RootGroup(TyperGroup):
    """The ``agentctx`` group. Its help and every command's show no type after a flag
    (``--all``, ``--help``): a flag takes no value. Typer's help gives every option its
    type, flags too; a flag's empty metavar shows none. The whole tree is marked when
    the root parses its arguments, before any help is drawn."""

    _flags_marked = False

    def parse_args(self, ctx: Any, args: list[str]) -> list[str]:
        """Mark the flags of every command once, then parse as usual."""
        if not self._flags_marked:
            _hide_flag_types(self, ctx)
            self._flags_marked = True
        return super().parse_args(ctx, args)


def _hide_flag_types(command: object, ctx: Any) -> None:
    if not isinstance(command, TyperCommand | TyperGroup):
        return
    for param in [*command.params, command.get_help_option(ctx)]:
        if isinstance(param, TyperOption) and param.is_flag:
            param.metavar = ""
    if isinstance(command, TyperGroup):
        for sub in command.commands.values():
            _hide_flag_types(sub, ctx)


def command_line(ctx: typer.Context, *args: str) -> str:
    """``agentctx ARGS…`` as a shell line carrying this run's ``--url``/``--home``, so
    a next step printed for the user opens the same store when pasted (a database
    password is shown masked, as everywhere else)."""
    opts = options(ctx)
    words = ["agentctx"]
    if opts.url:
        words += ["--url", safe_url(opts.url)]
    if opts.home:
        words += ["--home", str(opts.home.expanduser().absolute())]
    return shlex.join([*words, *args])


def out() -> Console:
    """A console on stdout (made per call so it follows the current stdout and COLUMNS)."""
    console = Console(highlight=False)
    if not console.is_terminal and "COLUMNS" not in os.environ:
        console = Console(highlight=False, width=_PIPE_WIDTH)
    return console


def fail(message: str, code: int = EXIT_ERROR) -> NoReturn:
    """Print ``message`` in red on stderr as one line and exit with ``code``."""
    line = "; ".join(part.strip() for part in message.splitlines() if part.strip())
    Console(stderr=True, highlight=False, soft_wrap=True).print(
        f"error: {line}", style="red", markup=False
    )
    raise typer.Exit(code)


@contextlib.contextmanager
def expected_errors() -> Iterator[None]:
    """Turn an AgentCtxError raised in the block into a one-line message and exit code 2."""
    try:
        yield
    except AgentCtxError as exc:
        fail(f"{exc} [{exc.code}]")


def load(ctx: typer.Context) -> Settings:
    """Settings from the global options, the environment and ``$AGENTCTX_CONFIG``."""
    opts = options(ctx)
    given = {name: value for name, value in (("url", opts.url), ("home", opts.home)) if value}
    with expected_errors():
        return load_settings(**given)


@contextlib.contextmanager
def open_engine(ctx: typer.Context) -> Iterator[ContextEngine]:
    """Open (and migrate) the engine the global options name; close it afterwards.
    Follow-up work runs inline unless ``jobs`` is configured.

    Errors agentctx raises inside the block are reported by :func:`expected_errors`.
    """
    with expected_errors(), ContextEngine(settings=one_shot(load(ctx))) as engine:
        yield engine


def one_shot(settings: Settings) -> Settings:
    """``settings`` for a command that opens an engine and exits: follow-up work inline
    unless ``jobs`` is configured. A command is a script: it does its follow-up work
    before it exits, a window it prints ranks by vectors, and it starts no worker
    threads (nor a model load) it would leave behind."""
    if "jobs" in settings.model_fields_set:
        return settings
    return settings.model_copy(update={"jobs": "inline"})


def safe_url(url: str) -> str:
    """A database URL fit to print: the password masked."""
    try:
        return make_url(url).render_as_string(hide_password=True)
    except Exception:  # an unparsable URL is reported by the engine; show it as given
        return url


def short_ts(ts: datetime | None) -> str:
    """A timestamp in UTC to the second, or a dash."""
    return ts.strftime("%Y-%m-%d %H:%M:%S") if ts is not None else "-"


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


@dataclass(frozen=True, slots=True)
class Column:
    """A table column that is dropped, lowest priority first, when the console is narrow."""

    name: str
    width: int  # what its values need (the flexible column: the most it may take)
    priority: int  # 0 is kept longest
    justify: Literal["left", "right"] = "left"
    flexible: bool = False  # takes the room left over; its values are cut with an ellipsis


_GAP = 3  # padding and separator between two columns
_FLEX_MIN = 16


class FitTable:
    """A Rich table whose columns fit the console: ids are never cut, whole columns go first."""

    def __init__(self, title: str, columns: Sequence[Column], width: int) -> None:
        budget = width - 2
        kept: set[str] = set()
        for column in sorted(columns, key=lambda c: c.priority):
            need = (_FLEX_MIN if column.flexible else column.width) + _GAP
            if need <= budget:
                kept.add(column.name)
                budget -= need
        self.columns = [column for column in columns if column.name in kept]
        self.table = Table(
            title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_edge=False
        )
        for column in self.columns:
            self.table.add_column(
                column.name,
                justify=column.justify,
                no_wrap=True,
                overflow="ellipsis",
                min_width=None if column.flexible else column.width,
                max_width=min(column.width, _FLEX_MIN + budget) if column.flexible else None,
            )

    def add_row(self, values: Mapping[str, RenderableType], style: str | None = None) -> None:
        """Add a row given as column name -> cell; cells of dropped columns are ignored."""
        self.table.add_row(*(values[column.name] for column in self.columns), style=style)


def print_counts(lines: Sequence[tuple[str, int]]) -> None:
    """Name/count lines on stdout, names left and counts right aligned."""
    console = out()
    width = max((len(name) for name, _ in lines), default=0) + 2
    for name, value in lines:
        console.print(f"{name:<{width}}{value:>10}")
