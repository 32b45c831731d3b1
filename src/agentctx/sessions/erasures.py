"""The erasure feed: how every process sharing a database learns of a deletion.

``delete_user_data`` deletes a user's rows, ``delete_session`` a session's, and the
engine that ran it clears what it holds of them in memory: the search index's
vectors, author names and query embeddings, the memory index's vector codes, the
local hot cache. Other processes on the same database (server workers, replicas on
one PostgreSQL, a CLI beside a server on one SQLite file) hold copies of their own.
Those are never served stale (every cached read is validated against the database,
and session and partition numbers are never reused), but deleted data must not stay
in their memory either.

So every deletion writes one ``erasures`` row, and every engine reads the feed
(:class:`ErasureFeed`) and forgets the users and sessions it names; by default a
background thread (:class:`ErasureWatcher`) reads it once a second.

The row is written in the deleting transaction, unstamped, and stamped in a short
transaction of its own once that committed. Readers only see stamped rows, so none
learns of a deletion before the data is gone; and a process that dies between the two
leaves the unstamped row behind, which the next engine to start or the next sweep
stamps (:meth:`ErasureFeed.stamp_pending`). A deletion is thus never lost to the feed:
it commits with its row or not at all.

Reading by id would not do: on PostgreSQL ids come from a sequence, and a transaction
that took a smaller id can commit after one that took a larger, so "ids above the
last one seen" can skip a row for good. Rows are read by time instead: each poll reads
the rows stamped since :data:`ERASURE_LAG` before the previous poll began and skips
the ones it has applied. A row is stamped alone, in a transaction that commits right
after stamping it, so its stamp is never older than the lag when it becomes visible,
as long as the hosts' clocks agree within the lag.

The feed is kept for ``erasure_retention`` (the sweep trims it). An engine that has
not polled for longer than that (a process suspended for days) cannot know what it
missed, and forgets everything it holds.
"""

from __future__ import annotations

import logging
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import TYPE_CHECKING

from sqlalchemy import Connection, delete, insert, select, update

from agentctx.cache import HotCache
from agentctx.events import utcnow
from agentctx.retrieval.index import SearchIndex
from agentctx.storage.database import Database
from agentctx.storage.schema import erasures

if TYPE_CHECKING:
    from agentctx.context.prefix import PrefixMemory
    from agentctx.memory.index import MemoryIndex

log = logging.getLogger(__name__)

ERASURE_LAG = timedelta(minutes=1)
"""How far back of its previous poll each poll reads: more than any commit takes after
its row is stamped, plus the clock difference between hosts."""


@dataclass(frozen=True, slots=True)
class Erasure:
    """One deletion: all of a user's data, or one of their sessions."""

    user_id: str
    session_id: str | None = None  # None: everything of the user
    search_sid: int | None = None  # the session's number in the search index, if indexed


@dataclass(frozen=True, slots=True)
class Erased:
    """What a poll of the feed found."""

    erasures: list[Erasure] = field(default_factory=list)  # since the last poll, in order
    everything: bool = False  # the feed was trimmed past the last poll: forget all


class ErasureFeed:
    """The ``erasures`` table as one engine reads and writes it. Thread-safe."""

    def __init__(
        self,
        db: Database,
        *,
        retention: timedelta,
        lag: timedelta = ERASURE_LAG,
        clock: Callable[[], datetime] = utcnow,
    ) -> None:
        self.db = db
        self.retention = retention
        self.lag = lag
        self._clock = clock
        self._polled: datetime | None = None  # when the last poll began
        self._applied: dict[int, datetime] = {}  # erasure id -> stamp, within the window
        self._lock = threading.Lock()

    def note(self, conn: Connection, erasure: Erasure) -> int:
        """Write ``erasure``'s row, unstamped, in the deleting write transaction ``conn``;
        its id, for :meth:`stamp` once that committed."""
        return int(
            conn.execute(
                insert(erasures)
                .values(
                    user_id=erasure.user_id,
                    session_id=erasure.session_id,
                    search_sid=erasure.search_sid,
                    erased_at=None,
                )
                .returning(erasures.c.erasure_id)
            ).scalar_one()
        )

    def stamp(self, erasure_id: int) -> None:
        """Stamp a row :meth:`note` wrote, once its deletion committed: the other engines
        read it from then on (its own short transaction: see the module docstring). This
        engine forgets the data itself, so its polls skip the row."""
        stamp = self._clock()
        with self.db.write() as conn:
            conn.execute(
                update(erasures)
                .where(erasures.c.erasure_id == erasure_id, erasures.c.erased_at.is_(None))
                .values(erased_at=stamp)
            )
        with self._lock:
            self._applied[erasure_id] = stamp

    def stamp_pending(self) -> int:
        """Stamp the rows whose deletion committed but whose engine died before stamping
        them (recovery: at start and in the sweep); returns how many. Every engine,
        this one included, then forgets what they name at its next poll."""
        unstamped = erasures.c.erased_at.is_(None)
        with self.db.read() as conn:  # most calls find none: no write lock for them
            found = conn.execute(select(erasures.c.erasure_id).where(unstamped).limit(1))
            if found.first() is None:
                return 0
        with self.db.write() as conn:
            stamp = self._clock()
            stamped = conn.execute(update(erasures).where(unstamped).values(erased_at=stamp))
            return int(stamped.rowcount or 0)

    def poll(self) -> Erased:
        """The deletions made by other engines since the previous poll (the first poll
        reads back :data:`ERASURE_LAG`; an engine holds nothing before it starts)."""
        with self._lock:  # one poll at a time: each row is reported once
            started = self._clock()
            previous = self._polled
            since = (previous or started) - self.lag
            with self.db.read() as conn:
                rows = conn.execute(
                    select(erasures)
                    .where(erasures.c.erased_at >= since)
                    .order_by(erasures.c.erased_at, erasures.c.erasure_id)
                ).all()
            found: list[Erasure] = []
            for row in rows:
                if row.erasure_id not in self._applied:
                    self._applied[row.erasure_id] = row.erased_at
                    found.append(Erasure(row.user_id, row.session_id, row.search_sid))
            # Rows older than the window are never read again: their ids can go.
            self._applied = {i: s for i, s in self._applied.items() if s >= since}
            self._polled = started
        missed = previous is not None and started - previous > self.retention - self.lag
        return Erased(list(dict.fromkeys(found)), everything=missed)

    def trim(self, now: datetime) -> int:
        """Delete the rows older than the retention (the sweep's part); returns how many."""
        with self.db.write() as conn:
            gone = conn.execute(delete(erasures).where(erasures.c.erased_at < now - self.retention))
            return int(gone.rowcount or 0)


