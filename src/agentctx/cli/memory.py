"""``agentctx memory …``: extract, list, search, show, delete memories; opt users out.

Like the API, a memory is reached through its owner (``--user``): a memory of another
user is "not found", exactly like an unknown id (exit code 2). ``memory extract
--since`` is the scheduled batch of seed 003 (the time-based trigger): run it from
cron or a scheduler; it is idempotent, so overlapping ranges and reruns write nothing
twice (each session's extraction records how far it got).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from enum import StrEnum

import typer
from rich.markup import escape
from rich.text import Text

from agentctx.cli._common import (
    Column,
    FitTable,
    fail,
    one_line,
    open_engine,
    out,
    print_counts,
    short_ts,
)
from agentctx.events import utcnow
from agentctx.memory.consolidate import ConsolidationReport
from agentctx.memory.models import Memory, MemoryChange, MemoryKind, MemoryStatus

memory_app = typer.Typer(
    help="Extract, list, search, inspect and delete long-term memories.",
    no_args_is_help=True,
)

USER_HELP = "The user the memories belong to."
CONTENT_CHARS = 120

TS = 19  # width of short_ts()
MEMORY_ID = 36  # "mem_" and 32 hex digits
SESSION_ID = 36
MEMORY_COLUMNS = (
    Column("id", MEMORY_ID, 0),
    Column("kind", 10, 1),
    Column("content", CONTENT_CHARS, 0, flexible=True),
    Column("confidence", 10, 2, "right"),
    Column("support", 7, 3, "right"),
    Column("version", 7, 4, "right"),
    Column("status", 7, 2),
    Column("updated", TS, 5),
)
HIT_COLUMNS = (Column("score", 6, 0, "right"), *MEMORY_COLUMNS)
EXTRACT_COLUMNS = (
    Column("user", 16, 0),
    Column("session", SESSION_ID, 0),
    Column("created", 7, 0, "right"),
    Column("merged", 6, 0, "right"),
    Column("staled", 6, 1, "right"),
    Column("skipped", 7, 2, "right"),
)
SOURCE_COLUMNS = (
    Column("session", SESSION_ID, 0),
    Column("event", 36, 1),
    Column("seq", 6, 0, "right"),
    Column("extractor", 12, 2),
)
HISTORY_COLUMNS = (
    Column("version", 7, 0, "right"),
    Column("action", 7, 0),
    Column("reason", 60, 1, flexible=True),
    Column("ts", TS, 0),
)


class StatusFilter(StrEnum):
    """Which memories ``memory list`` shows."""

    ACTIVE = "active"
    STALE = "stale"
    DELETED = "deleted"
    ALL = "all"


_STATUSES: dict[StatusFilter, MemoryStatus | None] = {
    StatusFilter.ACTIVE: "active",
    StatusFilter.STALE: "stale",
    StatusFilter.DELETED: "deleted",
    StatusFilter.ALL: None,
}


# Time arguments ---------------------------------------------------------------------------

_SHORT_DURATION = re.compile(r"(\d+(?:\.\d+)?)\s*([wdhms])", re.IGNORECASE)
_SHORT_DURATIONS = re.compile(r"(?:\d+(?:\.\d+)?\s*[wdhms]\s*)+", re.IGNORECASE)
_ISO_DURATION = re.compile(
    r"P(?:(?P<w>\d+(?:\.\d+)?)W)?(?:(?P<d>\d+(?:\.\d+)?)D)?"
    r"(?:T(?:(?P<h>\d+(?:\.\d+)?)H)?(?:(?P<m>\d+(?:\.\d+)?)M)?(?:(?P<s>\d+(?:\.\d+)?)S)?)?",
    re.IGNORECASE,
)
_UNIT_SECONDS = {"w": 604_800, "d": 86_400, "h": 3_600, "m": 60, "s": 1}


def parse_duration(text: str) -> timedelta | None:
    """``1d``, ``12h``, ``1d12h``, ``90m``, ``2w`` or ISO 8601 ``P1D``, ``PT12H``,
    ``P1DT6H``; None when ``text`` is not a duration. Months and years are not
    accepted (they have no fixed length)."""
    value = text.strip()
    iso = _ISO_DURATION.fullmatch(value)
    if iso is not None:
        if not any(iso.groupdict().values()) or value.upper().endswith("T"):
            return None
        seconds = sum(float(n) * _UNIT_SECONDS[unit] for unit, n in iso.groupdict().items() if n)
        return timedelta(seconds=seconds)
    if _SHORT_DURATIONS.fullmatch(value) is None:
        return None
    parts = _SHORT_DURATION.findall(value)
    return timedelta(seconds=sum(float(n) * _UNIT_SECONDS[unit.lower()] for n, unit in parts))


def parse_when(text: str, *, now: datetime, option: str) -> datetime:
    """A point in time from an option: an ISO 8601 date or date/time (a date, or a time
    without an offset, is UTC), ``now``, or a duration back from ``now`` (``1d``, ``P1D``).
    Bad input ends the command with exit code 2."""
    value = text.strip()
    if value.lower() == "now":
        return now
    try:
        duration = parse_duration(value)
        if duration is not None:
            return now - duration
    except OverflowError:
        fail(f"{option}: {text!r} reaches back too far")
    try:
        moment = datetime.fromisoformat(value)  # a bare date is its midnight
    except ValueError:
        fail(
            f"{option}: {text!r} is neither an ISO 8601 date/time (2026-11-01, "
            "2026-11-01T08:00:00+01:00) nor a duration back from now (1d, 12h, P1D)"
        )
    return moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)


# Rendering ---------------------------------------------------------------------------------


def _memory_row(memory: Memory) -> dict[str, str | Text]:
    return {
        "id": Text(memory.memory_id),
        "kind": memory.kind.value,
        "content": Text(one_line(memory.content, CONTENT_CHARS)),
        "confidence": f"{memory.confidence:.2f}",
        "support": str(memory.support_count),
        "version": str(memory.version),
        "status": memory.status,
        "updated": short_ts(memory.updated_at),
    }


def _row_style(memory: Memory) -> str | None:
    return None if memory.status == "active" else "dim"


def _report_counts(report: ConsolidationReport) -> tuple[int, int, int, int]:
    return len(report.created), len(report.merged), len(report.staled), report.skipped


def _fields(memory: Memory) -> list[tuple[str, str]]:
    lines = [
        ("memory", memory.memory_id),
        ("user", memory.user_id),
        ("kind", memory.kind.value),
        ("subject", memory.subject or "-"),
        ("status", memory.status),
        ("version", str(memory.version)),
        ("confidence", f"{memory.confidence:.2f}"),
        ("support", f"{memory.support_count} session(s)"),
        ("tainted", "yes" if memory.tainted else "no"),
        ("agent", memory.agent_id or "-"),
        ("scope", f"session {memory.session_id}" if memory.session_id else "user"),
        ("extractor", memory.extractor_version + (f" ({memory.model})" if memory.model else "")),
        ("created", short_ts(memory.created_at)),
        ("updated", short_ts(memory.updated_at)),
        ("expires", short_ts(memory.expires_at)),
        ("keywords", ", ".join(memory.keywords) or "-"),
    ]
    if memory.data:
        lines.append(("data", ", ".join(f"{k}={v}" for k, v in memory.data.items())))
    lines.append(("content", memory.content))
    return lines


def _history_table(changes: Sequence[MemoryChange], width: int) -> FitTable:
    table = FitTable(f"History ({len(changes)})", HISTORY_COLUMNS, width)
    for change in changes:
        table.add_row(
            {
                "version": str(change.version),
                "action": change.action,
                "reason": Text(one_line(change.reason, 200)),
                "ts": short_ts(change.ts),
            }
        )
    return table


# Commands ---------------------------------------------------------------------------------


@memory_app.command("extract")
def extract(
    ctx: typer.Context,
    since: str | None = typer.Option(
        None,
        "--since",
        help="Extract every session with events from this time on: an ISO 8601 date/time "
        "(a date or a time without offset is UTC) or a duration back from now (1d, 12h, P1D).",
        show_default=False,
    ),
    until: str | None = typer.Option(
        None,
        "--until",
        help="Only events before this time (same forms as --since).",
        show_default=False,
    ),
    user: str | None = typer.Option(
        None, "--user", "-u", help="Only this user's sessions (required with --session)."
    ),
    session_id: str | None = typer.Option(
        None, "--session", "-s", help="Extract this one session of --user instead."
    ),
) -> None:
    """Extract memories from sessions: the scheduled batch (--since) or one session."""
    if session_id is not None:
        if since is not None or until is not None:
            fail("give --session or --since/--until, not both")
        if user is None:
            fail("--session needs --user")
        _extract_one(ctx, user, session_id)
        return
    if since is None:
        fail("give --since WHEN (the batch) or --user U --session S (one session)")
    now = utcnow()
    start = parse_when(since, now=now, option="--since")
    end = parse_when(until, now=now, option="--until") if until is not None else None
    if end is not None and end <= start:
        fail(f"--until ({end.isoformat()}) must be after --since ({start.isoformat()})")
    with open_engine(ctx) as engine:
        reports = engine.memory.extract_since(start, end, user_id=user)
    console = out()
    span = f"{short_ts(start)} to {short_ts(end) if end else 'now'} UTC"
    if not reports:
        console.print(f"no sessions with events from {span}")
        return
    table = FitTable(f"Extracted {len(reports)} session(s), {span}", EXTRACT_COLUMNS, console.width)
    totals = [0, 0, 0, 0]
    for (owner, session), report in reports.items():
        counts = _report_counts(report)
        totals = [a + b for a, b in zip(totals, counts, strict=True)]
        table.add_row(
            {
                "user": Text(owner),
                "session": Text(session),
                "created": str(counts[0]),
                "merged": str(counts[1]),
                "staled": str(counts[2]),
                "skipped": str(counts[3]),
            },
            style=None if any(counts[:3]) else "dim",
        )
    console.print(table.table)
    print_counts(
        [
            ("sessions", len(reports)),
            ("created", totals[0]),
            ("merged", totals[1]),
            ("staled", totals[2]),
            ("skipped", totals[3]),
        ]
    )


def _extract_one(ctx: typer.Context, user: str, session_id: str) -> None:
    with open_engine(ctx) as engine:
        engine.get_session(session_id, user_id=user)  # another user's session: not found
        report = engine.memory.extract_session(user, session_id)
    created, merged, staled, skipped = _report_counts(report)
    print_counts(
        [("created", created), ("merged", merged), ("staled", staled), ("skipped", skipped)]
    )


@memory_app.command("list")
def list_memories(
    ctx: typer.Context,
    user: str = typer.Option(..., "--user", "-u", help=USER_HELP),
    kind: MemoryKind | None = typer.Option(None, "--kind", "-k", help="Only this kind."),
    status: StatusFilter = typer.Option(StatusFilter.ACTIVE, "--status", help="Which memories."),
    limit: int = typer.Option(100, "--limit", "-n", min=1, help="Most memories to show."),
) -> None:
    """List a user's memories, newest update first."""
    wanted = _STATUSES[status]
    with open_engine(ctx) as engine:
        found = engine.memory.list(
            user,
            kinds=[kind] if kind is not None else None,
            status=wanted,
            limit=limit,
        )
    console = out()
    if not found:
        console.print(
            f"user {escape(user)} has no {'' if wanted is None else wanted + ' '}memories"
        )
        return
    table = FitTable(f"Memories ({len(found)})", MEMORY_COLUMNS, console.width)
    for memory in found:
        table.add_row(_memory_row(memory), style=_row_style(memory))
    console.print(table.table)


