"""A window's query embedded on a helper thread while the window is built: the same
vector as embedded in place, once, never while the model loads, a failure handed to the
one who waits and not kept, nothing kept across a user's erasure, no wait in a forked
child for a thread its parent started, a bounded backlog, and no helper left running
once closed."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Sequence
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.llm import query_vectors
from agentctx.llm.embeddings import EmbeddingError
from agentctx.llm.hashing import HashingEmbedder
from agentctx.llm.query_vectors import QueryVectors
from agentctx.llm.warmup import ModelWarmup
from agentctx.priority import mark_background_thread


class GatedEmbedder(HashingEmbedder):
    """The hashing embedder, holding each call until ``gate`` is set; it records the
    texts and the thread of each call, and fails for the texts in ``failing`` once."""

    def __init__(self, failing: Sequence[str] = ()) -> None:
        super().__init__()
        self.gate = threading.Event()
        self.gate.set()
        self.entered = threading.Event()
        self.calls: list[tuple[str, str]] = []
        self.failing = set(failing)

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.entered.set()
        assert self.gate.wait(10), "the test never opened the gate"
        for text in texts:
            self.calls.append((text, threading.current_thread().name))
            if text in self.failing:
                self.failing.discard(text)
                raise EmbeddingError(f"endpoint down while embedding {text!r}")
        return super().embed(texts)


def test_a_prefetched_query_is_embedded_once_off_the_callers_thread() -> None:
    embedder = GatedEmbedder()
    embedder.gate.clear()
    vectors = QueryVectors(embedder)
    vectors.prefetch("which flights leave tomorrow")
    vectors.prefetch("which flights leave tomorrow")  # under way: not started again
    assert embedder.entered.wait(10)
    embedder.gate.set()
    vector = vectors.vector("which flights leave tomorrow")  # waits for what is left
    assert vector == HashingEmbedder().embed(["which flights leave tomorrow"])[0]
    assert embedder.calls == [("which flights leave tomorrow", "agentctx-query")]
    vectors.prefetch("which flights leave tomorrow")  # held: nothing to do
    assert vectors.vector("which flights leave tomorrow") == vector
    assert len(embedder.calls) == 1


class LoadingEmbedder(GatedEmbedder):
    """A gated embedder whose model loads (instantly, once the warmup is started)."""

    def load(self) -> None:
        return None


def test_nothing_is_prefetched_while_the_model_loads_or_for_a_blank_query() -> None:
    embedder = LoadingEmbedder()
    warmup = ModelWarmup(embedder)  # not started yet: the model is loading
    vectors = QueryVectors(embedder, warmup=warmup)
    assert vectors.model_state == "loading"
    vectors.prefetch("a question asked during the load")
    vectors.prefetch("   ")
    assert embedder.calls == []
    assert warmup.wait(10)  # loaded: now it is prefetched
    vectors.prefetch("a question asked after the load")
    assert vectors.vector("a question asked after the load") is not None
    assert embedder.calls == [("a question asked after the load", "agentctx-query")]
    assert vectors.queries() == ["a question asked after the load"]


def test_a_failed_prefetch_reaches_the_waiter_and_is_not_kept() -> None:
    embedder = GatedEmbedder(failing=["flaky endpoint query"])
    embedder.gate.clear()
    vectors = QueryVectors(embedder)
    vectors.prefetch("flaky endpoint query")
    assert embedder.entered.wait(10)
    embedder.gate.set()
    with pytest.raises(EmbeddingError, match="endpoint down"):
        vectors.vector("flaky endpoint query")
    assert vectors.queries() == []
    assert vectors.vector("flaky endpoint query") is not None  # the retry embeds it
    assert [text for text, _ in embedder.calls] == ["flaky endpoint query"] * 2


def test_an_erasure_during_a_prefetch_keeps_nothing() -> None:
    embedder = GatedEmbedder()
    embedder.gate.clear()
    vectors = QueryVectors(embedder)
    vectors.prefetch("my passport number question")
    assert embedder.entered.wait(10)
    under_way = vectors._pending["my passport number question"].result
    vectors.clear()  # the user's data is deleted while the helper embeds
    embedder.gate.set()
    under_way.result(timeout=10)  # the helper finishes on its own
    assert embedder.calls == [("my passport number question", "agentctx-query")]
    assert vectors.queries() == []


def _helpers() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "agentctx-query"]


def test_one_helper_thread_serves_the_queries_and_ends_when_idle(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Queries are embedded one after another by one long-lived helper (a thread started
    per query cost each window the thread's start), which ends after a while without a
    query; the next query starts another."""
    monkeypatch.setattr(query_vectors, "HELPER_IDLE", 0.5)
    before = set(_helpers())
    embedder = GatedEmbedder()
    idents: list[int] = []
    embed = embedder.embed

    def recording(texts: Sequence[str]) -> list[list[float]]:
        idents.append(threading.get_ident())
        return embed(texts)

    embedder.embed = recording  # type: ignore[method-assign]
    vectors = QueryVectors(embedder)
    for question in ("first question", "second question", "third question"):
        vectors.prefetch(question)
        assert vectors.vector(question) == HashingEmbedder().embed([question])[0]
    assert len(idents) == 3 and len(set(idents)) == 1  # one thread, none per query
    assert threading.get_ident() not in idents
    ours = [t for t in _helpers() if t not in before]
    assert len(ours) == 1
    ours[0].join(10)  # idle for HELPER_IDLE: it ends
    assert not ours[0].is_alive()
    vectors.prefetch("a question after the helper ended")
    assert vectors.vector("a question after the helper ended") is not None
    assert len(idents) == 4 and idents[-1] != threading.get_ident()


