"""MemoryIndex: hybrid search over a user's memories, on SQLite and PostgreSQL."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from sqlalchemy import delete, func, select, text

from agentctx.llm.hashing import HashingEmbedder
from agentctx.memory.index import MemoryIndex, freshness
from agentctx.memory.models import Memory, MemoryKind
from agentctx.memory.store import insert_memory
from agentctx.storage.database import Database
from agentctx.storage.migrate import upgrade
from agentctx.storage.schema import memories

NOW = datetime(2026, 6, 1, tzinfo=UTC)
_ids = itertools.count(1)


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    upgrade(database)
    yield database
    database.dispose()


def make(
    user_id: str,
    content: str,
    *,
    kind: MemoryKind = MemoryKind.FACT,
    agent_id: str | None = None,
    data: dict[str, Any] | None = None,
    keywords: tuple[str, ...] = (),
    confidence: float = 0.8,
    status: str = "active",
    age_days: float = 1.0,
    expires_at: datetime | None = None,
) -> Memory:
    at = NOW - timedelta(days=age_days)
    return Memory(
        memory_id=f"mem_{next(_ids):06d}",
        user_id=user_id,
        agent_id=agent_id,
        session_id=None,
        kind=kind,
        subject=None,
        content=content,
        data=data or {},
        keywords=keywords,
        confidence=confidence,
        support_count=1,
        tainted=False,
        version=1,
        status=status,  # type: ignore[arg-type]
        extractor_version="test",
        model=None,
        created_at=at,
        updated_at=at,
        expires_at=expires_at,
    )


def store(db: Database, *items: Memory) -> list[Memory]:
    with db.write() as conn:
        for m in items:
            row = m.model_dump(exclude={"sources"})
            row["kind"] = m.kind.value
            row["keywords"] = list(m.keywords)
            insert_memory(conn, row)
    return list(items)


def ids(hits: Any) -> list[str]:
    return [h.memory.memory_id for h in hits]


@pytest.mark.parametrize("dense", [True, False])
def test_relevant_memory_ranks_first_and_other_users_never_show(db: Database, dense: bool) -> None:
    index = MemoryIndex(db, HashingEmbedder() if dense else None)
    mine = store(
        db,
        make("u1", "The user is allergic to peanuts and shellfish"),
        make("u1", "Prefers window seats on long flights", kind=MemoryKind.PREFERENCE),
        make("u1", "Works as a data engineer in Berlin", kind=MemoryKind.PROFILE),
    )
    theirs = store(db, make("u2", "Allergic to peanuts, carries an epipen"))
    index.index_memories([*mine, *theirs])
    assert index.dense_enabled is dense
    hits = index.search("u1", "peanut allergy", now=NOW)
    assert hits and hits[0].memory.memory_id == mine[0].memory_id
    assert hits[0].lexical_rank == 1
    assert theirs[0].memory_id not in ids(hits)
    assert 0 < hits[0].score <= hits[0].relevance <= 1.0
    seats = index.search("u1", "which seat on a flight", now=NOW)
    assert seats[0].memory.memory_id == mine[1].memory_id
    assert index.search("u3", "peanut allergy", now=NOW) == []
    assert ids(index.search("u2", "peanuts", now=NOW)) == [theirs[0].memory_id]


def test_filters_kinds_agent_data_status_expiry(db: Database) -> None:
    index = MemoryIndex(db, HashingEmbedder())
    fact = make("u1", "Coffee order: oat milk flat white", agent_id="barista")
    pref = make("u1", "Likes coffee without sugar", kind=MemoryKind.PREFERENCE, agent_id="helper")
    proc = make(
        "u1",
        "Order coffee through the cafe app",
        kind=MemoryKind.PROCEDURAL,
        data={"scenario": "order coffee", "tools": ["cafe_app"], "successes": 3},
    )
    stale = make("u1", "Drinks coffee with honey", status="stale")
    expired = make("u1", "Coffee plan for last week", expires_at=NOW - timedelta(hours=1))
    later = make("u1", "Coffee tasting next month", expires_at=NOW + timedelta(days=3))
    everything = store(db, fact, pref, proc, stale, expired, later)
    index.index_memories(everything)

    found = set(ids(index.search("u1", "coffee", limit=20, now=NOW)))
    assert found == {fact.memory_id, pref.memory_id, proc.memory_id, later.memory_id}
    by_kind = index.search("u1", "coffee", kinds=[MemoryKind.PREFERENCE], now=NOW)
    assert ids(by_kind) == [pref.memory_id]
    assert ids(index.search("u1", "coffee", agent_id="barista", now=NOW)) == [fact.memory_id]
    assert ids(index.search("u1", "coffee", filters={"scenario": "order coffee"}, now=NOW)) == [
        proc.memory_id
    ]
    assert ids(index.search("u1", "coffee", filters={"successes": 3}, now=NOW)) == [proc.memory_id]
    assert index.search("u1", "coffee", filters={"successes": 4}, now=NOW) == []
    with_stale = ids(index.search("u1", "coffee", statuses=("stale",), now=NOW))
    assert with_stale == [stale.memory_id]
    # The expired one comes back only for a time before it expired.
    earlier = ids(index.search("u1", "coffee plan", limit=20, now=NOW - timedelta(days=1)))
    assert expired.memory_id in earlier


def test_no_query_orders_by_confidence_and_freshness(db: Database) -> None:
    index = MemoryIndex(db, None)
    old_sure = make("u1", "Old but certain", confidence=0.9, age_days=400)
    new_sure = make("u1", "New and certain", confidence=0.9, age_days=1)
    new_unsure = make("u1", "New and unsure", confidence=0.3, age_days=0)
    store(db, old_sure, new_sure, new_unsure)
    index.index_memories([old_sure, new_sure, new_unsure])
    hits = index.search("u1", None, now=NOW)
    assert ids(hits) == [new_sure.memory_id, old_sure.memory_id, new_unsure.memory_id]
    assert hits[1].score == pytest.approx(0.9 * 0.5)  # floored
    assert ids(index.search("u1", "  ", limit=1, now=NOW)) == [new_sure.memory_id]


def test_freshness_half_life_and_floor() -> None:
    assert freshness(NOW, NOW, half_life_days=180, floor=0.5) == 1.0
    half = freshness(NOW - timedelta(days=90), NOW, half_life_days=90, floor=0.1)
    assert half == pytest.approx(0.5)
    assert freshness(NOW - timedelta(days=900), NOW, half_life_days=180, floor=0.5) == 0.5


def test_fresher_memory_wins_between_equally_relevant(db: Database) -> None:
    index = MemoryIndex(db, None)
    old = make("u1", "Lives in Lisbon", age_days=300)
    new = make("u1", "Lives in Lisbon", age_days=2)
    store(db, old, new)
    index.index_memories([old, new])
    assert ids(index.search("u1", "Lisbon", now=NOW)) == [new.memory_id, old.memory_id]


@pytest.mark.parametrize("dense", [True, False])
def test_similar_finds_paraphrase_not_unrelated(db: Database, dense: bool) -> None:
    index = MemoryIndex(db, HashingEmbedder() if dense else None)
    same = make("u1", "The user prefers dark mode in every code editor")
    other = make("u1", "The user's daughter plays the violin")
    elsewhere = make("u1", "The user prefers dark mode in every code editor", kind=MemoryKind.SKILL)
    foreign = make("u2", "The user prefers dark mode in every code editor")
    store(db, same, other, elsewhere, foreign)
    index.index_memories([same, other, elsewhere, foreign])
    found = index.similar("u1", MemoryKind.FACT, "User prefers dark mode in every code editor.")
    assert found[0][0].memory_id == same.memory_id
    assert found[0][1] >= 0.9
    scores = {m.memory_id: s for m, s in found}
    assert scores.get(other.memory_id, 0.0) < 0.5
    assert elsewhere.memory_id not in scores and foreign.memory_id not in scores
    assert index.similar("u1", MemoryKind.FACT, "quantum chromodynamics lecture") == [] or all(
        s < 0.5 for _, s in index.similar("u1", MemoryKind.FACT, "quantum chromodynamics")
    )


def _doc_count(db: Database) -> int:
    with db.read() as conn:
        return int(conn.execute(text("SELECT count(*) FROM memory_fts_docs")).scalar_one())


def test_reindex_is_idempotent_and_follows_changes(db: Database) -> None:
    index = MemoryIndex(db, HashingEmbedder())
    m = make("u1", "Has a cat named Miso")
    store(db, m)
    index.index_memories([m])
    index.index_memories([m, m])
    assert _doc_count(db) == 1
    assert len(index.search("u1", "cat Miso", now=NOW)) == 1
    changed = m.model_copy(update={"content": "Has a dog named Pixel", "version": 2})
    with db.write() as conn:
        conn.execute(
            memories.update()
            .where(memories.c.memory_id == m.memory_id)
            .values(content=changed.content)
        )
    index.index_memories([changed])
    assert _doc_count(db) == 1
    assert index.search("u1", "Miso", now=NOW) == []
    assert ids(index.search("u1", "dog Pixel", now=NOW)) == [m.memory_id]
    # A second index (another process) sees the same state and does not duplicate.
    MemoryIndex(db, HashingEmbedder()).index_memories([changed])
    assert _doc_count(db) == 1


def test_remove_and_deleting_memories_cleans_derived_tables(db: Database) -> None:
    index = MemoryIndex(db, HashingEmbedder())
    a, b, c = store(
        db,
        make("u1", "Speaks Portuguese"),
        make("u1", "Speaks Japanese"),
        make("u2", "Speaks Thai"),
    )
    index.index_memories([a, b, c])
    index.remove([a.memory_id])
    assert ids(index.search("u1", "speaks", now=NOW)) == [b.memory_id]
    with db.write() as conn:  # what delete_user_data does to the memories table
        conn.execute(delete(memories).where(memories.c.user_id == "u2"))
    assert index.search("u2", "speaks Thai", now=NOW) == []
    assert _doc_count(db) == 1
    with db.read() as conn:
        fts = conn.execute(text("SELECT count(*) FROM memory_fts")).scalar_one()
        vec = conn.execute(
            text(f"SELECT count(*) FROM memory_vec_{index._embedder_id}")
        ).scalar_one()
        left = conn.execute(select(func.count()).select_from(memories)).scalar_one()
    assert (fts, vec, left) == (1, 1, 2)


def test_index_inside_callers_transaction_rolls_back_with_it(db: Database) -> None:
    index = MemoryIndex(db, HashingEmbedder())
    m = make("u1", "Runs marathons every spring")
    prepared = index.prepare([m])

    class Boom(Exception):
        pass

    with pytest.raises(Boom), db.write() as conn:
        row = m.model_dump(exclude={"sources"})
        row["kind"] = m.kind.value
        insert_memory(conn, row)
        index.write(conn, prepared)
        raise Boom
    assert _doc_count(db) == 0
    store(db, m)
    with db.write() as conn:
        index.write(conn, index.prepare([m]))
    assert ids(index.search("u1", "marathon", now=NOW)) == [m.memory_id]


def test_large_user_uses_code_cache_and_still_finds_best(db: Database) -> None:
    index = MemoryIndex(db, HashingEmbedder(), exact_vector_limit=10, rescore_candidates=20)
    filler = [make("u1", f"Note {i} about topic {i % 7} and item {i}") for i in range(60)]
    target = make("u1", "Favourite composer is Arvo Part")
    store(db, *filler, target)
    index.index_memories([*filler, target])
    hits = index.search("u1", "favourite composer Arvo Part", now=NOW)
    assert hits[0].memory.memory_id == target.memory_id
    assert hits[0].dense_rank == 1
    later = make("u1", "Favourite composer is now Hildegard")
    store(db, later)
    index.index_memories([later])  # the cache notices the new document
    assert later.memory_id in ids(index.search("u1", "Hildegard composer", now=NOW))
