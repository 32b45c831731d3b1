"""``LocalCache``: the hot cache in this process's memory, the default without Redis.

An agent calls ``build_context`` before every model call, and each build reads the
same events again: the recent turns, and the older events its search finds (hundreds
in a large window). Parsing them from the database was about a fifth of a build.
Here they are kept packed into tuples of plain values (:func:`~agentctx.events.pack_event`),
which Python's collector stops tracking: built events would be half a dozen tracked
objects each, and a full cache made every full collection tens of milliseconds
slower. Unpacking on a hit is a few microseconds. Keys are those a Redis cache uses,
and reads are validated the same way: every read still reads the session's head from
the database (:mod:`agentctx.cache.events`), so another process's writes, a deletion
or a recreated session are seen at once.

Bounded two ways, least recently used sessions going first: ``local_events`` events
in all, and ``local_tokens`` of their estimated tokens (a long tool output is one
event but many kilobytes). Thread-safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from agentctx.cache.base import CacheStats, SessionScope
from agentctx.cache.bounded import Lru
from agentctx.events import Event, PackedEvent, pack_event, unpack_event

MEMORY_ENTRIES = 1024
"""A user's memory reads kept (list and search results, keyed by generation)."""

BUILT_EVENTS = 4096
"""Events also kept built, for readers that never change them (``shared`` reads: the
window builder). An agent's windows read the same few hundred newest events call after
call; unpacking them each time (their JSON parsed again) was the largest part of a
window's reading. A few thousand built events are little for the collector to track."""


_Held = tuple[int, PackedEvent]
"""A cached event: its estimated tokens (for the bound) and the event, packed."""


class LocalCache:
    """The hot cache in process memory (see the module docstring)."""

    def __init__(self, max_events: int, *, events: int, tokens: int) -> None:
        self._max_read = max_events
        self._events_cap = events
        self._tokens_cap = tokens
        self._lock = threading.Lock()
        # Sessions, least recently used first; each maps seq -> (tokens, packed event).
        self._sessions: OrderedDict[SessionScope, dict[int, _Held]] = OrderedDict()
        self._events = 0
        self._tokens = 0
        self._entries: Lru[tuple[str, str, str], str] = Lru(MEMORY_ENTRIES)
        self._built: Lru[tuple[SessionScope, int], Event] = Lru(BUILT_EVENTS)
        self._stats = CacheStats()

    @property
    def enabled(self) -> bool:
        return True

    @property
    def max_events(self) -> int:
        return self._max_read

    def __len__(self) -> int:
        """Events held now."""
        with self._lock:
            return self._events

    # Events -----------------------------------------------------------------------------

    def get_events(
        self, scope: SessionScope, seqs: Sequence[int], *, shared: bool = False
    ) -> dict[int, Event]:
        if shared:
            return self._shared_events(scope, seqs)
        with self._lock:
            held = self._sessions.get(scope)
            hits: list[tuple[int, PackedEvent]] = []
            if held is not None:
                self._sessions.move_to_end(scope)
                for seq in seqs:
                    entry = held.get(seq)
                    if entry is not None:
                        hits.append((seq, entry[1]))
            self._count(event_hits=len(hits), event_misses=len(seqs) - len(hits))
        # Unpacked outside the lock: other threads' reads need not wait for it.
        return {seq: unpack_event(packed) for seq, packed in hits}

    def _shared_events(self, scope: SessionScope, seqs: Sequence[int]) -> dict[int, Event]:
        """:meth:`get_events` for a reader that never changes what it gets: events built
        before are handed out again, the others unpacked once and kept built."""
        built = self._built.get_many([(scope, seq) for seq in seqs])
        found = {seq: event for (_, seq), event in built.items()}
        unbuilt = [seq for seq in seqs if seq not in found] if len(found) < len(seqs) else []
        if found:
            with self._lock:
                self._count(event_hits=len(found))
        if unbuilt:
            for seq, event in self.get_events(scope, unbuilt).items():
                found[seq] = event
                self._built.put((scope, seq), event)
        return found

    def put_events(self, scope: SessionScope, events: Sequence[Event]) -> None:
        with self._lock:
            held = self._sessions.get(scope)
            if held is None:
                held = self._sessions[scope] = {}
            else:
                self._sessions.move_to_end(scope)
            for event in events:
                if event.seq in held:
                    continue
                tokens = event.token_estimate
                if tokens > self._tokens_cap or self._events_cap == 0:
                    continue  # larger than the whole cache: read it from the database
                held[event.seq] = (tokens, pack_event(event))
                self._events += 1
                self._tokens += tokens
            self._evict(keep=scope)

    def _evict(self, *, keep: SessionScope) -> None:
        """Drop least recently used sessions (then the oldest events of ``keep``) until
        both bounds hold."""
        # ``keep`` was just used, so it is the newest: the oldest is always another one.
        while self._over() and len(self._sessions) > 1:
            self._forget(self._sessions.popitem(last=False)[1])
        held = self._sessions.get(keep)
        if held is not None and self._over():
            # One session larger than the cache: keep its newest events, the ones
            # recent windows read.
            for seq in sorted(held):
                if not self._over():
                    break
                tokens, _ = held.pop(seq)
                self._events -= 1
                self._tokens -= tokens

    def _over(self) -> bool:
        return self._events > self._events_cap or self._tokens > self._tokens_cap

    def _forget(self, held: dict[int, _Held]) -> None:
        self._events -= len(held)
        self._tokens -= sum(tokens for tokens, _ in held.values())

    # Generation-keyed entries -----------------------------------------------------------

    def get_entry(self, user_id: str, generation: str, name: str) -> str | None:
        value = self._entries.get((user_id, generation, name))
        with self._lock:
            self._count(memory_hits=int(value is not None), memory_misses=int(value is None))
        return value

    def put_entry(self, user_id: str, generation: str, name: str, value: str) -> None:
        self._entries.put((user_id, generation, name), value)

    # Drops ------------------------------------------------------------------------------

    def drop_session(self, user_id: str, session_id: str) -> None:
        session = (user_id, session_id)
        self._built.discard(lambda key: (key[0].user_id, key[0].session_id) == session)
        with self._lock:
            for scope in [
                s for s in self._sessions if s.user_id == user_id and s.session_id == session_id
            ]:
                self._forget(self._sessions.pop(scope))

    def drop_memories(self, user_id: str) -> None:
        self._entries.discard(lambda key: key[0] == user_id)

    def drop_user(self, user_id: str) -> None:
        self._built.discard(lambda key: key[0].user_id == user_id)
        with self._lock:
            for scope in [s for s in self._sessions if s.user_id == user_id]:
                self._forget(self._sessions.pop(scope))
        self.drop_memories(user_id)

    # Counters ---------------------------------------------------------------------------

    def _count(self, **deltas: int) -> None:  # under self._lock
        self._stats = self._stats.plus(**deltas)

    def stats(self) -> CacheStats:
        with self._lock:
            return self._stats

    def drop_local(self) -> None:
        self._built.clear()
        with self._lock:
            self._sessions.clear()
            self._entries.clear()
            self._events = self._tokens = 0

    def close(self) -> None:
        self.drop_local()
