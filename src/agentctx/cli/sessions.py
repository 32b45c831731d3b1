"""``agentctx sessions …``: list, show, verify, sweep, export and import sessions, and show
the context window a session gives a model.

Commands that name a session also name its user (``--user``): like the API, the
command line reaches a session only through its owner. Two operator views read
across users: ``sessions list`` without ``--user`` and ``sessions verify --all``.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table
from rich.text import Text
from sqlalchemy import and_, func, select

from agentctx import jsonvalue
from agentctx.cli._common import (
    EXIT_FAILED_CHECK,
    Column,
    FitTable,
    fail,
    one_line,
    open_engine,
    out,
    print_counts,
    short_ts,
)
from agentctx.cli.windows import render_window
from agentctx.context.window import WindowFormat
from agentctx.engine import ContextEngine
from agentctx.errors import SessionNotFound
from agentctx.events import BlobPart, Event, EventType, JsonPart, TextPart
from agentctx.sessions.models import SessionInfo, TurnInfo, VerifyReport
from agentctx.sessions.session import Session
from agentctx.storage.schema import blob_refs, blobs

sessions_app = typer.Typer(
    help="List, inspect, verify and export sessions; show a context window.",
    no_args_is_help=True,
)

USER_OPTION = typer.Option(..., "--user", "-u", help="The user the session belongs to.")
PREVIEW_CHARS = 100
_VERIFY_BATCH = 500


# Rendering (also used by `agentctx demo`) ------------------------------------------------


def short_id(value: str | None) -> str:
    """The last 8 characters of an id (the random end of a UUIDv7), or a dash."""
    return value[-8:] if value else "-"


def preview(event: Event) -> str:
    """One line saying what an event holds (images are counted separately)."""
    pieces: list[str] = []
    if event.type is EventType.TOOL_CALL:
        pieces.append(f"{event.meta.tool_name or event.payload.get('name', '?')}:")
    elif event.type is EventType.TOOL_RESULT and event.payload.get("is_error"):
        pieces.append("ERROR")
    for part in event.parts:
        if isinstance(part, TextPart):
            pieces.append(part.text)
        elif isinstance(part, JsonPart):
            pieces.append(jsonvalue.dumps(part.data))
        elif isinstance(part, BlobPart):
            pieces.append(f"[{part.original_kind} in blob, {part.size} B] {part.preview}")
    if not pieces and event.payload:  # e.g. an error event: its content is the payload
        pieces.append(jsonvalue.dumps(event.payload))
    return one_line(" ".join(pieces), PREVIEW_CHARS)


def blob_usage(engine: ContextEngine, user_id: str, session_id: str) -> tuple[int, int, int]:
    """(references, distinct blobs, bytes of the distinct blobs) of one session."""
    where = and_(blob_refs.c.user_id == user_id, blob_refs.c.session_id == session_id)
    ids = select(blob_refs.c.blob_id).where(where)
    with engine.db.read() as conn:
        refs = conn.execute(select(func.count()).select_from(blob_refs).where(where)).scalar_one()
        distinct_count, size = conn.execute(
            select(func.count(), func.coalesce(func.sum(blobs.c.size), 0)).where(
                blobs.c.blob_id.in_(ids)
            )
        ).one()
    return int(refs), int(distinct_count), int(size)


def _info_lines(info: SessionInfo, turn_count: int, usage: tuple[int, int, int]) -> list[str]:
    refs, distinct_count, size = usage
    return [
        f"session   {info.session_id}",
        f"user      {info.user_id}    agent {info.agent_id}",
        f"created   {short_ts(info.created_at)}    updated {short_ts(info.updated_at)}    "
        f"expires {short_ts(info.expires_at)}",
        f"log       {info.last_seq} events in {turn_count} turns    head {info.last_hash[:16]}",
        f"blobs     {refs} references to {distinct_count} distinct blobs ({size:,} bytes)",
        f"state     v{info.state_version} {jsonvalue.dumps(info.state)}",
    ]


TS = 19  # width of short_ts()
ID = 36  # width of a UUID
TURN_COLUMNS = (
    Column("#", 3, 0, "right"),
    Column("turn", 8, 0),
    Column("status", 9, 1),
    Column("seqs", 9, 1),
    Column("events", 6, 2, "right"),
    Column("started", TS, 3),
    Column("ended", TS, 4),
)
EVENT_COLUMNS = (
    Column("seq", 5, 0, "right"),
    Column("ts", TS, 5),
    Column("type", 14, 0),
    Column("role", 9, 4),
    Column("turn", 8, 3),
    Column("text", PREVIEW_CHARS, 1, flexible=True),
    Column("img", 3, 2, "right"),
    Column("tokens", 6, 2, "right"),
)
SESSION_COLUMNS = (
    Column("session", ID, 0),
    Column("user", 16, 0),
    Column("agent", 16, 2),
    Column("events", 6, 1, "right"),
    Column("state", 5, 5),
    Column("created", TS, 4),
    Column("updated", TS, 3),
    Column("expires", TS, 6),
)


def turns_table(turns: list[TurnInfo], width: int) -> Table:
    """The session's turns, numbered."""
    table = FitTable("Turns", TURN_COLUMNS, width)
    for number, turn in enumerate(turns, start=1):
        seqs = f"{turn.first_seq}-{turn.last_seq}" if turn.first_seq is not None else "-"
        table.add_row(
            {
                "#": str(number),
                "turn": short_id(turn.turn_id),
                "status": Text(turn.status, style="red" if turn.status != "ok" else ""),
                "seqs": seqs,
                "events": str(turn.event_count),
                "started": short_ts(turn.started_at),
                "ended": short_ts(turn.ended_at),
            }
        )
    return table.table


