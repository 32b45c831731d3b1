"""Folds written by a chat model (and the offline stand-in), and written once: reruns,
a worker killed halfway, two workers racing."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, func, select

from agentctx import ContextEngine
from agentctx.compaction.fold import EventFolder, FoldSummary
from agentctx.events import EventType
from agentctx.llm.config import llm_from_config
from agentctx.sessions.session import Session
from agentctx.storage.schema import summaries
from compaction.fold_session import coverage, folder, long_session
from llm.openai_chat_server import ChatServer, Reply, start_chat_server

SMALL = {
    "low_tokens": 300,
    "high_tokens": 600,
    "summary_tokens": 40,
    "max_events_per_fold": 6,
    "fanout": 2,
    "key_types": ["user_input", "final", "error", "hitl"],  # tool pairs fold too
}


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(
        url=db_url, home=home, jobs="manual", embeddings={"provider": "hashing"}
    ) as eng:
        yield eng


def stored(engine: ContextEngine, session: Session) -> int:
    with engine.db.read() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(summaries)
                .where(summaries.c.session_id == session.id, summaries.c.kind == "fold")
            ).scalar_one()
        )


def shape(folds: list[FoldSummary]) -> list[tuple[int, int, Any]]:
    return [(f.version, f.level, f.seq_ranges) for f in folds]


def assert_each_event_folded_once_per_level(folds: list[FoldSummary]) -> None:
    """Folds of one level never overlap; a higher one covers exactly its parts."""
    for level in {f.level for f in folds}:
        seqs = [s for f in folds if f.level == level for s in coverage(f)]
        assert len(seqs) == len(set(seqs)), f"level {level} folds overlap"


# Idempotency -------------------------------------------------------------------------


def test_a_job_run_twice_writes_one_set_of_folds(engine: ContextEngine) -> None:
    session = long_session(engine, 12)
    fold = folder(engine, **SMALL)
    first = fold.maybe_fold("u1", session.id)
    assert len(first) >= 3 and any(f.level > 0 for f in first)
    assert [f.version for f in first] == list(range(1, len(first) + 1))
    assert fold.maybe_fold("u1", session.id) == []
    assert fold.folds("u1", session.id) == first
    assert stored(engine, session) == len(first)


def test_the_same_fold_committed_twice_is_stored_once(engine: ContextEngine) -> None:
    session = long_session(engine, 12)
    fold = folder(engine, **SMALL)
    one, two = fold.plan("u1", session.id), fold.plan("u1", session.id)
    assert one is not None and two is not None and one.version == two.version == 1
    kept = fold.commit(one)
    assert kept is not None and fold.commit(two) == kept
    assert stored(engine, session) == 1


class KilledDuringWrite(EventFolder):
    """Dies inside its ``kill_at``-th write transaction, after the row is inserted."""

    kill_at = 1
    writes = 0

    def _insert(self, conn: Connection, fold: FoldSummary) -> None:
        super()._insert(conn, fold)
        self.writes += 1
        if self.writes == self.kill_at:
            raise KeyboardInterrupt("killed")


@pytest.mark.parametrize("kill_at", [1, 3])
def test_a_worker_killed_halfway_and_rerun_writes_each_fold_once(
    engine: ContextEngine, kill_at: int
) -> None:
    session = long_session(engine, 12)
    reference = long_session(engine, 12, user="u2")
    fold = folder(engine, **SMALL)
    expected = shape(fold.maybe_fold("u2", reference.id))

    killed = KilledDuringWrite(fold.db, fold._load, fold.counter, config=fold.config)
    killed.kill_at = kill_at
    with pytest.raises(KeyboardInterrupt):
        killed.maybe_fold("u1", session.id)
    # The fold being written is gone whole; the ones before it are complete.
    assert stored(engine, session) == kill_at - 1
    # The rerun (the job claimed again) carries on and ends where an unbroken run does.
    # A rerun that finds the live tokens already between the thresholds waits for the
    # next turn to pass high_tokens again; until then the view is still exact.
    rerun = fold.maybe_fold("u1", session.id)
    folds = fold.folds("u1", session.id)
    assert len(rerun) == len(folds) - (kill_at - 1)
    if kill_at == 1:
        assert shape(folds) == expected
    assert_each_event_folded_once_per_level(folds)
    assert fold.maybe_fold("u1", session.id) == []
    assert stored(engine, session) == len(folds)


def test_two_racing_workers_fold_each_range_once(engine: ContextEngine) -> None:
    session = long_session(engine, 12)
    reference = long_session(engine, 12, user="u2")
    expected = shape(folder(engine, **SMALL).maybe_fold("u2", reference.id))
    planned = threading.Barrier(2)
    written: list[list[FoldSummary]] = []
    errors: list[BaseException] = []

    class Racer(EventFolder):
        first = True

        def plan(self, user_id: str, session_id: str, *, continuing: bool = False) -> Any:
            draft = super().plan(user_id, session_id, continuing=continuing)
            if self.first:  # both have computed version 1 before either writes it
                self.first = False
                planned.wait(timeout=20)
            return draft

    def worker() -> None:
        base = folder(engine, **SMALL)
        racer = Racer(base.db, base._load, base.counter, config=base.config)
        try:
            written.append(racer.maybe_fold("u1", session.id))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors
    folds = folder(engine, **SMALL).folds("u1", session.id)
    # Each version was written by exactly one of them, and together they made what
    # one worker alone makes.
    ids = [f.summary_id for run in written for f in run]
    assert sorted(ids) == sorted(f.summary_id for f in folds)
    assert shape(folds) == expected
    assert_each_event_folded_once_per_level(folds)


# The chat model, and its fallback ----------------------------------------------------


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with start_chat_server() as running:
        yield running


def model(server: ChatServer) -> Any:
    return llm_from_config(
        {
            "provider": "openai",
            "base_url": server.url,
            "api_key": "sk-test",
            "fast_model": "test-model",
            "max_retries": 0,
            "timeout": 5,
        }
    )


def test_the_model_writes_folds_and_merges_them(engine: ContextEngine, server: ChatServer) -> None:
    answer = Reply.json({"summary": "Flights searched on early routes; R3 timed out."})
    server.default = lambda request: answer
    session = long_session(engine, 12)
    fold = folder(engine, model(server), **SMALL)
    written = fold.maybe_fold("u1", session.id)
    assert written and all(f.method == "llm:openai:test-model" for f in written)
    assert written[0].text == "Flights searched on early routes; R3 timed out."
    assert written[0].token_count == engine.token_counter().count(written[0].text)
    # The first request shows the covered events by seq, tool calls by name.
    asked = server.requests[0]["messages"][-1]["content"]
    first = written[0]
    assert f"[{first.first_seq}] " in asked and "tool call search_flights" in asked
    user_inputs = [e.seq for e in session.events() if e.type == EventType.USER_INPUT]
    assert not any(f"[{seq}] user:" in asked for seq in user_inputs)
    # A higher fold is asked to merge the summaries of its parts.
    merged = next(f for f in written if f.level > 0)
    merge_request = server.requests[written.index(merged)]
    assert "merge" in merge_request["messages"][0]["content"]
    assert "[seq " in merge_request["messages"][-1]["content"]


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (Reply.server_error(), "llm_unavailable"),
        (Reply.text("Sorry, I cannot summarize that."), "llm_response_invalid"),
        (Reply.json({"summary": "  "}), "llm_error"),  # valid JSON, nothing in it
    ],
)
def test_a_failing_model_falls_back_to_offline_and_says_why(
    engine: ContextEngine, server: ChatServer, reply: Reply, code: str
) -> None:
    server.default = lambda request: reply
    session = long_session(engine, 12)
    failures: list[tuple[str, str, str, str]] = []
    fold = folder(engine, model(server), **SMALL)
    fold.on_llm_failure = lambda u, s, kind, exc: failures.append(
        (u, s, kind, getattr(exc, "code", ""))
    )
    written = fold.maybe_fold("u1", session.id)
    assert written
    for f in written:
        assert f.method == f"offline (llm failed: {code})"
        assert f.text and 0 < f.token_count <= 40
    # Told once per fold the offline method wrote, with who, where and why.
    assert failures == [("u1", session.id, "fold", code)] * len(written)
    assert len(server.requests) >= len(written)
