"""Keyed memories: written in place under the caller's subject, never merged. On SQLite
and PostgreSQL."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.errors import OptedOut
from agentctx.memory.keyed import find_keyed, put_keyed


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        yield engine


def test_a_put_creates_then_replaces_in_place_with_history(eng: ContextEngine) -> None:
    first = put_keyed(eng.memory, "u1", "item:a", "User likes green tea", data={"v": 1})
    again = put_keyed(eng.memory, "u1", "item:a", "User likes black tea", data={"v": 2})
    assert again.memory_id == first.memory_id and again.version == first.version + 1
    assert again.created_at == first.created_at and again.updated_at > first.updated_at
    assert (again.content, again.data) == ("User likes black tea", {"v": 2})
    assert find_keyed(eng.memory, "u1", "item:a", kind="fact") == again
    assert [c.action for c in eng.memory.history("u1", first.memory_id)] == ["create", "update"]
    # Searchable by its new text only (re-indexed), and one memory in all.
    hits = eng.memory.search("u1", "black tea")
    assert [h.memory.memory_id for h in hits] == [first.memory_id]
    assert eng.memory.search("u1", "green") == []
    assert len(eng.memory.list("u1")) == 1


def test_the_same_text_under_two_subjects_is_two_memories(eng: ContextEngine) -> None:
    """``add`` would merge a duplicate; a keyed write keeps each subject's memory."""
    a = put_keyed(eng.memory, "u1", "item:a", "User lives in Lisbon")
    b = put_keyed(eng.memory, "u1", "item:b", "User lives in Lisbon")
    assert a.memory_id != b.memory_id
    merged = eng.memory.add("u1", "User lives in Lisbon")
    assert merged.memory_id in {a.memory_id, b.memory_id}  # add merges into one of them
    assert find_keyed(eng.memory, "u1", "item:c", kind="fact") is None
    assert find_keyed(eng.memory, "u2", "item:a", kind="fact") is None  # another user's
    assert find_keyed(eng.memory, "u1", "item:a", kind="preference") is None


def test_keyed_writes_are_redacted_and_respect_the_opt_out(eng: ContextEngine) -> None:
    stored = put_keyed(
        eng.memory, "u1", "item:a", "Write to ann@example.com", data={"to": "ann@example.com"}
    )
    assert "ann@example.com" not in stored.content + str(stored.data)
    eng.memory.set_opt_out("u1", declarative=True)
    with pytest.raises(OptedOut):
        put_keyed(eng.memory, "u1", "item:b", "User likes jazz")


def test_racing_puts_of_one_subject_make_one_memory(eng: ContextEngine) -> None:
    barrier = threading.Barrier(4)

    def put(i: int) -> None:
        barrier.wait()
        put_keyed(eng.memory, "u1", "item:race", f"value number {i}")

    threads = [threading.Thread(target=put, args=(i,)) for i in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    memories = eng.memory.list("u1")
    assert len(memories) == 1 and memories[0].version == 4