def events_table(events: list[Event], width: int, title: str = "Events") -> Table:
    """One row per event: seq, time, type, role, turn, a text preview, images and tokens."""
    table = FitTable(title, EVENT_COLUMNS, width)
    for event in events:
        failed = event.type is EventType.ERROR or (
            event.type is EventType.TOOL_RESULT and bool(event.payload.get("is_error"))
        )
        table.add_row(
            {
                "seq": str(event.seq),
                "ts": short_ts(event.ts),
                "type": event.type.value,
                "role": event.role.value if event.role is not None else "-",
                "turn": short_id(event.turn_id),
                "text": Text(preview(event)),
                "img": str(len(event.images)) if event.images else "",
                "tokens": str(event.token_estimate),
            },
            style="red" if failed else None,
        )
    return table.table


def render_session(console: Console, engine: ContextEngine, session: Session, last: int) -> None:
    """Print a session: its row, its turns and its newest ``last`` events (0: all)."""
    info = session.refresh()
    turns = session.turns()
    for line in _info_lines(info, len(turns), blob_usage(engine, session.user_id, session.id)):
        console.print(line, markup=False, soft_wrap=True)
    console.print()
    console.print(turns_table(turns, console.width))
    console.print()
    events = session.events(last=last) if last > 0 else session.events()
    title = "Events" if len(events) == info.last_seq else f"Events (newest {len(events)})"
    console.print(events_table(events, console.width, title))
    if len(events) < info.last_seq:
        console.print(
            f"{info.last_seq - len(events)} older events not shown (--last 0 shows all)",
            style="dim",
        )


def print_verify(console: Console, report: VerifyReport, user_id: str) -> None:
    """One line: the chain is intact, or where it breaks."""
    where = escape(f"{user_id}/{report.session_id}")
    if report.ok:
        console.print(
            f"[green]ok[/]  {where}: {report.events_checked} events, chain intact "
            f"(last seq {report.last_seq})"
        )
    else:
        console.print(
            f"[red]TAMPERED[/]  {where}: first bad seq {report.first_bad_seq}: "
            f"{escape(report.reason or 'chain broken')}"
        )


# Commands ---------------------------------------------------------------------------------


def _require_user(user: str | None) -> str:
    if not user:
        raise typer.BadParameter("--user is required", param_hint="--user")
    return user


@sessions_app.command("list")
def list_sessions(
    ctx: typer.Context,
    user: str | None = typer.Option(
        None, "--user", "-u", help="Only this user's sessions (else: every user's)."
    ),
    agent: str | None = typer.Option(None, "--agent", "-a", help="Only sessions with this agent."),
    limit: int = typer.Option(50, "--limit", "-n", min=1, max=1000, help="Sessions per page."),
    cursor: str | None = typer.Option(None, "--cursor", help="Continue from a previous page."),
) -> None:
    """List live sessions, oldest first, one page at a time."""
    with open_engine(ctx) as engine:
        if user is not None:
            page = engine.list_sessions(user, agent_id=agent, limit=limit, cursor=cursor)
        else:
            page = engine.list_all_sessions(agent_id=agent, limit=limit, cursor=cursor)
        items, next_cursor = page.items, page.next_cursor
    console = out()
    table = FitTable("Sessions", SESSION_COLUMNS, console.width)
    for info in items:
        table.add_row(
            {
                "session": Text(info.session_id),
                "user": Text(info.user_id),
                "agent": Text(info.agent_id),
                "events": str(info.last_seq),
                "state": f"v{info.state_version}",
                "created": short_ts(info.created_at),
                "updated": short_ts(info.updated_at),
                "expires": short_ts(info.expires_at),
            }
        )
    console.print(table.table)
    if next_cursor is not None:
        console.print(f"more: --cursor {next_cursor}", markup=False, soft_wrap=True)