@memory_app.command("search")
def search(
    ctx: typer.Context,
    query: str = typer.Argument(..., metavar="QUERY", help="What to look for."),
    user: str = typer.Option(..., "--user", "-u", help=USER_HELP),
    limit: int = typer.Option(10, "--limit", "-n", min=1, help="Most memories to show."),
) -> None:
    """Search a user's active memories (lexical + dense, weighted by confidence and age)."""
    if not query.strip():
        fail("QUERY must not be empty")
    with open_engine(ctx) as engine:
        hits = engine.memory.search(user, query, limit=limit)
    console = out()
    if not hits:
        console.print(f"no memories of user {escape(user)} match {escape(query)!r}")
        return
    table = FitTable(f"Memories matching {query!r} ({len(hits)})", HIT_COLUMNS, console.width)
    for hit in hits:
        table.add_row({"score": f"{hit.score:.3f}", **_memory_row(hit.memory)})
    console.print(table.table)


@memory_app.command("show")
def show(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., metavar="MEMORY_ID", help="The memory id (mem_…)."),
    user: str = typer.Option(..., "--user", "-u", help=USER_HELP),
) -> None:
    """Show a memory: its fields, where it was learned, and every change."""
    with open_engine(ctx) as engine:
        memory = engine.memory.get(user, memory_id)
        changes = engine.memory.history(user, memory_id)
    console = out()
    for name, value in _fields(memory):
        console.print(f"{name:<11}{value}", markup=False, soft_wrap=True)
    console.print()
    if memory.sources:
        sources = FitTable(f"Provenance ({len(memory.sources)})", SOURCE_COLUMNS, console.width)
        for source in memory.sources:
            sources.add_row(
                {
                    "session": Text(source.session_id),
                    "event": Text(source.event_id),
                    "seq": str(source.seq) if source.seq is not None else "-",
                    "extractor": Text(source.extractor_version),
                }
            )
        console.print(sources.table)
    else:
        console.print("Provenance: added through the API (no source events)")
    console.print()
    console.print(_history_table(changes, console.width).table)