class ErasureWatcher:
    """Calls ``apply`` every ``interval`` seconds on a daemon thread, until :meth:`stop`
    or until the object ``apply`` is a method of is garbage-collected (the thread holds
    it weakly, so an engine nobody closed does not live, and poll, for ever)."""

    def __init__(self, apply: Callable[[], object], interval: float) -> None:
        self._apply = weakref.WeakMethod(apply)
        self._interval = interval
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="agentctx-erasures", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        failing = False
        while not self._stop.wait(self._interval):
            apply = self._apply()
            if apply is None:
                return
            try:
                apply()
                failing = False
            except Exception:  # keep watching; one warning per run of failures
                log.log(
                    logging.DEBUG if failing else logging.WARNING,
                    "reading the erasure feed failed",
                    exc_info=True,
                )
                failing = True
            del apply

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the thread (a poll under way finishes first)."""
        self._stop.set()
        if self._thread is not threading.current_thread():
            self._thread.join(timeout)


class HeldCopies:
    """What an engine holds in memory of stored data, and how it lets go of a deleted
    user's or session's: the hot cache (events, memory reads), the search index's
    caches (vectors, sign codes, author names, aliases, query embeddings) and the
    memory index's vector codes. Stale copies are never served; these drops are so that
    deleted data does not stay in memory either."""

    def __init__(
        self,
        cache: HotCache,
        search_index: SearchIndex,
        memory_index: MemoryIndex | None,
        windows: PrefixMemory | None = None,
        texts: Callable[[], None] | None = None,
    ) -> None:
        self.cache = cache
        self.search_index = search_index
        self.memory_index = memory_index
        self.windows = windows  # each session's last window's fingerprints
        # Drops what the window builder and the redactors keep by text rather than by user
        # (token counts, downscaled images, tool output as windows show it, identifiers
        # found clean): all of it, on a user's erasure.
        self.texts = texts

    def forget_user(self, user_id: str | None) -> None:
        """Drop the user's copies (everyone's when None)."""
        if user_id is None:
            self.cache.drop_local()
        else:
            self.cache.drop_user(user_id)  # their memory reads included
        if self.memory_index is not None:
            self.memory_index.forget_user(user_id)
        self.search_index.forget_user(user_id)
        if self.windows is not None:
            self.windows.forget(user_id)
        if self.texts is not None:
            self.texts()

    def forget_session(self, erasure: Erasure) -> None:
        """Drop the copies of the session ``erasure`` names."""
        assert erasure.session_id is not None
        self.cache.drop_session(erasure.user_id, erasure.session_id)
        self.search_index.forget_session(erasure.user_id, erasure.session_id, erasure.search_sid)
        if self.windows is not None:
            self.windows.forget(erasure.user_id, erasure.session_id)

    def forget_erasure(self, erasure: Erasure) -> None:
        """Drop the copies of what ``erasure`` deleted: a user's or a session's."""
        if erasure.session_id is None:
            self.forget_user(erasure.user_id)
        else:
            self.forget_session(erasure)

    def forget(self, erased: Erased) -> None:
        """Drop the copies of everything ``erased`` names."""
        if erased.everything:
            self.forget_user(None)
        for erasure in erased.erasures:
            self.forget_erasure(erasure)


class Erasures:
    """An engine's side of the feed: it records the deletions it makes, forgets what it
    holds of them at once, and forgets those of other engines every ``poll`` seconds
    (in the background; None: on :meth:`catch_up` only)."""

    def __init__(
        self, db: Database, held: HeldCopies, *, retention: timedelta, poll: float | None
    ) -> None:
        self.feed = ErasureFeed(db, retention=retention)
        self.held = held
        self.feed.poll()  # the feed is read from now on
        self.feed.stamp_pending()  # deletions whose engine died before stamping them
        self._watch = ErasureWatcher(self.catch_up, poll) if poll is not None else None

    def within(self, conn: Connection, erasure: Erasure) -> int:
        """Note a deletion inside its write transaction ``conn``; pass the id returned
        to :meth:`committed` once the transaction committed."""
        return self.feed.note(conn, erasure)

    def committed(self, erasure_id: int, erasure: Erasure) -> None:
        """The deletion :meth:`within` noted committed: publish it and forget it here."""
        self.feed.stamp(erasure_id)
        self.held.forget_erasure(erasure)

    def catch_up(self) -> list[Erasure]:
        """Forget the deletions other engines made since the last call; returns them."""
        erased = self.feed.poll()
        self.held.forget(erased)
        return erased.erasures

    def close(self) -> None:
        """Stop reading the feed in the background."""
        if self._watch is not None:
            self._watch.stop()