@sessions_app.command("show")
def show(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="SESSION", help="The session id."),
    user_id: str = USER_OPTION,
    last: int = typer.Option(50, "--last", "-n", min=0, help="Show the newest N events (0: all)."),
) -> None:
    """Show a session: its state, turns and events."""
    with open_engine(ctx) as engine:
        session = engine.get_session(session_id, user_id=user_id)
        render_session(out(), engine, session, last)


class WindowOutput(StrEnum):
    """How ``sessions context`` prints the window."""

    TEXT = "text"
    OPENAI = "openai"
    ANTHROPIC = "anthropic"


class StrategyChoice(StrEnum):
    """The strategies a window may be built with (see ``agentctx.context.builder``)."""

    FULL = "full"
    COMPRESSED = "compressed"
    ADAPTIVE = "adaptive"
    SEMANTIC = "semantic"


@sessions_app.command("context")
def context(  # noqa: PLR0917 - one parameter per command-line option
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="SESSION", help="The session id."),
    user_id: str = USER_OPTION,
    query: str | None = typer.Option(
        None, "--query", "-q", help="What the window should be relevant to."
    ),
    budget: int = typer.Option(
        4000, "--budget", "-b", min=1, max=2_000_000, help="Token budget of the window."
    ),
    strategy: StrategyChoice | None = typer.Option(
        None, "--strategy", "-s", help="Override the agent's strategy for this window."
    ),
    system_prompt: str | None = typer.Option(
        None, "--system-prompt", help="Override the agent's system prompt."
    ),
    output: WindowOutput = typer.Option(
        WindowOutput.TEXT,
        "--format",
        "-f",
        help="text: the messages and the report, for reading; openai / anthropic: the "
        "window as JSON in that provider's format, as the REST API returns it.",
    ),
) -> None:
    """Build the context window the next model call would get, and show it with its
    report (per-section tokens, what was left out and why). Reads only: nothing is
    appended to the session."""
    with open_engine(ctx) as engine:
        session = engine.get_session(session_id, user_id=user_id)
        window = session.build_context(
            query,
            budget,
            strategy=strategy.value if strategy is not None else None,
            system_prompt=system_prompt,
        )
    if output is WindowOutput.TEXT:
        render_window(out(), window)
    else:
        fmt: WindowFormat = "anthropic" if output is WindowOutput.ANTHROPIC else "openai"
        typer.echo(jsonvalue.dumps(window.body(fmt)))


class ImportFormat(StrEnum):
    """The message formats ``sessions import`` reads."""

    OPENAI = "openai"
    ANTHROPIC = "anthropic"


@sessions_app.command("import")
def import_messages(  # noqa: PLR0917 - one parameter per command-line option
    ctx: typer.Context,
    file: str = typer.Argument(
        ..., metavar="FILE", help="A JSON file of chat messages ('-': standard input)."
    ),
    user_id: str = USER_OPTION,
    agent: str = typer.Option("default", "--agent", "-a", help="The agent of a new session."),
    session_id: str | None = typer.Option(
        None, "--session", "-s", help="Add to this session (created when it does not exist)."
    ),
    message_format: ImportFormat = typer.Option(
        ImportFormat.OPENAI, "--format", "-f", help="The provider format of the messages."
    ),
) -> None:
    """Record a conversation given as chat messages, as the agent made it: each user
    message opens a turn; tool calls and results keep their ids. FILE holds a JSON list
    of messages, an object with "messages" (and "system"), or one message per line."""
    messages = _read_messages(file)
    with open_engine(ctx) as engine:
        try:
            session = engine.get_session(session_id, user_id=user_id) if session_id else None
        except SessionNotFound:
            session = None
        if session is None:
            session = engine.create_session(user_id, agent, session_id=session_id)
        report = session.import_messages(messages, format=message_format.value)
    out().print(
        f"imported {len(report.events)} events in {len(report.turn_ids)} turns "
        f"into session {session.id}",
        markup=False,
    )