@memory_app.command("delete")
def delete(
    ctx: typer.Context,
    memory_id: str = typer.Argument(..., metavar="MEMORY_ID", help="The memory id (mem_…)."),
    user: str = typer.Option(..., "--user", "-u", help=USER_HELP),
) -> None:
    """Mark a memory deleted: never searched or injected again; its history is kept."""
    with open_engine(ctx) as engine:
        current = engine.memory.get(user, memory_id)
        if current.status == "deleted":
            out().print(f"memory {memory_id} was already deleted", markup=False)
            return
        deleted = engine.memory.delete(user, memory_id)
    out().print(f"deleted memory {memory_id} (version {deleted.version})", markup=False)


@memory_app.command("opt-out")
def opt_out(
    ctx: typer.Context,
    user: str = typer.Option(..., "--user", "-u", help="The user to opt out (or back in)."),
    undo: bool = typer.Option(False, "--undo", help="Opt the user back into declarative memory."),
) -> None:
    """Stop (or with --undo resume) learning declarative memories of a user.

    Procedural statistics are still kept, and existing memories stay until deleted.
    """
    with open_engine(ctx) as engine:
        engine.memory.set_opt_out(user, declarative=not undo)
        active = engine.memory.counts(user).get("active", 0)
    console = out()
    if undo:
        console.print(f"user {escape(user)} opted back into declarative memory")
    else:
        console.print(
            f"user {escape(user)} opted out of declarative memory; "
            f"{active} active memories are kept (delete them with `agentctx memory delete`)"
        )
