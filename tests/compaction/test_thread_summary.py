"""Thread summaries: thresholds, exact coverage, versions, idempotent writes, LLM fallback."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, func, select

from agentctx import ContextEngine
from agentctx.compaction.thread import Summary, ThreadSummarizer, ThreadSummaryConfig
from agentctx.jobs import Job
from agentctx.sessions.session import Session
from agentctx.storage.schema import summaries
from llm.openai_chat_server import ChatServer, Reply, start_chat_server

FACTS = [
    "We decided to move the billing service to PostgreSQL {i} before the March release.",
    "The nightly export failed with error E{i}04 because the disk was full.",
    "Alice owns the migration plan and reports progress every Tuesday at {i} pm.",
    "The load test showed p95 latency of {i}20 ms on the checkout path.",
    "Budget for the cloud bill is capped at {i}000 dollars per month.",
]


def chat(session: Session, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        role = "user" if i % 2 == 0 else "assistant"
        session.add_message(role, FACTS[i % len(FACTS)].format(i=i + 1))


def stored(engine: ContextEngine, session: Session) -> int:
    with engine.db.read() as conn:
        return int(
            conn.execute(
                select(func.count())
                .select_from(summaries)
                .where(summaries.c.user_id == session.user_id)
                .where(summaries.c.session_id == session.id)
            ).scalar_one()
        )


def make_engine(db_url: str, home: Path, **settings: Any) -> ContextEngine:
    settings.setdefault(
        "thread_summary", {"enabled": True, "every_messages": 5, "budget_tokens": 60}
    )
    settings.setdefault("embeddings", {"provider": "hashing"})  # no model load in the worker
    return ContextEngine(url=db_url, home=home, **settings)


@pytest.fixture
def small(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """An engine summarizing every 5 messages, within 60 tokens, jobs run by hand."""
    with make_engine(db_url, home, jobs="manual") as eng:
        yield eng


def turn_end_job(session: Session) -> Job:
    return Job(
        job_id=1,
        kind="turn_end:thread_summary",
        user_id=session.user_id,
        session_id=session.id,
        turn_id=None,
        payload={},
        attempts=1,
    )


# Thresholds, coverage, versions ------------------------------------------------------


def test_message_threshold_triggers_and_coverage_is_exact(small: ContextEngine) -> None:
    session = small.create_session(user_id="u1")
    summarizer = small.thread_summaries
    chat(session, 4)
    assert summarizer.maybe_update("u1", session.id) is None  # 4 < 5 messages
    assert session.summaries() == []

    chat(session, 1, start=4)
    first = summarizer.maybe_update("u1", session.id)
    assert first is not None
    assert (first.version, first.first_seq, first.last_seq) == (1, 1, 5)
    assert first.seq_ranges == ((1, 5),)
    assert first.source_event_count == 5 and first.kind == "thread"
    assert first.method == "offline"
    assert first.text and first.token_count == small.token_counter().count(first.text) <= 60

    chat(session, 4, start=5)
    assert summarizer.maybe_update("u1", session.id) is None  # 4 new ones only
    assert [s.version for s in session.summaries()] == [1]


def test_token_threshold_triggers_alone(db_url: str, home: Path) -> None:
    config = {"enabled": True, "every_messages": 100, "every_tokens": 200, "budget_tokens": 60}
    with make_engine(db_url, home, jobs="manual", thread_summary=config) as eng:
        session = eng.create_session(user_id="u1")
        session.add_message("user", "The invoice total is 40 dollars. " * 4)
        assert eng.thread_summaries.maybe_update("u1", session.id) is None
        session.add_message("assistant", FACTS[0].format(i=7) * 20)  # well over 200 tokens
        summary = eng.thread_summaries.maybe_update("u1", session.id)
        assert summary is not None and summary.last_seq == 2 and summary.source_event_count == 2


def test_versions_merge_incrementally_within_budget(small: ContextEngine) -> None:
    session = small.create_session(user_id="u1")
    counter = small.token_counter()
    versions: list[Summary] = []
    for round_ in range(4):
        chat(session, 6, start=round_ * 6)
        summary = small.thread_summaries.maybe_update("u1", session.id)
        assert summary is not None
        versions.append(summary)
    assert [s.version for s in versions] == [1, 2, 3, 4]
    assert [(s.first_seq, s.last_seq) for s in versions] == [(1, 6), (1, 12), (1, 18), (1, 24)]
    assert [s.source_event_count for s in versions] == [6, 12, 18, 24]
    for summary in versions:
        assert 0 < counter.count(summary.text) <= 60
    # Each version merges the new part into the previous one: the newest still carries
    # some of what the first one said, and something new.
    assert versions[-1].text != versions[0].text
    listed = session.summaries()
    assert [s.version for s in listed] == [4, 3, 2, 1]  # newest first
    assert listed[0] == versions[-1]
    # Raw events are untouched.
    assert len(session.events()) == 24 and session.verify().ok


def test_summary_and_state_events_are_covered_but_not_counted(small: ContextEngine) -> None:
    session = small.create_session(user_id="u1")
    chat(session, 4)
    session.add_event("summary", text="An older summary written by the agent itself.")
    session.update_state({"step": 2})
    assert small.thread_summaries.maybe_update("u1", session.id) is None  # still 4 messages
    chat(session, 1, start=4)
    summary = small.thread_summaries.maybe_update("u1", session.id)
    assert summary is not None
    assert summary.source_event_count == 5
    assert summary.last_seq == session.events()[-1].seq == 7
    assert "older summary" not in summary.text


# The builder's summary section ------------------------------------------------------


def test_build_context_shows_the_summary(db_url: str, home: Path) -> None:
    with make_engine(db_url, home) as eng:  # inline jobs: the window catches up itself
        session = eng.create_session(user_id="u1")
        chat(session, 12)
        window = session.build_context(query=None, budget=4000)
        latest = session.summaries()[0]
        assert latest.last_seq == 12
        section = window.report.section("summary")
        assert section is not None and section.event_ids == (latest.summary_id,)
        assert {"role": "system", "content": f"[Conversation summary] {latest.text}"} in (
            window.messages
        )
        # Building again changes nothing: no new version without new messages.
        session.build_context(query=None, budget=4000)
        assert [s.version for s in session.summaries()] == [1]


def test_disabled_summaries_stay_out_of_the_window(db_url: str, home: Path) -> None:
    config = {"enabled": False, "every_messages": 5}
    with make_engine(db_url, home, thread_summary=config) as eng:
        session = eng.create_session(user_id="u1")
        chat(session, 12)
        window = session.build_context(query=None, budget=4000)
        assert session.summaries() == []
        assert not any("[Conversation summary]" in str(m["content"]) for m in window.messages)


def test_background_worker_writes_summaries_after_turns(db_url: str, home: Path) -> None:
    with make_engine(db_url, home, jobs="background") as eng:
        assert "turn_end:thread_summary" in eng.jobs.kinds
        session = eng.create_session(user_id="u1")
        for start in (0, 3):
            with session.turn():
                chat(session, 3, start=start)
        deadline = time.monotonic() + 20
        while not session.summaries() and time.monotonic() < deadline:
            time.sleep(0.05)
        assert [(s.version, s.last_seq) for s in session.summaries()] == [(1, 6)]


# Idempotency -------------------------------------------------------------------------


def test_a_job_run_twice_writes_one_summary(small: ContextEngine) -> None:
    session = small.create_session(user_id="u1")
    chat(session, 7)
    small.thread_summaries.on_turn_end(turn_end_job(session))
    small.thread_summaries.on_turn_end(turn_end_job(session))
    assert [(s.version, s.last_seq) for s in session.summaries()] == [(1, 7)]
    assert stored(small, session) == 1


def test_the_same_version_committed_twice_is_stored_once(small: ContextEngine) -> None:
    session = small.create_session(user_id="u1")
    chat(session, 5)
    summarizer = small.thread_summaries
    first, second = summarizer.plan("u1", session.id), summarizer.plan("u1", session.id)
    assert first is not None and second is not None and first.version == second.version == 1
    kept = summarizer.commit(first)
    again = summarizer.commit(second)
    assert kept is not None and again == kept
    assert stored(small, session) == 1


def test_two_racing_workers_write_one_summary(small: ContextEngine) -> None:
    session = small.create_session(user_id="u1")
    chat(session, 10)
    planned = threading.Barrier(2)
    results: list[Summary | None] = []
    errors: list[BaseException] = []

    def worker() -> None:
        # Each worker has its own summarizer, as two processes would.
        summarizer = ThreadSummarizer(
            small.db,
            lambda *a, **k: small.get_session(session.id, "u1").events(**k),
            small.token_counter(),
            config=ThreadSummaryConfig(enabled=True, every_messages=5, budget_tokens=60),
        )
        try:
            draft = summarizer.plan("u1", session.id)
            planned.wait(timeout=20)  # both computed version 1 before either writes
            assert draft is not None
            results.append(summarizer.commit(draft))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert not errors
    assert len(results) == 2 and results[0] is not None and results[0] == results[1]
    assert stored(small, session) == 1
    assert session.summaries()[0].summary_id == results[0].summary_id


class KilledDuringWrite(ThreadSummarizer):
    """Dies after its row is inserted, before the transaction commits."""

    def _insert(self, conn: Connection, summary: Summary) -> None:
        super()._insert(conn, summary)
        raise KeyboardInterrupt("killed")


def test_a_worker_killed_halfway_leaves_nothing_and_the_rerun_writes_once(
    small: ContextEngine,
) -> None:
    session = small.create_session(user_id="u1")
    chat(session, 6)
    summarizer = small.thread_summaries
    # Killed after summarizing, before writing: the draft is simply gone.
    assert summarizer.plan("u1", session.id) is not None
    assert stored(small, session) == 0
    # Killed inside the write transaction: it rolls back whole.
    killed = KilledDuringWrite(
        small.db,
        lambda *a, **k: session.events(**k),
        small.token_counter(),
        config=summarizer.config,
    )
    with pytest.raises(KeyboardInterrupt):
        killed.maybe_update("u1", session.id)
    assert stored(small, session) == 0
    # The rerun (the job claimed again) writes exactly one version 1, and a further
    # rerun finds nothing due.
    summary = summarizer.maybe_update("u1", session.id)
    assert summary is not None and summary.version == 1 and summary.last_seq == 6
    assert summarizer.maybe_update("u1", session.id) is None
    assert stored(small, session) == 1


# The chat model, and its fallback ----------------------------------------------------


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with start_chat_server() as running:
        yield running


def llm_engine(db_url: str, home: Path, server: ChatServer) -> ContextEngine:
    llm = {
        "provider": "openai",
        "base_url": server.url,
        "api_key": "sk-test",
        "fast_model": "test-model",
        "max_retries": 0,
        "timeout": 5,
    }
    return make_engine(db_url, home, jobs="manual", llm=llm)


def test_the_llm_writes_the_summary_merged_with_the_previous(
    db_url: str, home: Path, server: ChatServer
) -> None:
    server.script(
        Reply.json({"summary": "Billing moves to PostgreSQL; the export failed."}),
        Reply.json({"summary": "Billing moves to PostgreSQL; Alice owns the plan."}),
    )
    with llm_engine(db_url, home, server) as eng:
        session = eng.create_session(user_id="u1")
        chat(session, 5)
        first = eng.thread_summaries.maybe_update("u1", session.id)
        chat(session, 5, start=5)
        second = eng.thread_summaries.maybe_update("u1", session.id)
    assert first is not None and second is not None
    assert first.method == second.method == "llm:openai:test-model"
    assert first.text == "Billing moves to PostgreSQL; the export failed."
    assert (second.version, second.first_seq, second.last_seq) == (2, 1, 10)
    asked = server.requests[1]["messages"][-1]["content"]
    assert "the export failed." in asked  # the previous summary, to merge into
    assert "[6] assistant:" in asked and "[9] user:" in asked and "[5]" not in asked


@pytest.mark.parametrize(
    ("reply", "code"),
    [
        (Reply.server_error(), "llm_unavailable"),
        (Reply.text("I cannot summarize that."), "llm_response_invalid"),
    ],
)
def test_a_failing_llm_falls_back_to_offline_and_says_why(
    db_url: str, home: Path, server: ChatServer, reply: Reply, code: str
) -> None:
    server.script(reply, reply)  # an invalid answer is asked for once more
    with llm_engine(db_url, home, server) as eng:
        session = eng.create_session(user_id="u1")
        chat(session, 5)
        summary = eng.thread_summaries.maybe_update("u1", session.id)
        assert summary is not None
        assert summary.method == f"offline (llm failed: {code})"
        assert summary.text and summary.token_count <= 60
        assert session.summaries() == [summary]
    assert len(server.requests) >= 1


# Deletion ------------------------------------------------------------------------------


def test_deleting_a_session_or_a_user_removes_their_summaries(small: ContextEngine) -> None:
    doomed = small.create_session(user_id="u1")
    other = small.create_session(user_id="u2")
    for session in (doomed, other):
        chat(session, 5)
        small.thread_summaries.maybe_update(session.user_id, session.id)
        chat(session, 5, start=5)
        small.thread_summaries.maybe_update(session.user_id, session.id)
    report = doomed.delete()
    assert report.extra.get("summaries") == 2
    assert stored(small, doomed) == 0
    assert small.thread_summaries.list_summaries("u1", doomed.id) == []
    assert stored(small, other) == 2

    report = small.delete_user_data("u2")
    assert report.extra.get("summaries") == 2 and stored(small, other) == 0
    # A job for a deleted session finds nothing to do.
    small.thread_summaries.on_turn_end(turn_end_job(doomed))
    assert stored(small, doomed) == 0


def test_a_long_backlog_is_folded_in_bounded_steps(db_url: str, home: Path) -> None:
    settings = {
        "enabled": True,
        "every_messages": 5,
        "budget_tokens": 60,
        "max_events_per_update": 20,
    }
    with make_engine(db_url, home, jobs="manual", thread_summary=settings) as engine:
        session = engine.create_session(user_id="u1")
        chat(session, 47)
        summarizer = engine.thread_summaries
        first = summarizer.maybe_update("u1", session.id)
        assert first is not None and (first.first_seq, first.last_seq) == (1, 20)
        # The turn-end job keeps folding until nothing is due: 21-40, then 41-47.
        summarizer.on_turn_end(turn_end_job(session))
        versions = session.summaries()
        assert [(s.version, s.last_seq) for s in versions] == [(3, 47), (2, 40), (1, 20)]
        assert all(s.first_seq == 1 and s.token_count <= 60 for s in versions)
        assert versions[0].source_event_count == 47


def test_a_large_tool_result_counts_and_reads_as_its_head(db_url: str, home: Path) -> None:
    with make_engine(db_url, home, jobs="manual") as eng:
        session = eng.create_session(user_id="u1")
        with session.turn() as turn:
            turn.add_message("user", "Read the export log and tell me what failed.")
            call = turn.add_tool_call("read_log", {"name": "export"})
            turn.add_tool_result(
                call.call_id, content="export ok\n" * 4000 + "FATAL: disk full on /var\n"
            )
        cap = eng.settings.tool_output.compress_over_tokens
        assert eng.thread_summaries.tool_result_tokens == cap
        draft = eng.thread_summaries.plan("u1", session.id, force=True)
        assert draft is not None
        # The tail of the output is past what a window shows, so not in the summary.
        assert "FATAL" not in draft.text
