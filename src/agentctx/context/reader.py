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
    """One build's reads of one session. The newest events read are kept, so a later,
    longer read of the same tail reads only the events before them."""

    load: EventLoader
    user_id: str
    session_id: str
    fetched: dict[int, Event] = field(default_factory=dict)
    _tail: dict[int | None, tuple[list[Event], bool]] = field(default_factory=dict)
    _weights: dict[int, int] = field(default_factory=dict)

    def weight(self, event: Event) -> int:
        """The event's history weight (``agentctx.tokens.weight``), computed once."""
        found = self._weights.get(event.seq)
        if found is None:
            found = self._weights[event.seq] = event_weight(event)
        return found

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
        while True:
            read, complete = self._last(limit, after_seq)
            shown = [e for e in read if not hidden(e.seq)] if hidden is not None else read
            if complete:
                return Recent(read, shown, True)
            have = sum(self.weight(e) for e in shown)
            if have >= needed * 1.25:
                return Recent(read, shown, False)
            if not unbounded and limit >= MOST_READ:
                return Recent(read, shown, False)
            # Jump to about as many events as the weight still missing needs (at what the
            # events read so far weigh), rather than growing the tail step by step.
            per_event = max(1.0, have / max(1, len(shown)))
            wanted = int(needed * 1.25 / per_event * 1.2) + 1
            limit = max(limit * 2, min(wanted, limit * 16))

    def _last(self, count: int, after_seq: int | None) -> tuple[list[Event], bool]:
        """The last ``count`` events after ``after_seq``, and whether they are all of them.
        What was read before is kept: only the events before it are read now, so a
        build reads no event twice, and a read gives the same events whatever came before
        it."""
        first = (after_seq or 0) + 1
        start = first if after_seq else None
        tail, complete = self._tail.get(after_seq, ([], False))
        if len(tail) < count and not complete:
            if tail:
                older = self.load(
                    self.user_id,
                    self.session_id,
                    last=count - len(tail),
                    start_seq=start,
                    end_seq=tail[0].seq - 1,
                )
                complete = len(older) < count - len(tail)
            else:
                older = self.load(self.user_id, self.session_id, last=count, start_seq=start)
                complete = len(older) < count
            tail = older + tail
            complete = complete or bool(tail and tail[0].seq == first)
            self._tail[after_seq] = (tail, complete)
        if len(tail) <= count:
            return tail, complete
        return tail[-count:], False

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
