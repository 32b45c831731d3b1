"""A user's memory reads (list, search) through the hot cache.

The key of a cached read is the user's *generation*: a fingerprint the database owns,
read fresh before every cached read (one round trip of aggregates over the user's
rows, by index):

* memories: count, min and max ``updated_at``, the sums of ``version`` and
  ``support_count`` (every write bumps a version, ``updated_at`` or the count);
* memory history: count and newest id (every change records a row);
* for searches, the index documents: count and newest ``doc_id`` (never reused, so any
  re-index moves it).

A read computed after reading generation G is stored under G, so a stored entry never
predates its key; a reader whose fresh generation differs simply misses. Deleting or
purging memories changes the generation even when dropping the cached entries fails.

Searches depend on the clock too: expired memories drop out, and freshness weighs
scores. A cached search is served only until the next ``expires_at`` of the user's
memories, and only while the freshness of every memory of the user decays alike (all
younger than the freshness floor's age, or all older; the ratio of two decaying
freshness values never changes, so neither does the ranking). Its scores are
recomputed for the current time, by the index's own formula.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from pydantic import TypeAdapter
from sqlalchemy import bindparam, func, select, text, true, type_coerce

from agentctx.cache.base import HotCache
from agentctx.events import utcnow
from agentctx.memory.index_tables import DOCS_TABLE, user_partition
from agentctx.memory.models import Memory, MemoryHit
from agentctx.storage.database import Database
from agentctx.storage.schema import UTCDateTime, memories, memory_history

if TYPE_CHECKING:
    from agentctx.memory.index import MemoryIndex

_MEMORIES = TypeAdapter(list[Memory])
_HITS = TypeAdapter(list[MemoryHit])


@dataclass(frozen=True, slots=True)
class Generation:
    """The user's memory generation and what a search's validity needs of it."""

    key: str
    count: int
    oldest_update: datetime | None
    newest_update: datetime | None
    next_expiry: datetime | None


def _digest(value: Any) -> str:
    encoded = json.dumps(value, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(encoded.encode()).hexdigest()[:32]


def _aware(value: Any) -> datetime | None:
    if value is None:
        return None
    when = value if isinstance(value, datetime) else datetime.fromisoformat(str(value))
    return when if when.tzinfo else when.replace(tzinfo=UTC)


def read_generation(db: Database, user_id: str, *, docs: bool, now: datetime) -> Generation:
    """The user's generation, read from the database now (see the module docstring)."""
    m = memories
    rows = (
        select(
            func.count().label("n"),
            type_coerce(func.min(m.c.updated_at), UTCDateTime()).label("oldest"),
            type_coerce(func.max(m.c.updated_at), UTCDateTime()).label("newest"),
            func.coalesce(func.sum(m.c.version), 0).label("versions"),
            func.coalesce(func.sum(m.c.support_count), 0).label("support"),
        )
        .where(m.c.user_id == user_id)
        .subquery()
    )
    history = (
        select(
            func.count().label("h_n"),
            func.coalesce(func.max(memory_history.c.history_id), 0).label("h_max"),
        )
        .where(memory_history.c.user_id == user_id)
        .subquery()
    )
    expiry = (
        select(type_coerce(func.min(m.c.expires_at), UTCDateTime()).label("expiry"))
        .where(m.c.user_id == user_id, m.c.expires_at > bindparam("now", type_=UTCDateTime()))
        .subquery()
    )
    query = select(rows, history, expiry).select_from(
        rows.join(history, true()).join(expiry, true())
    )
    with db.read() as conn:
        row = conn.execute(query, {"now": now}).one()
        parts: list[Any] = [
            row.n,
            row.newest,
            row.oldest,
            int(row.versions),
            int(row.support),
            row.h_n,
            row.h_max,
        ]
        if docs:
            found = conn.execute(
                text(
                    f"SELECT count(*), coalesce(max(doc_id), 0) FROM {DOCS_TABLE} "
                    "WHERE uid = :uid AND user_id = :u"
                ),
                {"uid": user_partition(user_id), "u": user_id},
            ).one()
            parts += [int(found[0]), int(found[1])]
    return Generation(
        key=_digest(parts),
        count=int(row.n),
        oldest_update=_aware(row.oldest),
        newest_update=_aware(row.newest),
        next_expiry=_aware(row.expiry),
    )


