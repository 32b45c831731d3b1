"""The default: nothing slow on the agent's call path.

With ``jobs="background"`` (the default) the embedding model loads on a thread of its own
as the engine starts, new events are embedded by a worker thread, and turn-end jobs run
in the job worker. These tests hold the model's load, the embedding and a turn-end job
on gates the test opens, and check that windows and turn ends go on meanwhile, correct,
and that the work is done once the gates open.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.config import load_settings
from agentctx.embedding_wiring import newest_user_text
from agentctx.events import EventDraft, EventType, JsonPart, Role, TextPart
from agentctx.jobs import Job
from agentctx.llm.hashing import HashingEmbedder

GATE_TIMEOUT = 30.0


class GatedEmbedder(HashingEmbedder):
    """Feature hashing whose model "load", and the background worker's embedding, wait
    for the test to open their gates: a model still loading, or a worker behind."""

    def __init__(self) -> None:
        super().__init__(dimensions=64)
        self.loaded = threading.Event()
        self.embedding = threading.Event()
        self.embedding.set()
        self.embed_calls = 0
        self.embedding_started = threading.Event()

    def load(self) -> None:
        assert self.loaded.wait(GATE_TIMEOUT), "the test never let the model load"

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.embed_calls += 1
        if threading.current_thread().name == "agentctx-embedding":  # not a query's
            self.embedding_started.set()
            assert self.embedding.wait(GATE_TIMEOUT), "the test never let embedding go on"
        return super().embed(texts)


@pytest.fixture
def gated() -> GatedEmbedder:
    return GatedEmbedder()


@pytest.fixture
def background_engine(db_url: str, home: Path, gated: GatedEmbedder) -> Iterator[ContextEngine]:
    # Queries embedded in the background too: nothing runs the model in a window.
    with ContextEngine(
        url=db_url,
        home=home,
        embedder=gated,
        jobs="background",
        retrieval={"query_embedding": "background"},
    ) as engine:
        yield engine
    gated.loaded.set()
    gated.embedding.set()


def _chat(session, turns: int) -> None:  # type: ignore[no-untyped-def]
    for i in range(turns):
        with session.turn():
            session.add_message("user", f"question {i} about the invoice numbered {1000 + i}")
            session.add_message("assistant", f"answer {i}: the invoice {1000 + i} is paid")


def test_background_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("AGENTCTX_JOBS", raising=False)
    assert load_settings().jobs == "background"


def test_window_while_the_model_loads(
    background_engine: ContextEngine, gated: GatedEmbedder
) -> None:
    session = background_engine.create_session("u1")
    _chat(session, 6)
    window = session.build_context(budget=2000, query="what about invoice 1002?")
    report = window.report
    assert report.dense_ranking == "loading"
    assert any("still loading" in note for note in report.notes)
    # Correct without vectors: the newest turn is there as chat, the old one found by words.
    text = str(window.messages)
    assert "invoice 1005 is paid" in text
    assert "1002" in text
    assert gated.embed_calls == 0  # nothing waited for (or ran) the model
    _words_indexed(background_engine)
    hits = background_engine.search_index.search("u1", session.id, "invoice 1002")
    assert hits and hits[0].dense_rank is None

    gated.loaded.set()
    assert background_engine.model_warmup is not None
    assert background_engine.model_warmup.wait(GATE_TIMEOUT)
    worker = background_engine.embedding
    assert worker is not None
    assert worker.wait_idle(GATE_TIMEOUT)
    # A query new since the model is ready: its vector is computed for the next window.
    window = session.build_context(budget=2000, query="what about invoice 1002?")
    assert window.report.dense_ranking == "pending"
    assert any("in the background" in note for note in window.report.notes)
    assert worker.wait_idle(GATE_TIMEOUT)
    window = session.build_context(budget=2000, query="what about invoice 1002?")
    assert window.report.dense_ranking == "used"
    assert window.report.unembedded_events == 0
    background_engine.search_index.search("u1", session.id, "invoice 1002")  # asks
    assert worker.wait_idle(GATE_TIMEOUT)
    hits = background_engine.search_index.search("u1", session.id, "invoice 1002")
    assert any(hit.dense_rank is not None for hit in hits)


def test_window_while_the_worker_is_behind(
    background_engine: ContextEngine, gated: GatedEmbedder
) -> None:
    gated.loaded.set()
    session = background_engine.create_session("u1")
    _chat(session, 3)
    worker = background_engine.embedding
    assert worker is not None
    assert worker.wait_idle(GATE_TIMEOUT)
    gated.embedding.clear()  # the worker now blocks inside its next batch
    gated.embedding_started.clear()
    with session.turn():
        session.add_message("user", "look up the refund of order 77-alpha")
        session.add_tool_call("lookup", {"order": "77-alpha"}, call_id="c1")
        session.add_tool_result("c1", data={"order": "77-alpha", "refund": "pending since May"})
    assert gated.embedding_started.wait(GATE_TIMEOUT)  # the worker holds the new events
    started = time.perf_counter()
    window = session.build_context(budget=2000, query="refund of order 77-alpha")
    elapsed = time.perf_counter() - started
    assert elapsed < GATE_TIMEOUT / 2  # it did not wait for the gate
    report = window.report
    assert report.dense_ranking == "pending"  # the worker is busy: the query waits too
    assert report.unembedded_events >= 3
    assert "pending since May" in str(window.messages)
    hits = background_engine.search_index.search("u1", session.id, "refund 77-alpha")
    newest = session.refresh().last_seq
    assert any(hit.seq > newest - 3 and hit.dense_rank is None for hit in hits)

    gated.embedding.set()
    assert worker.wait_idle(GATE_TIMEOUT)
    window = session.build_context(budget=2000, query="refund of order 77-alpha")
    assert window.report.dense_ranking == "used"
    assert window.report.unembedded_events == 0


class RecordingGated(GatedEmbedder):
    """A gated embedder that records each of the worker's batches with how far the
    session's words were indexed when the batch reached the model."""

    def __init__(self) -> None:
        super().__init__()
        self.engine: ContextEngine | None = None
        self.session_id = ""
        self.batches: list[tuple[list[str], int]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if threading.current_thread().name == "agentctx-embedding" and self.engine:
            from agentctx.retrieval.sync import read_state

            with self.engine.db.read() as conn:
                state = read_state(conn, "u1", self.session_id, None)
            self.batches.append((list(texts), state.indexed_seq if state else 0))
        return super().embed(texts)


def test_the_worker_indexes_new_words_between_long_results(db_url: str, home: Path) -> None:
    """A worker step embeds about ``embed_step_chars`` of text (at least one event),
    then indexes the words written meanwhile: a backlog of long tool results does not
    leave the words of the agent's next steps to a window."""
    model = RecordingGated()
    model.loaded.set()
    budget = 1500
    with ContextEngine(
        url=db_url,
        home=home,
        embedder=model,
        jobs="background",
        retrieval={"embed_step_chars": budget, "query_embedding": "background"},
    ) as engine:
        worker = engine.embedding
        assert worker is not None
        session = engine.create_session("u1")
        model.engine, model.session_id = engine, session.id
        model.embedding.clear()
        with session.turn():
            session.add_message("user", "read the four reports")
            for k in range(1, 5):
                session.add_tool_call("read_file", {"path": f"r{k}.txt"}, call_id=f"c{k}")
                body = f"RESULT-{k} " + " ".join(f"line{k}x{i}" for i in range(120))
                session.add_tool_result(f"c{k}", content=body)
        assert model.embedding_started.wait(GATE_TIMEOUT)  # blocked in its first batch
        late = session.add_message("user", "meanwhile: the Zanzibar invoice").seq
        model.embedding.set()
        assert worker.wait_idle(GATE_TIMEOUT)

        for texts, _ in model.batches:
            assert len(texts) == 1 or sum(len(t) for t in texts) <= budget
        later = [seq for texts, seq in model.batches if any("RESULT-2 " in t for t in texts)]
        assert later and all(seq >= late for seq in later)  # words first, then vectors
        assert _vectors(engine, "u1", session.id) == late
        hits = engine.search_index.search("u1", session.id, "Zanzibar invoice")
        assert hits and hits[0].seq == late


def test_turn_end_does_not_wait_for_its_jobs(background_engine: ContextEngine) -> None:
    release = threading.Event()
    ran: list[str] = []

    def slow_model_job(job: Job) -> None:
        assert release.wait(GATE_TIMEOUT)
        ran.append(job.session_id or "")

    background_engine.on_turn_end("slow_model", slow_model_job)
    session = background_engine.create_session("u1")
    with session.turn():
        session.add_message("user", "summarise my week")
        session.add_message("assistant", "done")
    # The turn is over and the job has not run: the turn's end did not wait for it.
    assert ran == []
    release.set()
    deadline = time.monotonic() + GATE_TIMEOUT
    while not ran and time.monotonic() < deadline:
        time.sleep(0.02)
    assert ran == [session.id]


def test_shed_requests_are_caught_up(db_url: str, home: Path, gated: GatedEmbedder) -> None:
    """A full queue sheds requests, never blocks a write, and loses nothing: the next
    search (or turn end) asks again, and every event gets its vector."""
    gated.loaded.set()
    with ContextEngine(
        url=db_url,
        home=home,
        embedder=gated,
        jobs="background",
        retrieval={"embed_queue_size": 1, "embed_batch": 2},
    ) as engine:
        worker = engine.embedding
        assert worker is not None
        gated.embedding.clear()
        sessions = [engine.create_session(f"u{i}") for i in range(4)]
        for session in sessions:
            session.add_message("user", "a note about the shipment to Lyon")
        assert worker.stats.shed >= 1
        gated.embedding.set()
        for _ in range(20):  # searches ask again until every session is caught up
            assert worker.wait_idle(GATE_TIMEOUT)
            for session in sessions:
                engine.search_index.search(session.user_id, session.id, "shipment Lyon")
            if worker.pending == 0 and all(
                _vectors(engine, s.user_id, s.id) == 1 for s in sessions
            ):
                break
        assert [_vectors(engine, s.user_id, s.id) for s in sessions] == [1, 1, 1, 1]


def _vectors(engine: ContextEngine, user_id: str, session_id: str) -> int:
    from agentctx.retrieval.sync import read_state

    embedder_id = engine.search_index._ensure_dense()
    with engine.db.read() as conn:
        state = read_state(conn, user_id, session_id, embedder_id)
    assert state is not None
    return state.vector_count


def test_windows_are_recorded_off_the_call_path(background_engine: ContextEngine) -> None:
    """The window built in a turn is kept for its repro package by a background thread;
    a read of it sees it, as it was built even if the caller edits the messages after."""
    session = background_engine.create_session("u1")
    with session.turn() as turn:
        session.add_message("user", "what is the status of ticket 12?")
        window = session.build_context(budget=1000, query="ticket 12")
        built = [dict(m) for m in window.messages]
        window.messages.append({"role": "assistant", "content": "added by the agent"})
        window.messages[0]["content"] = "edited by the agent"
    recorded = background_engine.hitl.window("u1", session.id, turn.turn_id)
    assert recorded is not None
    assert [m["content"] for m in recorded.messages] == [m["content"] for m in built]


def test_words_are_indexed_while_the_model_loads(
    background_engine: ContextEngine, gated: GatedEmbedder
) -> None:
    """The worker indexes a session's words while the model loads (a search then finds
    them without indexing them itself), and its vectors once the model is ready."""
    worker = background_engine.embedding
    assert worker is not None
    session = background_engine.create_session("u1")
    _chat(session, 4)
    _words_indexed(background_engine)
    from agentctx.retrieval.sync import read_state

    with background_engine.db.read() as conn:
        state = read_state(conn, "u1", session.id, None)
    assert state is not None and state.indexed_seq == state.last_seq
    assert gated.embed_calls == 0
    gated.loaded.set()
    assert background_engine.model_warmup is not None
    assert background_engine.model_warmup.wait(GATE_TIMEOUT)
    assert worker.wait_idle(GATE_TIMEOUT)
    assert _vectors(background_engine, "u1", session.id) > 0


def _words_indexed(engine: ContextEngine) -> None:
    """Wait until the worker has nothing queued (while the model loads: words indexed)."""
    worker = engine.embedding
    assert worker is not None
    deadline = time.monotonic() + GATE_TIMEOUT
    while worker.pending and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not worker.pending


def test_by_default_a_ready_model_embeds_the_query_in_the_window(
    db_url: str, home: Path, gated: GatedEmbedder
) -> None:
    """The default (query_embedding inline): once the model is ready the window embeds
    a new query itself, and ranks by vectors at once."""
    gated.loaded.set()
    with ContextEngine(url=db_url, home=home, embedder=gated, jobs="background") as engine:
        assert engine.model_warmup is not None and engine.model_warmup.wait(GATE_TIMEOUT)
        session = engine.create_session("u1")
        _chat(session, 3)
        assert engine.embedding is not None and engine.embedding.wait_idle(GATE_TIMEOUT)
        window = session.build_context(budget=2000, query="a question never asked before")
        assert window.report.dense_ranking == "used"


class SlowLoad(HashingEmbedder):
    """A model whose load writes under the engine's home for a while, as the local
    model's unpacking does."""

    def __init__(self, home: Path) -> None:
        super().__init__(dimensions=32)
        self.home = home
        self.finished = threading.Event()

    def load(self) -> None:
        for i in range(5):
            time.sleep(0.1)
            (self.home / f"weights-{i}.part").write_bytes(b"x")
        self.finished.set()


def test_close_waits_for_a_model_still_loading(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    model = SlowLoad(home)
    engine = ContextEngine(
        url=f"sqlite:///{tmp_path / 'a.db'}", home=home, embedder=model, jobs="background"
    )
    engine.close()
    # Nothing of the engine writes under its home once close returned (a caller may
    # delete the folder at once).
    assert model.finished.is_set()
    assert engine.model_warmup is not None
    assert engine.model_warmup._thread is not None
    assert not engine.model_warmup._thread.is_alive()


def test_a_backlog_is_worked_through_without_settling_between_steps() -> None:
    """The worker waits ``settle`` for a burst to gather only when a request wakes it;
    a session with more to embed goes on at once (each pause was idle time)."""
    from agentctx.llm.warmup import ModelWarmup
    from agentctx.retrieval.embedding_worker import EmbeddingWorker

    model = HashingEmbedder(dimensions=8)
    warmup = ModelWarmup(model)
    warmup.start()
    assert warmup.wait(GATE_TIMEOUT)
    steps: list[float] = []

    def step(user_id: str, session_id: str, limit: int) -> bool:
        steps.append(time.monotonic())
        return len(steps) < 4  # four steps of one session's backlog

    worker = EmbeddingWorker(step, warmup, settle=0.5)
    worker.start()
    try:
        started = time.monotonic()
        assert worker.request("u1", "s1")
        assert worker.wait_idle(GATE_TIMEOUT)
        assert len(steps) == 4
        assert steps[0] - started >= 0.45  # the first request gathered its burst
        assert steps[-1] - steps[0] < 0.45  # the backlog did not settle again
    finally:
        worker.close()


class QueryRecording(HashingEmbedder):
    """Feature hashing that records each text it embeds and the thread that asked."""

    def __init__(self) -> None:
        super().__init__(dimensions=64)
        self.calls: list[tuple[str, str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.extend((text, threading.current_thread().name) for text in texts)
        return super().embed(texts)

    def queried(self) -> list[str]:
        """The texts embedded as queries (on the agent's helper thread)."""
        return [text for text, thread in self.calls if thread == "agentctx-query"]


def test_the_users_new_text_is_embedded_as_the_next_query_during_its_append(
    db_url: str, home: Path
) -> None:
    """An append that brings the user's text starts embedding it as a query: held before
    any window asks, and the window that asks it (as the integrations do, the text parts
    joined by newlines) embeds nothing more. What the agent and its tools write is not
    embedded as a query."""
    embedder = QueryRecording()
    with ContextEngine(url=db_url, home=home, embedder=embedder, jobs="background") as engine:
        assert engine.model_warmup is not None and engine.model_warmup.wait(GATE_TIMEOUT)
        vectors = engine.search_index.query_vectors
        assert vectors is not None
        session = engine.create_session("u1")
        _chat(session, 2)
        vectors.settle(GATE_TIMEOUT)
        asked_so_far = embedder.queried()
        assert asked_so_far == [
            f"question {i} about the invoice numbered {1000 + i}" for i in (0, 1)
        ]
        question = "Which invoice did I pay last?\nAnd on which day?"
        with session.turn():
            session.append(
                EventDraft(
                    type=EventType.USER_INPUT,  # the user's role without saying it
                    parts=(
                        TextPart(text="Which invoice did I pay last?"),
                        JsonPart(data={"attached": "statement.pdf"}),
                        TextPart(text="And on which day?"),
                    ),
                )
            )
            vectors.settle(GATE_TIMEOUT)
            assert vectors.cached(question)[0]  # before any window asked for it
            session.add_tool_call("find_invoices", {"paid": True}, call_id="c1")
            session.add_tool_result("c1", content='{"invoice": 1001, "paid_on": "2026-03-02"}')
            window = session.build_context(query=question, budget=2000)
            session.add_message("assistant", "Invoice 1001, paid on 2 March.")
        vectors.settle(GATE_TIMEOUT)
        assert window.report.dense_ranking == "used"
        assert embedder.queried() == [*asked_so_far, question]  # once, and nothing else
        assert [text for text, _ in embedder.calls].count(question) == 1


def test_a_failed_head_start_does_not_fail_the_append(db_url: str, home: Path) -> None:
    """Starting the query embedding is an optimisation: when it fails, the user's text
    is stored all the same and the window embeds its query itself."""
    embedder = QueryRecording()
    with ContextEngine(url=db_url, home=home, embedder=embedder, jobs="background") as engine:
        assert engine.model_warmup is not None and engine.model_warmup.wait(GATE_TIMEOUT)

        real = engine.search_index.prefetch
        asked: list[str] = []

        def broken_once(user_id: str, session_id: str, query: str) -> None:
            asked.append(query)
            if len(asked) == 1:  # the append's head start; the window's own works
                raise RuntimeError("the index is unavailable")
            real(user_id, session_id, query)

        engine.search_index.prefetch = broken_once  # type: ignore[method-assign]
        session = engine.create_session("u1")
        stored = session.add_message("user", "question about the invoice numbered 1000")
        assert asked == [stored.text]
        assert [e.event_id for e in session.events()] == [stored.event_id]
        window = session.build_context(query=stored.text, budget=2000)
        assert window.report.dense_ranking == "used"
        assert embedder.queried() == [stored.text]  # by the window's own head start


@pytest.mark.parametrize(
    ("drafts", "expected"),
    [
        ([EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text="hello"),))], "hello"),
        (
            [
                EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text="first"),)),
                EventDraft(type=EventType.AGENT_RESPONSE, parts=(TextPart(text="reply"),)),
                EventDraft(
                    type=EventType.USER_INPUT,
                    role=Role.USER,
                    parts=(TextPart(text="newest"), TextPart(text="line two")),
                ),
                EventDraft(type=EventType.TOOL_RESULT, parts=(TextPart(text="output"),)),
            ],
            "newest\nline two",
        ),
        (
            [
                EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text="asked"),)),
                EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text="  "),)),
                EventDraft(type=EventType.USER_INPUT, parts=(JsonPart(data={"a": 1}),)),
            ],
            "asked",
        ),
        ([EventDraft(type=EventType.AGENT_RESPONSE, parts=(TextPart(text="x"),))], None),
        (
            [
                EventDraft(
                    type=EventType.USER_INPUT, role=Role.ASSISTANT, parts=(TextPart(text="y"),)
                )
            ],
            None,
        ),
        ([], None),
    ],
)
def test_the_newest_user_text_of_an_append(drafts: list[EventDraft], expected: str | None) -> None:
    assert newest_user_text(drafts) == expected
