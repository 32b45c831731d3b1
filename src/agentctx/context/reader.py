"""Reading a session's log for one build: the newest events, older ones by seq, and its
system events. Every read goes through the session service's loader (``EventLoader``)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agentctx.context.sources import EventLoader
from agentctx.events import Event, EventType
from agentctx.tokens.weight import event_weight

FIRST_READ = 64
"""Events read first from the end of the log; more are read when they do not suffice."""

MOST_READ = 4096
"""The most events read from the end for a window, except by ``full`` (which may need
every message up to its limit)."""


@dataclass
class Recent:
    """The newest events of a session: all of them read (``read``, folded ones included)
    and those a window may show (``events``); ``complete`` when nothing older is left."""

    read: list[Event]
    events: list[Event]
    complete: bool


@dataclass
class LogReader:
    """One build's reads of one session."""

    load: EventLoader
    user_id: str
    session_id: str
    fetched: dict[int, Event] = field(default_factory=dict)

    def newest(
        self,
        needed: int,
        *,
        after_seq: int | None = None,
        hidden: Callable[[int], bool] | None = None,
        unbounded: bool = False,
    ) -> Recent:
        """The newest events, enough that those not ``hidden`` weigh ``needed`` (history
        weights: what they are likely to cost in a window, see ``agentctx.tokens.weight``).

        ``after_seq``: only events after it (those before are archived into topics, which
        stand for them). ``hidden``: seqs a window leaves out (folded into a summary,
        retracted); they do not count towards ``needed``. ``unbounded``: read as far back
        as needed rather than at most :data:`MOST_READ` events.
        """
        limit = FIRST_READ
        first = (after_seq or 0) + 1
        start = first if after_seq else None
        read = self.load(self.user_id, self.session_id, last=limit, start_seq=start)
        while True:
            shown = [e for e in read if not hidden(e.seq)] if hidden is not None else read
            if len(read) < limit or (read and read[0].seq == first):
                return Recent(read, shown, True)
            have = sum(event_weight(e) for e in shown)
            if have >= needed * 1.25:
                return Recent(read, shown, False)
            if not unbounded and limit >= MOST_READ:
                return Recent(read, shown, False)
            # Jump to about as many events as the weight still missing needs (at what the
            # events read so far weigh), rather than growing the tail step by step; only
            # the events before those already read are read.
            per_event = max(1.0, have / max(1, len(shown)))
            wanted = int(needed * 1.25 / per_event * 1.2) + 1
            limit = max(limit * 2, min(wanted, limit * 16))
            older = self.load(
                self.user_id,
                self.session_id,
                last=limit - len(read),
                start_seq=start,
                end_seq=read[0].seq - 1,
            )
            read = older + read

    def fetch(self, seqs: Sequence[int]) -> list[Event]:
        """Older events by seq (retrieved hits and their neighbours), in seq order."""
        wanted = [s for s in seqs if s not in self.fetched]
        if wanted:
            for event in self.load(self.user_id, self.session_id, seqs=wanted):
                self.fetched[event.seq] = event
        return [self.fetched[s] for s in sorted(set(seqs)) if s in self.fetched]

    def system_events(self) -> list[Event]:
        """The session's own ``system`` events (its instructions), in seq order."""
        return self.load(self.user_id, self.session_id, types=[EventType.SYSTEM])