def _read_messages(file: str) -> Any:
    """The messages of ``file``: one JSON document, or JSON lines."""
    try:
        raw = sys.stdin.read() if file == "-" else Path(file).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        fail(f"cannot read {file}: {exc}")
    try:
        return json.loads(raw)
    except ValueError:
        pass
    try:
        return [json.loads(line) for line in raw.splitlines() if line.strip()]
    except ValueError as exc:
        fail(f"{file} is neither JSON nor JSON lines: {exc}")


@sessions_app.command("verify")
def verify(
    ctx: typer.Context,
    session_id: str | None = typer.Argument(
        None, metavar="SESSION", help="The session id (or use --all)."
    ),
    user: str | None = typer.Option(
        None,
        "--user",
        "-u",
        help="The user the session belongs to: required with SESSION; "
        "with --all, only this user's sessions.",
    ),
    all_sessions: bool = typer.Option(
        False, "--all", help="Verify every live session (of every user, or of --user)."
    ),
) -> None:
    """Check hash chains. Exit code 1 names the first bad seq of each broken session."""
    if all_sessions == (session_id is not None):
        raise typer.BadParameter("give a SESSION (with --user) or --all", param_hint="SESSION")
    console = out()
    with open_engine(ctx) as engine:
        if session_id is not None:
            user_id = _require_user(user)
            report = engine.verify(session_id, user_id=user_id)
            print_verify(console, report, user_id)
            if not report.ok:
                raise typer.Exit(EXIT_FAILED_CHECK)
            return
        checked = broken = events = 0
        for user_id, sid in _live_sessions(engine, user):
            try:
                report = engine.verify(sid, user_id=user_id)
            except SessionNotFound:
                continue  # deleted or expired since it was listed
            checked += 1
            events += report.events_checked
            if not report.ok:
                broken += 1
                print_verify(console, report, user_id)
    summary = f"checked {checked} sessions, {events} events: "
    if broken:
        console.print(f"{summary}[red]{broken} broken[/]")
        raise typer.Exit(EXIT_FAILED_CHECK)
    console.print(f"{summary}[green]all chains intact[/]")


def _live_sessions(engine: ContextEngine, user: str | None) -> Iterator[tuple[str, str]]:
    """(user_id, session_id) of every live session (of one user, or all), page by page."""
    cursor: str | None = None
    while True:
        if user is not None:
            page = engine.list_sessions(user, limit=_VERIFY_BATCH, cursor=cursor)
        else:
            page = engine.list_all_sessions(limit=_VERIFY_BATCH, cursor=cursor)
        yield from ((info.user_id, info.session_id) for info in page.items)
        if page.next_cursor is None:
            return
        cursor = page.next_cursor


@sessions_app.command("sweep")
def sweep(ctx: typer.Context) -> None:
    """Delete expired sessions and orphaned blobs, close abandoned turns, trim the audit log
    and finished jobs."""
    with open_engine(ctx) as engine:
        report = engine.sweep()
    deleted = report.deleted
    lines = (
        ("expired sessions deleted", report.expired_sessions),
        ("events deleted", deleted.events),
        ("turns deleted", deleted.turns),
        ("jobs deleted", deleted.jobs),
        ("blob references deleted", deleted.blob_refs),
        ("blobs deleted", deleted.blobs),
        ("abandoned turns closed", report.abandoned_turns),
        ("audit records trimmed", report.audit_records),
        ("finished jobs trimmed", report.finished_jobs),
    )
    print_counts(lines)


@sessions_app.command("export")
def export(
    ctx: typer.Context,
    session_id: str = typer.Argument(..., metavar="SESSION", help="The session id."),
    user_id: str = USER_OPTION,
    out_file: Path | None = typer.Option(
        None, "--out", "-o", help="Write to this file instead of stdout.", dir_okay=False
    ),
) -> None:
    """Write every event as one JSON object per line, in seq order."""
    with open_engine(ctx) as engine:
        # Load first: a missing session fails before any output (or file) exists.
        session = engine.get_session(session_id, user_id=user_id)
        if out_file is None:
            for record in session.export():
                typer.echo(jsonvalue.dumps(record))
            return
        count = _write_atomically(out_file, session.export())
    out().print(f"wrote {count} events to {escape(str(out_file))}")


def _write_atomically(path: Path, records: Iterator[dict[str, Any]]) -> int:
    """Write JSON lines to a temporary file beside ``path``, then rename it into place."""
    path = path.expanduser()
    if not path.parent.is_dir():
        fail(f"cannot write {path}: no such folder {path.parent}")
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    count = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            for record in records:
                handle.write(jsonvalue.dumps(record))
                handle.write("\n")
                count += 1
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return count