def test_an_error_after_the_embedding_reaches_the_waiter_and_the_helper_goes_on(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """An error outside the embedder (keeping the vector) is the waiter's, as the
    embedder's own are: nobody waits for ever, and the helper serves the next query."""
    embedder = GatedEmbedder()
    embedder.gate.clear()
    vectors = QueryVectors(embedder)
    keep = vectors._keep
    failures = [MemoryError("while keeping the vector")]

    def failing_once(query: str, vector: list[float], generation: int) -> None:
        if failures:
            raise failures.pop()
        keep(query, vector, generation)

    monkeypatch.setattr(vectors, "_keep", failing_once)
    vectors.prefetch("the first question")
    assert embedder.entered.wait(10)  # in the helper's hands: the waiter below waits for it
    helper = vectors._helper
    threading.Timer(0.2, embedder.gate.set).start()
    with pytest.raises(MemoryError, match="while keeping"):
        vectors.vector("the first question")
    assert vectors.vector("the first question") is not None  # not kept: embedded again
    vectors.prefetch("the second question")
    assert vectors.vector("the second question") is not None
    assert vectors._helper is helper and helper is not None and helper.is_alive()


def test_a_burst_of_prefetches_keeps_only_the_newest_waiting() -> None:
    """User texts written faster than the helper embeds them (an import, a replay) keep
    at most PREFETCH_WAITING waiting: the newest. A dropped one is embedded by whoever
    asks for its vector, on their own thread, and nobody waits for it in vain."""
    embedder = GatedEmbedder()
    embedder.gate.clear()
    vectors = QueryVectors(embedder)
    vectors.prefetch("question 0")
    assert embedder.entered.wait(10)  # the helper holds question 0
    asked = [f"question {i}" for i in range(1, 11)]
    found: list[list[float] | None] = []
    waiter = threading.Thread(
        target=lambda: found.append(vectors.vector("question 1")), name="window"
    )
    for i, question in enumerate(asked):
        vectors.prefetch(question)
        if i == 0:
            waiter.start()  # waits for the prefetch of question 1, which is dropped
    embedder.gate.set()
    waiter.join(10)
    assert not waiter.is_alive(), "the window waited for a dropped prefetch"
    assert found == [HashingEmbedder().embed(["question 1"])[0]]
    vectors.settle(10)
    newest = asked[-query_vectors.PREFETCH_WAITING :]
    by_helper = [text for text, thread in embedder.calls if thread == "agentctx-query"]
    assert by_helper == ["question 0", *newest]
    assert [thread for text, thread in embedder.calls if text == "question 1"] == ["window"]
    assert vectors.vector("question 4") == HashingEmbedder().embed(["question 4"])[0]
    assert embedder.calls[-1] == ("question 4", threading.current_thread().name)


def test_close_drops_the_waiting_queries_and_ends_the_helper() -> None:
    """An engine's close ends the helper before it returns (a forward pass running on
    while the interpreter finalizes aborts the process); the queries still waiting are
    not embedded, and nothing is prefetched after it."""
    embedder = GatedEmbedder()
    embedder.gate.clear()
    vectors = QueryVectors(embedder)
    vectors.prefetch("being embedded")
    assert embedder.entered.wait(10)
    helper = vectors._helper
    assert helper is not None
    vectors.prefetch("waiting 1")
    vectors.prefetch("waiting 2")
    threading.Timer(0.2, embedder.gate.set).start()
    vectors.close(timeout=10)
    assert not helper.is_alive()
    assert embedder.calls == [("being embedded", "agentctx-query")]
    assert vectors.vector("being embedded") is not None  # the one under way was kept
    vectors.prefetch("after the close")
    assert vectors._helper is None or not vectors._helper.is_alive()
    assert vectors.vector("waiting 2") == HashingEmbedder().embed(["waiting 2"])[0]
    assert [text for text, _ in embedder.calls] == ["being embedded", "waiting 2"]
    assert embedder.calls[-1][1] == threading.current_thread().name
    vectors.close()  # twice: harmless


def test_a_background_threads_window_does_not_prefetch() -> None:
    """A thread marked as background (lower priority) embeds its query itself when it
    asks for the vector: a helper it started would keep its priority for the agent's
    queries after it."""
    embedder = GatedEmbedder()
    vectors = QueryVectors(embedder)
    found: list[list[float] | None] = []

    def background() -> None:
        mark_background_thread()
        vectors.prefetch("a question asked by a job")
        assert embedder.calls == []
        found.append(vectors.vector("a question asked by a job"))

    worker = threading.Thread(target=background, name="a-job")
    worker.start()
    worker.join(10)
    assert found == [HashingEmbedder().embed(["a question asked by a job"])[0]]
    assert embedder.calls == [("a question asked by a job", "a-job")]


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_embeds_a_query_its_parent_was_prefetching() -> None:
    embedder = GatedEmbedder()
    embedder.gate.clear()
    vectors = QueryVectors(embedder)
    vectors.prefetch("a question asked before the fork")
    assert embedder.entered.wait(10)  # the helper is held in the embedder, holding no lock
    reader, writer = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: the parent's helper thread does not exist here
        try:
            embedder.gate.set()  # the child's own embedding may go on
            vector = vectors.vector("a question asked before the fork")
            expected = HashingEmbedder().embed(["a question asked before the fork"])[0]
            os.write(writer, b"ok" if vector == expected else b"no")
        finally:
            os._exit(0)
    os.close(writer)
    embedder.gate.set()
    ready = threading.Event()
    try:
        answer = b""

        def read() -> None:
            nonlocal answer
            answer = os.read(reader, 2)
            ready.set()

        threading.Thread(target=read, daemon=True).start()
        assert ready.wait(20), "the child waited for its parent's helper thread"
        assert answer == b"ok"
    finally:
        if not ready.is_set():
            os.kill(pid, signal.SIGKILL)  # it hangs: the test has failed
        os.waitpid(pid, 0)
        os.close(reader)
    assert vectors.vector("a question asked before the fork") is not None


@pytest.mark.parametrize(
    "query",
    [
        "which reservation was confirmed last",  # searched for before the history
        "Please check reservation R011 for the flight",  # the latest request: after it
    ],
)
def test_a_window_prefetches_its_query_and_builds_the_same_window(
    db_url: str, home: Path, query: str
) -> None:
    """The window's query is embedded by the helper thread, once for the event index and
    memories, and the window equals the one built with the query embedded in place."""
    windows = []
    for prefetching in (True, False):
        with ContextEngine(
            url=db_url,
            home=home / f"prefetch-{prefetching}-{len(query)}",
            embeddings={"provider": "hashing"},
            memory={"enabled": True, "min_support_sessions": 1},
            session_ttl=None,
        ) as engine:
            shared = engine.search_index.query_vectors
            assert shared is not None
            embedder = GatedEmbedder()
            shared.embedder = embedder
            if not prefetching:
                shared.prefetch = lambda query: None  # type: ignore[method-assign]
            session = engine.create_session(
                user_id=f"u-{prefetching}-{len(query)}", session_id="s1"
            )
            for k in range(12):
                session.add_message("user", f"Please check reservation R{k:03d} for the flight")
                call = session.add_tool_call(
                    "get_reservation", {"id": f"R{k:03d}"}, call_id=f"c{k}"
                )
                session.add_tool_result(call.call_id, content=f'{{"id": "R{k:03d}", "ok": true}}')
                session.add_message("assistant", f"Reservation R{k:03d} is confirmed.")
            window = session.build_context(query=query, budget=1500)
            threads = {name for text, name in embedder.calls if text == query}
            assert [text for text, _ in embedder.calls].count(query) == 1
            # (Without the prefetch, the first to ask embeds it: the window's thread or
            # the memory search's.)
            assert (threads == {"agentctx-query"}) is prefetching
            windows.append((window.messages, window.report.dense_ranking))
    assert windows[0] == windows[1]


def test_a_prefetch_ending_between_the_callers_two_looks_is_not_embedded_again() -> None:
    """The caller looks for a held vector, then for a prefetch under way: a prefetch that
    ends between the two looks (kept, no longer under way) is found, not embedded again
    on the caller's thread (a loaded machine preempts the caller right there)."""
    embedder = GatedEmbedder()
    vectors = QueryVectors(embedder)
    held = vectors._vectors
    get = held.get
    first_look = [True]

    def late_look(query: str) -> list[float] | None:
        found = get(query)
        if first_look and query == "the question":
            first_look.clear()
            vectors.settle(10)  # the helper ends here: the vector kept, nothing under way
            assert get(query) is not None and query not in vectors._pending
            return None  # what the caller saw before the helper ended
        return found

    vectors.prefetch("the question")
    held.get = late_look  # type: ignore[method-assign]
    assert vectors.vector("the question") == HashingEmbedder().embed(["the question"])[0]
    assert embedder.calls == [("the question", "agentctx-query")]