def search_valid_until(
    generation: Generation, now: datetime, *, half_life_days: float, floor: float
) -> datetime | None:
    """Until when a search computed at ``now`` ranks as a fresh one would; None: do not
    cache it (the user's memories straddle the freshness floor, or one is dated in
    the future)."""
    forever = datetime.max.replace(tzinfo=UTC)
    until = generation.next_expiry or forever
    oldest, newest = generation.oldest_update, generation.newest_update
    if generation.count == 0 or oldest is None or newest is None:
        return until
    if newest > now:
        return None
    if floor <= 0 or floor >= 1:  # never at the floor, or always: one rate for all
        return until
    floor_age = timedelta(days=half_life_days * math.log2(1 / floor))
    if oldest > now - floor_age:  # all decaying; the oldest reaches the floor first
        return min(until, oldest + floor_age)
    if newest <= now - floor_age:  # all at the floor for good
        return until
    return None


class MemoryReads:
    """Memory list and search reads through a hot cache (a no-op cache computes)."""

    def __init__(self, cache: HotCache, db: Database, index: MemoryIndex | None) -> None:
        self.cache = cache
        self.db = db
        self.index = index

    def _generation(self, user_id: str, now: datetime) -> Generation:
        # One generation for lists and searches alike (they share the user's entries).
        if self.index is not None:
            self.index.dense_enabled  # noqa: B018 - creates the index tables read here
        return read_generation(self.db, user_id, docs=self.index is not None, now=now)

    def cached_list(
        self, user_id: str, args: dict[str, Any], compute: Callable[[], list[Memory]]
    ) -> list[Memory]:
        """``compute()`` (a ``MemoryService.list`` read with ``args``), cached."""
        if not self.cache.enabled:
            return compute()
        generation = self._generation(user_id, utcnow())
        name = "list:" + _digest(args)
        raw = self.cache.get_entry(user_id, generation.key, name)
        if raw is not None:
            try:
                return _MEMORIES.validate_json(raw)
            except ValueError:
                pass  # a damaged entry is a miss
        result = compute()
        self.cache.put_entry(user_id, generation.key, name, _MEMORIES.dump_json(result).decode())
        return result

    def cached_search(
        self,
        user_id: str,
        args: dict[str, Any],
        compute: Callable[[], list[MemoryHit]],
        *,
        index: MemoryIndex,
    ) -> list[MemoryHit]:
        """``compute()`` (``index.search`` with ``args``), cached while its ranking holds;
        scores are those of the current time."""
        if not self.cache.enabled:
            return compute()
        now = utcnow()
        generation = self._generation(user_id, now)
        embedder = index.embedder
        name = "search:" + _digest(
            {**args, "embedder": [embedder.name, embedder.dimensions] if embedder else None}
        )
        raw = self.cache.get_entry(user_id, generation.key, name)
        if raw is not None:
            hits = self._cached_hits(raw, index)
            if hits is not None:
                return hits
        result = compute()
        until = search_valid_until(
            generation, now, half_life_days=index.half_life_days, floor=index.freshness_floor
        )
        if until is not None:
            entry = {
                "until": until.isoformat(),
                "hits": json.loads(_HITS.dump_json(result)),
            }
            self.cache.put_entry(user_id, generation.key, name, json.dumps(entry))
        return result

    def _cached_hits(self, raw: str, index: MemoryIndex) -> list[MemoryHit] | None:
        from agentctx.memory.index import freshness  # noqa: PLC0415 - imports retrieval

        try:
            entry = json.loads(raw)
            until = datetime.fromisoformat(entry["until"])
            hits = _HITS.validate_python(entry["hits"])
        except (ValueError, KeyError, TypeError):
            return None
        now = utcnow()
        if now >= until:
            return None
        # The index's score, at this moment: relevance * confidence * freshness.
        return [
            hit.model_copy(
                update={
                    "score": hit.relevance
                    * hit.memory.confidence
                    * freshness(
                        hit.memory.updated_at,
                        now,
                        half_life_days=index.half_life_days,
                        floor=index.freshness_floor,
                    )
                }
            )
            for hit in hits
        ]
