"""The memory index's lexical postings budget, its term counts, and the sign-code scan."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import text

from agentctx.memory import index_terms
from agentctx.memory.index import MemoryIndex
from agentctx.memory.index_tables import TERMS_TABLE, user_partition
from agentctx.memory.models import Memory, MemoryKind
from agentctx.memory.store import insert_memory, purge_user
from agentctx.retrieval.terms import query_terms
from agentctx.storage.database import Database
from agentctx.storage.migrate import upgrade

NOW = datetime(2026, 6, 1, tzinfo=UTC)
_ids = itertools.count(1)


@pytest.fixture
def db(db_url: str) -> Iterator[Database]:
    database = Database(db_url)
    upgrade(database)
    yield database
    database.dispose()


def make(user_id: str, content: str) -> Memory:
    at = NOW - timedelta(days=1)
    return Memory(
        memory_id=f"mb_{next(_ids):06d}",
        user_id=user_id,
        agent_id=None,
        session_id=None,
        kind=MemoryKind.FACT,
        subject=None,
        content=content,
        data={},
        keywords=(),
        confidence=0.8,
        support_count=1,
        tainted=False,
        version=1,
        status="active",
        extractor_version="test",
        model=None,
        created_at=at,
        updated_at=at,
        expires_at=None,
    )


def stored(db: Database, index: MemoryIndex, contents: list[str], user: str = "u1") -> list[str]:
    """Store and index memories one batch at a time, in order (doc_ids follow it)."""
    items = [make(user, c) for c in contents]
    with db.write() as conn:
        for m in items:
            row = m.model_dump(exclude={"sources"})
            row["kind"] = m.kind.value
            row["keywords"] = list(m.keywords)
            insert_memory(conn, row)
    index.index_memories(items)
    return [m.memory_id for m in items]


def lexical(index: MemoryIndex, query: str, user: str = "u1") -> list[str]:
    return [h.memory.memory_id for h in index.search(user, query, limit=50, now=NOW)]


def frequencies(db: Database, terms: list[str], user: str = "u1") -> dict[str, int]:
    with db.read() as conn:
        return index_terms.document_frequencies(conn, user_partition(user), terms)


CORPUS = [
    "Plays violin in a string quartet",
    "Drinks coffee every morning",
    "Coffee with oat milk, no sugar",
    "Takes the train to work",
    "Violin lessons on Tuesday with coffee after",
    "Allergic to peanuts",
    "Reads novels on the train",
    "Tea in the afternoon, coffee in the morning",
]


def test_budget_that_does_not_bite_keeps_the_full_ranking(db: Database) -> None:
    unbudgeted = MemoryIndex(db, max_lexical_postings=10**9)
    stored(db, unbudgeted, CORPUS)
    queries = ["coffee violin", "morning coffee train", "violin", "tea novels peanuts"]
    for query in queries:
        total = sum(frequencies(db, query_terms(query)).values())
        exact = MemoryIndex(db, max_lexical_postings=total, recent_window=1)
        assert lexical(exact, query) == lexical(unbudgeted, query)
        assert lexical(MemoryIndex(db), query) == lexical(unbudgeted, query)
    assert len(lexical(unbudgeted, "coffee violin")) == 5


def test_rarest_terms_win_when_the_budget_bites(db: Database) -> None:
    index = MemoryIndex(db, max_lexical_postings=5)
    ids = stored(db, index, [f"coffee note {i}" for i in range(12)] + ["violin solo", "violin"])
    assert frequencies(db, ["coffee", "violin", "oboe"]) == {"coffee": 12, "violin": 2, "oboe": 0}
    # coffee (12 documents) would pass the budget of 5: only violin is looked up.
    assert set(lexical(index, "coffee violin")) == set(ids[12:])
    assert len(lexical(MemoryIndex(db, max_lexical_postings=10**9), "coffee violin")) == 14


def test_every_term_over_the_budget(db: Database, backend: str) -> None:
    """PostgreSQL ranks the newest documents by all the terms; SQLite keeps the rarest
    term over every document (FTS5 reads postings cheaply)."""
    index = MemoryIndex(db, max_lexical_postings=5, recent_window=10)
    contents = [f"coffee tea entry {i}" for i in range(20)] + [f"coffee {i}" for i in range(10)]
    contents[27] = "coffee and tea"
    ids = stored(db, index, contents)
    hits = lexical(index, "coffee tea")
    if backend == "postgresql":
        assert hits[0] == ids[27]  # both terms, inside the newest ten
        assert set(hits) == set(ids[20:])
    else:
        assert set(hits) == set(ids[:20]) | {ids[27]}  # tea (21) is rarer than coffee (30)


def test_term_counts_follow_writes_changes_and_removals(db: Database, backend: str) -> None:
    index = MemoryIndex(db)
    first, second = stored(db, index, ["coffee and violin", "coffee and tea"])
    stored(db, index, ["coffee for another user"], user="u2")
    assert frequencies(db, ["coffee", "violin", "tea"]) == {"coffee": 2, "violin": 1, "tea": 1}
    changed = make("u1", "violin and tea").model_copy(update={"memory_id": first})
    with db.write() as conn:
        conn.execute(
            text("UPDATE memories SET content = :c WHERE memory_id = :m"),
            {"c": changed.content, "m": first},
        )
    index.index_memories([changed])
    index.index_memories([changed])  # unchanged now: nothing counted twice
    assert frequencies(db, ["coffee", "violin", "tea"]) == {"coffee": 1, "violin": 1, "tea": 2}
    index.remove([second])
    assert frequencies(db, ["coffee", "violin", "tea"]) == {"coffee": 0, "violin": 1, "tea": 1}
    assert frequencies(db, ["coffee"], user="u2") == {"coffee": 1}
    if backend == "postgresql":
        with db.read() as conn:  # zero counts are dropped, not kept
            rows = conn.execute(
                text(f"SELECT count(*) FROM {TERMS_TABLE} WHERE df <= 0")
            ).scalar_one()
        assert rows == 0


def test_counts_table_is_filled_from_existing_documents(db: Database, backend: str) -> None:
    index = MemoryIndex(db)
    stored(db, index, CORPUS)
    before = frequencies(db, ["coffee", "violin", "train", "peanut"])
    assert before["coffee"] == 4
    if backend == "postgresql":
        with db.write() as conn:
            conn.execute(text(f"DROP TABLE {TERMS_TABLE}"))
    MemoryIndex(db).search("u1", "coffee")  # first use creates the table again
    assert frequencies(db, ["coffee", "violin", "train", "peanut"]) == before


def test_concurrent_writers_keep_exact_counts(db: Database) -> None:
    """Writers sharing terms apply their counts in one sorted statement each: they
    take turns on the rows and never deadlock, and no change is lost."""
    errors: list[BaseException] = []

    def writer(tag: int) -> None:
        index = MemoryIndex(db)
        try:
            for batch in range(4):
                words = ["alpha", "beta", "gamma", "delta"]
                words = words[tag % 4 :] + words[: tag % 4]  # another order per writer
                stored(db, index, [f"{' '.join(words)} {tag} {batch} {i}" for i in range(3)])
        except BaseException as exc:  # reported by the assertion below
            errors.append(exc)

    threads = [threading.Thread(target=writer, args=(t,)) for t in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    assert frequencies(db, ["alpha", "delta"]) == {"alpha": 48, "delta": 48}


def test_purging_a_user_leaves_no_counts(db: Database, backend: str) -> None:
    index = MemoryIndex(db)
    stored(db, index, ["allergic to peanuts", "peanut butter sandwich"])
    stored(db, index, ["peanut free kitchen"], user="u2")
    with db.write() as conn:
        purge_user(conn, "u1")
    assert frequencies(db, ["peanut", "allergic"]) == {"peanut": 0, "allergic": 0}
    assert frequencies(db, ["peanut"], user="u2") == {"peanut": 1}
    if backend == "postgresql":
        with db.read() as conn:
            left = conn.execute(
                text(f"SELECT count(*) FROM {TERMS_TABLE} WHERE uid = :u"),
                {"u": user_partition("u1")},
            ).scalar_one()
        assert left == 0
