"""The compacted past of an agent loop: the turns that just left the history, as compact
dated lines, before the history.

When the history slides, the turns that leave it are what the agent is most likely to
need again (the ids a tool returned, what the user asked, which calls it made). The
digest shows the events just before the history, newest first until its room is full,
one compact line each: tool calls with their arguments, messages shortened in their
middle, JSON tool output as its leaves (``key=value``, every id and name kept). It
depends only on where the history starts, not on the query, so it stays the same from
one slide to the next and sits before the history in the window's cacheable prefix.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from agentctx.context.assembly import Assembly
from agentctx.context.lines import compact_block
from agentctx.context.units import atoms_of
from agentctx.events import Event, EventType

DIGEST_HEADING = "Earlier in this session (compacted; oldest first):"

SCANNED_EVENTS = 256
"""Events before the history looked at, at most, for the digest."""

_NOT_SHOWN = frozenset({EventType.SYSTEM, EventType.STATE_DELTA, EventType.SUMMARY})


@dataclass
class Digest:
    """The digest's message and the events it shows."""

    message: dict[str, Any] | None = None
    event_ids: list[str] = field(default_factory=list)
    first_seq: int | None = None  # the oldest event it shows
    tokens: int = 0


def digest_of(build: Assembly, before: int, room: int) -> Digest:
    """The events before seq ``before`` as compact lines within ``room`` tokens, the
    newest first."""
    events = _events_before(build, before)
    block = compact_block(
        build.pricer,
        DIGEST_HEADING,
        atoms_of(events),
        room,
        ledger_share=build.request.config.adaptive.ledger_share,
    )
    if block.message is None:
        return Digest()
    return Digest(
        message=block.message,
        event_ids=[event_id for _, event_id in block.shown],
        first_seq=block.shown[0][0],
        tokens=block.tokens,
    )


def _events_before(build: Assembly, before: int) -> list[Event]:
    """The last :data:`SCANNED_EVENTS` events before seq ``before`` (after the archive) that
    a window may show, in seq order. Read the same way whatever the window read before, so
    the digest depends only on ``before``."""
    sources, reader = build.sources, build.reader
    floor = sources.archived_through or 0
    if before - 1 <= floor:
        return []
    events = reader.load(
        reader.user_id,
        reader.session_id,
        last=SCANNED_EVENTS,
        start_seq=floor + 1,
        end_seq=before - 1,
    )
    hidden = sources.hidden
    return [e for e in events if e.type not in _NOT_SHOWN and (hidden is None or not hidden(e.seq))]
