"""Memory search latency: p50/p95 of ``MemoryIndex.search`` for one user with N memories.

Fills a fresh database with synthetic memories (short sentences from a fixed
vocabulary, inserted in batches straight into ``memories`` and indexed through
:meth:`MemoryIndex.index_memories`), then times ``queries`` searches of 2-4 words.
Uses the hashing embedder (fast, always available); the report names it.
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import timedelta

from agentctx.events import utcnow
from agentctx.llm.hashing import HashingEmbedder
from agentctx.memory.index import MemoryIndex
from agentctx.memory.models import Memory, MemoryKind
from agentctx.storage.database import Database
from agentctx.storage.migrate import upgrade
from agentctx.storage.schema import memories

_SUBJECTS = [
    "user",
    "daughter",
    "son",
    "partner",
    "manager",
    "team",
    "client",
    "doctor",
    "friend",
    "landlord",
]
_VERBS = [
    "likes",
    "prefers",
    "avoids",
    "uses",
    "visits",
    "books",
    "orders",
    "reads",
    "plays",
    "needs",
    "wants",
]
_OBJECTS = [
    "coffee",
    "tea",
    "sushi",
    "pizza",
    "trains",
    "flights",
    "hotels",
    "python",
    "rust",
    "jazz",
    "violin",
    "tennis",
    "chess",
    "museums",
    "hiking",
    "cycling",
    "yoga",
    "novels",
    "podcasts",
    "espresso",
    "ramen",
    "opera",
    "sailing",
    "skiing",
    "kubernetes",
    "postgres",
    "spreadsheets",
    "invoices",
    "meetings",
    "standups",
    "vacations",
    "concerts",
]
_DETAILS = [
    "on weekends",
    "every morning",
    "when travelling",
    "at work",
    "with friends",
    "in winter",
    "after lunch",
    "before meetings",
    "on long trips",
    "in the evening",
    "during holidays",
    "for the project",
]


@dataclass(frozen=True, slots=True)
class LatencyRow:
    """The figures for one size."""

    size: int
    fill_seconds: float
    p50_ms: float
    p95_ms: float
    dense: bool


@dataclass(frozen=True, slots=True)
class MemoryLatencyReport:
    """Search latency per size, and which embedder produced the vectors."""

    url: str
    embedder: str
    queries: int
    rows: tuple[LatencyRow, ...]


def _sentence(rng: random.Random) -> str:
    return (
        f"The {rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} {rng.choice(_OBJECTS)} "
        f"and {rng.choice(_OBJECTS)} {rng.choice(_DETAILS)}"
    )


def _fill(db: Database, index: MemoryIndex, user_id: str, size: int, rng: random.Random) -> None:
    now = utcnow()
    kinds = list(MemoryKind)
    batch = 2000
    for start in range(0, size, batch):
        items = []
        for i in range(start, min(size, start + batch)):
            at = now - timedelta(days=rng.uniform(0, 400))
            items.append(
                Memory(
                    memory_id=f"m{size}_{i:08d}",
                    user_id=user_id,
                    agent_id=None,
                    session_id=None,
                    kind=kinds[i % len(kinds)],
                    subject=None,
                    content=_sentence(rng),
                    data={},
                    keywords=(rng.choice(_OBJECTS),),
                    confidence=rng.uniform(0.3, 1.0),
                    support_count=1,
                    tainted=False,
                    version=1,
                    status="active",
                    extractor_version="bench",
                    model=None,
                    created_at=at,
                    updated_at=at,
                    expires_at=None,
                )
            )
        with db.write() as conn:
            rows = []
            for m in items:
                row = m.model_dump(exclude={"sources"})
                row["kind"] = m.kind.value
                row["keywords"] = list(m.keywords)
                rows.append(row)
            conn.execute(memories.insert(), rows)
        index.index_memories(items)


def run_memory_latency(
    url: str, sizes: Sequence[int] = (10_000, 100_000), *, queries: int = 200
) -> MemoryLatencyReport:
    """Fill a fresh database at ``url`` (one user per size) and time searches.

    The database must be empty (a new SQLite file or PostgreSQL database).
    """
    db = Database(url)
    try:
        upgrade(db)
        embedder = HashingEmbedder()
        index = MemoryIndex(db, embedder)
        rng = random.Random(7)
        rows = []
        for size in sizes:
            user_id = f"bench-{size}"
            started = time.perf_counter()
            _fill(db, index, user_id, size, rng)
            fill = time.perf_counter() - started
            words = [*_OBJECTS, *_VERBS, *_SUBJECTS]
            texts = [" ".join(rng.sample(words, rng.randint(2, 4))) for _ in range(queries)]
            for q in texts[:5]:  # warm caches (the code cache loads on first use)
                index.search(user_id, q)
            timings = []
            for q in texts:
                t0 = time.perf_counter()
                index.search(user_id, q, limit=10)
                timings.append((time.perf_counter() - t0) * 1000)
            timings.sort()
            rows.append(
                LatencyRow(
                    size=size,
                    fill_seconds=fill,
                    p50_ms=statistics.median(timings),
                    p95_ms=timings[max(0, int(len(timings) * 0.95) - 1)],
                    dense=index.dense_enabled,
                )
            )
        return MemoryLatencyReport(url, embedder.name, queries, tuple(rows))
    finally:
        db.dispose()
