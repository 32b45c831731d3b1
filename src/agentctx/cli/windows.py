"""Printing a context window for people: ``agentctx sessions context``.

The window's messages are shown one by one under a rule naming their role, with image
data summarized rather than printed; the report follows as a table of sections and a
few lines on what was left out, shortened or noted.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.text import Text

from agentctx.cli._common import Column, FitTable
from agentctx.context import ContextWindow

SECTION_COLUMNS = (
    Column("section", 10, 0),
    Column("allocated", 9, 1, "right"),
    Column("tokens", 9, 0, "right"),
    Column("messages", 8, 2, "right"),
    Column("events", 6, 1, "right"),
)


def render_window(console: Console, window: ContextWindow) -> None:
    """Print ``window``: a summary line, every message, then the report."""
    report = window.report
    console.print(
        f"window    {window.tokens:,} of {report.budget:,} tokens, {len(window.messages)} "
        f"messages (strategy {report.strategy}, tokenizer {report.tokenizer})",
        markup=False,
        soft_wrap=True,
    )
    if report.query is not None:
        console.print(f"query     {report.query}", markup=False, soft_wrap=True)
    for number, message in enumerate(window.messages, start=1):
        console.print()
        console.rule(Text(f"{number} · {message_title(message)}"), align="left")
        console.print(Text(message_body(message)), soft_wrap=True)
    console.print()
    render_report(console, window)


def message_title(message: Mapping[str, Any]) -> str:
    """The role of a chat-format message, with its author or tool call id."""
    role = str(message.get("role", "?"))
    who = message.get("name") or message.get("tool_call_id")
    return f"{role} ({who})" if who else role


def message_body(message: Mapping[str, Any]) -> str:
    """The text of a chat-format message: its text parts, a line per image (its data
    summarized, not printed) and a line per tool call."""
    lines: list[str] = []
    content = message.get("content")
    if isinstance(content, str):
        lines.append(content)
    elif isinstance(content, list):
        for part in content:
            if isinstance(part, Mapping):
                lines.append(_part_text(part))
    for call in message.get("tool_calls") or ():
        function = call.get("function") or {}
        name, arguments = function.get("name", "?"), function.get("arguments", "")
        lines.append(f"-> {name}({arguments})  [{call.get('id', '?')}]")
    return "\n".join(lines)


def _part_text(part: Mapping[str, Any]) -> str:
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return str(part["text"])
    if kind == "image_url":
        image = part.get("image_url") or {}
        url = str(image.get("url", ""))
        detail = image.get("detail")
        if url.startswith("data:"):
            media, _, data = url[len("data:") :].partition(",")
            where = f"{media.split(';')[0]}, {len(data):,} characters of base64"
        else:
            where = url
        return f"[image: {where}{f', detail {detail}' if detail else ''}]"
    return f"[{kind or 'part'}]"


def render_report(console: Console, window: ContextWindow) -> None:
    """The report's sections as a table, then what was left out, shortened or noted."""
    report = window.report
    table = FitTable("Sections", SECTION_COLUMNS, console.width)
    for section in report.sections:
        table.add_row(
            {
                "section": section.name,
                "allocated": f"{section.allocated:,}",
                "tokens": f"{section.tokens:,}",
                "messages": str(section.messages),
                "events": str(len(section.event_ids)),
            }
        )
    console.print(table.table)
    lines = [f"included  {_events(len(report.included_event_ids))}"]
    if report.stable_prefix_tokens is not None:
        share = report.stable_prefix_tokens / report.tokens if report.tokens else 0.0
        lines.append(
            f"cached    the first {report.stable_prefix_tokens:,} tokens repeat the previous "
            f"window ({share:.0%})"
        )
    if report.dropped:
        reasons = Counter(drop.reason for drop in report.dropped)
        named = ", ".join(f"{reason} {count:,}" for reason, count in sorted(reasons.items()))
        lines.append(f"left out  {_events(len(report.dropped))} ({named})")
    if report.not_considered:
        lines.append(f"not read  {_events(report.not_considered)} (older, not needed)")
    for cut in report.truncated:
        lines.append(
            f"shortened seq {cut.seq}: {cut.tokens_before:,} -> {cut.tokens_after:,} tokens"
        )
    images = report.images
    if images.inline or images.placeholders:
        lines.append(
            f"images    {len(images.inline)} sent ({len(images.low_detail)} at low detail, "
            f"{images.image_tokens:,} tokens), {len(images.placeholders)} as placeholders"
        )
    lines.extend(f"note      {note}" for note in report.notes)
    total = report.timings_ms.get("total_ms")
    if total is not None:
        lines.append(f"built in  {total:.1f} ms")
    for line in lines:
        console.print(line, markup=False, soft_wrap=True)


def _events(count: int) -> str:
    return f"{count:,} event" if count == 1 else f"{count:,} events"
