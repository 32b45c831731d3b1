"""Memory wired into the engine: tools, triggers, a slow embedder, a failing model,
and concurrent extraction of two sessions. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agentctx import ContextEngine, EventType
from agentctx.errors import InvalidInput, MemoryNotFound
from agentctx.llm.query_vectors import QueryVectors
from agentctx.memory import handle_memory_tool, memory_tools
from llm.openai_chat_server import Reply, start_chat_server


def open_engine(db_url: str, home: Path, **settings: object) -> ContextEngine:
    memory = {"enabled": True, **settings.pop("memory", {})}  # type: ignore[dict-item]
    return ContextEngine(
        url=db_url,
        home=home,
        embeddings={"provider": "hashing"},
        memory=memory,
        session_ttl=None,
        **settings,
    )


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with open_engine(db_url, home) as engine:
        yield engine


def test_memory_tools_in_both_formats_run_for_their_user(eng: ContextEngine) -> None:
    openai = memory_tools("openai", manage=True)
    anthropic = memory_tools("anthropic", manage=True)
    assert [t["function"]["name"] for t in openai] == [
        "memory_search",
        "memory_add",
        "memory_update",
        "memory_delete",
    ]
    assert [t["name"] for t in anthropic] == [t["function"]["name"] for t in openai]
    assert all(t["input_schema"]["type"] == "object" for t in anthropic)
    assert [t["function"]["name"] for t in memory_tools()] == ["memory_search"]

    added = handle_memory_tool(
        eng.memory,
        "u1",
        "memory_add",
        json.dumps({"content": "User is allergic to peanuts", "kind": "fact"}),
    )["memory"]
    found = handle_memory_tool(eng.memory, "u1", "memory_search", {"query": "peanut allergy"})
    assert found["memories"][0]["memory_id"] == added["memory_id"]
    # Another user's search does not see it; their update cannot reach it.
    assert handle_memory_tool(eng.memory, "u2", "memory_search", {"query": "peanuts"}) == {
        "memories": []
    }
    with pytest.raises(MemoryNotFound):
        handle_memory_tool(
            eng.memory,
            "u2",
            "memory_update",
            {"memory_id": added["memory_id"], "content": "nothing"},
        )
    updated = handle_memory_tool(
        eng.memory,
        "u1",
        "memory_update",
        {
            "memory_id": added["memory_id"],
            "content": "User is allergic to peanuts and cashews",
            "expected_version": 1,
        },
    )["memory"]
    assert updated["version"] == 2
    deleted = handle_memory_tool(
        eng.memory, "u1", "memory_delete", {"memory_id": added["memory_id"]}
    )["memory"]
    assert deleted["status"] == "deleted"
    for bad in ({"query": ""}, {"query": "x", "limit": 0}, {"query": "x", "extra": 1}, "[1]"):
        with pytest.raises(InvalidInput):
            handle_memory_tool(eng.memory, "u1", "memory_search", bad)
    with pytest.raises(InvalidInput):
        handle_memory_tool(eng.memory, "u1", "memory_forget", {})


def test_with_extraction_on_signals_only_a_quiet_turn_waits(db_url: str, home: Path) -> None:
    with open_engine(db_url, home, memory={"extract_after_each_turn": False}) as engine:
        session = engine.create_session(user_id="u1")
        with session.turn() as turn:
            turn.add_message("user", "I work as a carpenter.")
        assert engine.memory.list("u1") == []  # no signal: left for the batch
        with session.turn() as turn:
            turn.add_message("user", "I live in Porto.")
            turn.add_event(EventType.FINAL, "Noted.", role="assistant")
        contents = " ".join(m.content for m in engine.memory.list("u1"))
        assert "Porto" in contents and "carpenter" in contents  # the final answer triggers


class SlowEmbedder:
    """Wraps an embedder; every call takes ``delay`` seconds."""

    def __init__(self, inner: object, delay: float) -> None:
        self.inner, self.delay = inner, delay

    @property
    def name(self) -> str:
        return self.inner.name  # type: ignore[attr-defined,no-any-return]

    @property
    def dimensions(self) -> int:
        return self.inner.dimensions  # type: ignore[attr-defined,no-any-return]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        time.sleep(self.delay)
        return self.inner.embed(texts)  # type: ignore[attr-defined,no-any-return]


def test_a_slow_embedder_is_cut_at_500_ms(db_url: str, home: Path) -> None:
    with open_engine(db_url, home) as engine:
        engine.memory.add("u1", "User likes sailing", kind="preference")
        index = engine.memory.index
        assert index is not None
        session = engine.create_session(user_id="u1")
        session.add_message("user", "hi")
        session.build_context("What do I like to do?", 3000)  # models loaded: not timed below
        # The memory index's own query vectors, slow (the event index keeps its own).
        index.query_vectors = QueryVectors(SlowEmbedder(index.embedder, 3.0))
        started = time.perf_counter()
        window = session.build_context("What do I enjoy doing?", 3000)
        elapsed = time.perf_counter() - started
        assert 0.45 < window.report.timings_ms["memories_ms"] / 1000 < 1.2
        assert elapsed < 2.0  # waiting for the embedder would take 3 s
        assert any("memories left out" in n and "500" in n for n in window.report.notes)


def test_a_failing_model_leaves_an_error_event_and_the_rules_stand_in(
    db_url: str, home: Path
) -> None:
    with start_chat_server() as server:
        server.script(Reply.server_error(503), Reply.server_error(503))
        llm = {
            "provider": "openai",
            "base_url": server.url,
            "api_key": "sk-test",
            "fast_model": "test-model",
            "max_retries": 0,
            "timeout": 5,
        }
        with open_engine(db_url, home, llm=llm) as engine:
            session = engine.create_session(user_id="u1")
            session.add_message("user", "I work as a nurse.")
            assert any("nurse" in m.content for m in engine.memory.list("u1"))
            errors = session.events(types=["error"])
            assert errors and errors[0].payload["job"] == "memory"
            assert errors[0].payload["source"] == "memory"


def test_two_sessions_extracted_at_once_merge_into_one_memory(db_url: str, home: Path) -> None:
    """Two sessions' extractions race (threads; on PostgreSQL two transactions): the
    statement both made becomes one memory supported by both sessions."""
    with open_engine(db_url, home, memory={"enabled": False}) as engine:
        sessions = [engine.create_session(user_id="u1") for _ in range(2)]
        for session in sessions:
            session.add_message("user", "I work as a nurse at the city hospital.")
        assert engine.memory.list("u1") == []
        errors: list[BaseException] = []

        def extract(session_id: str) -> None:
            try:
                engine.memory.extract_session("u1", session_id)
            except BaseException as exc:  # pragma: no cover - reported below
                errors.append(exc)

        threads = [threading.Thread(target=extract, args=(s.id,)) for s in sessions]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        assert errors == []
        active = engine.memory.list("u1")
        assert len(active) == 1 and active[0].support_count == 2
        assert set(active[0].session_ids) == {s.id for s in sessions}
