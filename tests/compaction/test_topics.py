"""Topic archiving: offline and by a chat model, atomic and once, tool calls kept whole."""

from __future__ import annotations

import itertools
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Connection, func, select

from agentctx import ContextEngine
from agentctx.compaction.topics import (
    ACTIVE,
    ARCHIVED,
    Topic,
    TopicArchiveConfig,
    TopicArchiver,
    TopicPlan,
)
from agentctx.jobs import Job
from agentctx.llm.chat import LLM, LLMResponseInvalid, LLMUnavailable
from agentctx.llm.openai_chat import OpenAIChatLLM
from agentctx.sessions.session import Session
from agentctx.storage.schema import profile_facts, topic_events, topics
from compaction.topics_data import LOGIN_ZH, POOL, REACT_ZH, TRIP
from llm.openai_chat_server import ChatServer, Reply, start_chat_server

Failure = tuple[str, str, str, Exception]


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """An engine that keeps names: the user profile these tests read holds the name
    ("my name is …") that the default redaction replaces before anything is stored."""
    with ContextEngine(url=db_url, home=home, redaction={"names": False}) as eng:
        yield eng


def make_archiver(
    engine: ContextEngine,
    llm: LLM | None = None,
    failures: list[Failure] | None = None,
    cls: type[TopicArchiver] = TopicArchiver,
    **config: Any,
) -> TopicArchiver:
    config.setdefault("enabled", True)

    def on_failure(user_id: str, session_id: str, kind: str, exc: Exception) -> None:
        if failures is not None:
            failures.append((user_id, session_id, kind, exc))

    return cls(
        engine.db,
        engine._service.events,
        engine.token_counter(),
        llm,
        config=TopicArchiveConfig(**config),
        on_llm_failure=on_failure,
    )


def record(session: Session, conversation: list[tuple[str, str]]) -> None:
    for role, text in conversation:
        session.add_message(role, text)


def links(engine: ContextEngine, session: Session) -> dict[int, str]:
    """seq -> topic_id of every archived event of the session."""
    with engine.db.read() as conn:
        rows = conn.execute(
            select(topic_events.c.seq, topic_events.c.topic_id).where(
                topic_events.c.user_id == session.user_id,
                topic_events.c.session_id == session.id,
            )
        ).all()
    return {int(seq): str(topic_id) for seq, topic_id in rows}


def count(engine: ContextEngine, table: Any, user_id: str = "u1") -> int:
    with engine.db.read() as conn:
        return int(
            conn.execute(
                select(func.count()).select_from(table).where(table.c.user_id == user_id)
            ).scalar_one()
        )


def assert_contiguous(found: list[Topic], mapping: dict[int, str], through: int) -> None:
    """Topics tile 1..through in order, and every event is linked to the topic covering it."""
    assert found[0].first_seq == 1 and found[-1].last_seq == through
    for before, after in itertools.pairwise(found):
        assert after.first_seq == before.last_seq + 1
    assert sorted(mapping) == list(range(1, through + 1))
    for topic in found:
        for seq in range(topic.first_seq, topic.last_seq + 1):
            assert mapping[seq] == topic.topic_id


# Offline archiving -------------------------------------------------------------------


def test_offline_archives_a_two_topic_conversation(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    archiver = make_archiver(engine)
    assert archiver.topics("u1", session.id) == []
    assert archiver.archived_through("u1", session.id) is None

    found = archiver.archive("u1", session.id, force=True)

    # 60 messages, the newest 10 kept: 1..50 archived, 51..60 not.
    assert found == archiver.topics("u1", session.id)
    assert archiver.archived_through("u1", session.id) == 50
    assert_contiguous(found, links(engine, session), 50)
    assert archiver.topic_of("u1", session.id, 51) is None
    assert archiver.unarchived_tokens("u1", session.id)[0] == 10
    # The switch from the trip to the database pool (message 31) is a boundary, and no
    # topic mixes the two.
    assert 31 in {t.first_seq for t in found}
    trip = [t for t in found if t.last_seq <= 30]
    pool = [t for t in found if t.first_seq >= 31]
    assert len(trip) + len(pool) == len(found) and trip and pool
    assert any("Alfama" in t.title or "TAP" in t.title for t in trip)
    assert any(k in " ".join(pool[-1].keywords) for k in ("pool", "connection", "pgbouncer"))
    counter = engine.token_counter()
    for topic in found:
        assert topic.method == "offline"
        assert topic.message_count == topic.last_seq - topic.first_seq + 1 >= 10
        assert topic.summary and topic.token_count == counter.count(topic.summary) <= 150
        assert topic.source_tokens > topic.token_count
    assert [t.status for t in found] == [ARCHIVED] * (len(found) - 1) + [ACTIVE]
    # Raw events are untouched.
    assert len(session.events()) == 60 and session.verify().ok


def test_offline_archives_a_chinese_conversation(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    record(session, REACT_ZH + LOGIN_ZH)
    archiver = make_archiver(engine)
    found = archiver.archive("u1", session.id, force=True)
    assert [(t.first_seq, t.last_seq) for t in found] == [(1, 20), (21, 30)]
    assert "React" in found[0].title or "渲染" in found[0].title
    assert any(k in found[1].title for k in ("令牌", "JWT"))
    assert all(t.summary and t.method == "offline" for t in found)
    profile = archiver.profile("u1")
    assert profile["preferred_name"].value == "李雷"
    assert profile["occupation"].value == "前端开发者"
    assert profile["occupation"].topic_id == found[0].topic_id
    assert (profile["occupation"].first_seq, profile["occupation"].last_seq) == (1, 1)


def test_profile_facts_carry_provenance_and_the_newest_wins(engine: ContextEngine) -> None:
    first = engine.create_session(user_id="u1")
    record(first, TRIP + POOL)
    archiver = make_archiver(engine)
    found = archiver.archive("u1", first.id, force=True)
    profile = archiver.profile("u1")
    name, job = profile["preferred_name"], profile["occupation"]
    assert (name.value, job.value) == ("Maya Chen", "data engineer")
    for fact in (name, job):
        assert fact.session_id == first.id and fact.topic_id == found[0].topic_id
        assert (fact.first_seq, fact.last_seq) == (1, 1) and fact.method == "offline"
    assert count(engine, profile_facts) == 2

    # The same value said again adds nothing; a new one becomes the current value.
    second = engine.create_session(user_id="u1")
    record(second, [("user", "Hello again, my name is Maya Chen."), *TRIP[1:], *POOL])
    archiver.archive("u1", second.id, force=True)
    assert count(engine, profile_facts) == 2
    third = engine.create_session(user_id="u1")
    record(third, [*TRIP[:5], ("user", "By the way, call me Mia from now on."), *TRIP[6:], *POOL])
    third_topics = archiver.archive("u1", third.id, force=True)
    profile = archiver.profile("u1")
    assert profile["preferred_name"].value == "Mia"
    assert profile["preferred_name"].session_id == third.id
    assert profile["preferred_name"].first_seq == 6
    assert profile["preferred_name"].topic_id == third_topics[0].topic_id
    assert profile["occupation"].session_id == first.id
    assert count(engine, profile_facts) == 3
    assert archiver.profile("u2") == {}

    engine.delete_user_data("u1")
    assert count(engine, profile_facts) == count(engine, topics) == 0
    assert count(engine, topic_events) == 0


# Thresholds, continuity, batches -----------------------------------------------------


def test_thresholds_count_messages_and_tokens_after_the_archived_prefix(
    engine: ContextEngine,
) -> None:
    session = engine.create_session(user_id="u1")
    archiver = make_archiver(engine, min_archive_messages=20, context_threshold=0.5)
    record(session, TRIP[:19])
    session.add_event("summary", text="An older summary written by the agent itself.")
    session.update_state({"step": 2})
    messages, tokens = archiver.unarchived_tokens("u1", session.id)
    estimates = [
        e.token_estimate for e in session.events() if e.type in ("user_input", "agent_response")
    ]
    assert (messages, tokens) == (19, sum(estimates))
    assert not archiver.needs_archive("u1", session.id, 256)  # 19 < 20 messages
    assert archiver.maybe_archive("u1", session.id, 256) == []

    record(session, TRIP[19:] + POOL)  # 60 messages
    _, tokens = archiver.unarchived_tokens("u1", session.id)
    assert archiver.needs_archive("u1", session.id, tokens * 2)  # exactly at 0.5
    assert not archiver.needs_archive("u1", session.id, tokens * 2 + 2)  # just under
    assert archiver.plan("u1", session.id) is None  # config limit 32k: not due
    assert make_archiver(engine, enabled=False).needs_archive("u1", session.id, 256) is False
    assert make_archiver(engine, enabled=False).archive("u1", session.id, force=True) == []

    found = archiver.maybe_archive("u1", session.id, tokens * 2)
    assert found and archiver.archived_through("u1", session.id) == 52  # 50 messages + 2
    # The summary and state events inside the range are linked, not counted.
    assert sum(t.message_count for t in found) == 50
    assert archiver.unarchived_tokens("u1", session.id)[0] == 10
    assert not archiver.needs_archive("u1", session.id, 256)  # 10 left < 20


def test_keep_recent_and_bounded_steps(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    archiver = make_archiver(
        engine,
        min_archive_messages=11,
        context_threshold=0.01,
        keep_recent_messages=10,
        max_batch_messages=20,
        min_topic_messages=5,
    )
    assert len(archiver.archive("u1", session.id)) >= 1  # one step: at most 20 messages
    assert archiver.archived_through("u1", session.id) == 20
    found = archiver.maybe_archive("u1", session.id, 1000)  # the rest, step by step
    assert archiver.archived_through("u1", session.id) == 50  # the newest 10 stay
    assert all(t.message_count <= 20 for t in found)
    assert_contiguous(archiver.topics("u1", session.id), links(engine, session), 50)
    # With only the kept messages left, forcing archives nothing.
    assert archiver.archive("u1", session.id, force=True) == []
    assert archiver.topic_of("u1", session.id, 51) is None


def test_the_turn_end_job_archives_when_due_and_is_idempotent(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    archiver = make_archiver(engine, context_limit=100_000)

    def job(payload: dict[str, Any]) -> Job:
        return Job(1, "turn_end:topics", "u1", session.id, None, payload, 1)

    archiver.on_turn_end(job({}))  # 100k context: far from due
    assert archiver.topics("u1", session.id) == []
    archiver.on_turn_end(job({"context_limit": 1000}))
    first = archiver.topics("u1", session.id)
    assert first and first[-1].last_seq == 50
    archiver.on_turn_end(job({"context_limit": 1000}))  # run again: nothing more
    assert archiver.topics("u1", session.id) == first
    session.delete()
    archiver.on_turn_end(job({"context_limit": 1000}))  # a deleted session: no error
    assert archiver.topics("u1", session.id) == []


def test_summaries_feed_the_context_window(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    archiver = make_archiver(engine)
    found = archiver.archive("u1", session.id, force=True)
    items = archiver.summaries("u1", session.id)
    assert [i.summary_id for i in items] == [t.topic_id for t in found]
    assert all(i.kind == "topic" for i in items)
    assert [i.seq_ranges for i in items] == [((t.first_seq, t.last_seq),) for t in found]
    topic = found[0]
    assert (
        items[0].text == f"{topic.title}: {topic.summary} (keywords: {', '.join(topic.keywords)})"
    )
    engine.context_builder.summaries = archiver
    window = session.build_context(query=None, budget=6000)
    contents = [m["content"] for m in window.messages]
    assert f"[Topic summary] {items[0].text}" in contents
    section = window.report.section("summary")
    assert section is not None and section.event_ids[0] == topic.topic_id


# Atomic and once ---------------------------------------------------------------------


class KilledMidCommit(TopicArchiver):
    """Dies after the topics are inserted, while the events are being linked."""

    def _link_events(self, conn: Connection, plan: TopicPlan, stored: Any) -> None:
        super()._link_events(conn, plan, stored)
        raise KeyboardInterrupt("killed")


def test_a_crash_mid_commit_leaves_every_message_unarchived(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    killed = make_archiver(engine, cls=KilledMidCommit)
    with pytest.raises(KeyboardInterrupt):
        killed.archive("u1", session.id, force=True)
    assert count(engine, topics) == count(engine, topic_events) == 0
    assert count(engine, profile_facts) == 0
    archiver = make_archiver(engine)
    assert archiver.archived_through("u1", session.id) is None
    assert archiver.unarchived_tokens("u1", session.id)[0] == 60
    # The rerun writes the step once.
    found = archiver.archive("u1", session.id, force=True)
    assert_contiguous(found, links(engine, session), 50)
    assert count(engine, topics) == len(found) and count(engine, profile_facts) == 2


def test_a_stale_plan_is_dropped_for_the_stored_topics(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    archiver = make_archiver(engine)
    first, second = (
        archiver.plan("u1", session.id, force=True),
        archiver.plan("u1", session.id, force=True),
    )
    assert first is not None and second is not None
    kept = archiver.commit(first)
    assert archiver.commit(second) == kept
    assert count(engine, topics) == len(kept)


def test_two_racing_archivers_store_one_set_of_topics(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    planned = threading.Barrier(2)
    results: list[list[Topic]] = []
    errors: list[BaseException] = []

    def worker(min_topic: int) -> None:
        # Each worker has its own archiver (as two processes would), planning
        # differently, both from the same unarchived messages.
        archiver = make_archiver(engine, min_topic_messages=min_topic)
        try:
            plan = archiver.plan("u1", session.id, force=True)
            planned.wait(timeout=20)
            assert plan is not None
            results.append(archiver.commit(plan))
        except BaseException as exc:
            errors.append(exc)

    threads = [threading.Thread(target=worker, args=(n,)) for n in (10, 25)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not errors and len(results) == 2
    assert results[0] == results[1]
    stored = make_archiver(engine).topics("u1", session.id)
    assert stored == results[0] and count(engine, topics) == len(stored)
    assert_contiguous(stored, links(engine, session), 50)
    assert count(engine, topic_events) == 50 and count(engine, profile_facts) == 2


# Tool calls --------------------------------------------------------------------------


def tool_conversation(session: Session, n: int, tools_at: dict[int, bool]) -> dict[int, Any]:
    """``n`` messages; at each index in ``tools_at`` a tool call, followed by its result
    when the value is True. Returns index -> the call event."""
    calls: dict[int, Any] = {}
    conversation = TRIP + POOL
    index = 0
    while index < n:
        if index in tools_at:
            call = session.add_tool_call("search_flights", {"to": "LIS", "day": index})
            calls[index] = call
            index += 1
            if tools_at[index - 1] and index < n:
                session.add_tool_result(
                    call.call_id, content=f"3 flights found, from {index}9 euros"
                )
                index += 1
            continue
        role, text = conversation[index % len(conversation)]
        session.add_message(role, text)
        index += 1
    return calls


@pytest.fixture
def server() -> Iterator[ChatServer]:
    with start_chat_server() as running:
        yield running


def model(server: ChatServer) -> OpenAIChatLLM:
    return OpenAIChatLLM(
        "test-model", base_url=server.url, api_key="sk-test", max_retries=0, timeout=5
    )


def answer(*spans: tuple[int, int], **user_info: str | None) -> Reply:
    info: dict[str, str | None] = dict.fromkeys(
        ("preferred_name", "occupation", "gender", "language", "location")
    )
    info.update(user_info)
    return Reply.json(
        {
            "topics": [
                {
                    "title": f"Topic {i}",
                    "summary": f"What was discussed in part {i}.",
                    "start_index": start,
                    "end_index": end,
                    "keywords": [f"k{i}", "shared"],
                }
                for i, (start, end) in enumerate(spans)
            ],
            "user_info": info,
        }
    )


def test_a_boundary_never_splits_a_tool_call_from_its_result(
    engine: ContextEngine, server: ChatServer
) -> None:
    session = engine.create_session(user_id="u1")
    calls = tool_conversation(session, 40, {14: True, 29: True})
    # The model cuts between the call (index 14) and its result (15).
    server.script(answer((0, 14), (15, 28)))
    archiver = make_archiver(engine, model(server))
    found = archiver.archive("u1", session.id, force=True)
    assert found[0].method == "llm:openai:test-model"
    call = calls[14]
    result_seq = call.seq + 1
    assert archiver.topic_of("u1", session.id, call.seq) == archiver.topic_of(
        "u1", session.id, result_seq
    )
    assert archiver.topic_of("u1", session.id, call.seq) is not None
    # The batch ends at index 29, a call whose result (30) is among the kept messages:
    # neither is archived.
    assert archiver.archived_through("u1", session.id) == 29
    assert archiver.topic_of("u1", session.id, calls[29].seq) is None
    assert archiver.topic_of("u1", session.id, calls[29].seq + 1) is None
    prompt = server.requests[0]["messages"][-1]["content"]
    assert (
        "[14] assistant (tool call search_flights):" in prompt and "[15] tool: 3 flights" in prompt
    )
    assert "[29]" not in prompt


def test_a_call_waiting_for_its_result_is_not_archived(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    calls = tool_conversation(session, 21, {20: False})
    archiver = make_archiver(engine, keep_recent_messages=0)
    found = archiver.archive("u1", session.id, force=True)
    assert found[-1].last_seq == 20  # everything before the open call
    assert archiver.topic_of("u1", session.id, calls[20].seq) is None
    session.add_tool_result(calls[20].call_id, content="2 flights found")
    for role, text in POOL[:10]:
        session.add_message(role, text)
    more = archiver.archive("u1", session.id, force=True)
    assert more and archiver.topic_of("u1", session.id, calls[20].seq) == archiver.topic_of(
        "u1", session.id, calls[20].seq + 1
    )


# The chat model ----------------------------------------------------------------------


def test_the_model_names_topics_and_the_user(engine: ContextEngine, server: ChatServer) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    server.script(
        answer(
            (0, 29), (30, 49), preferred_name="Maya", occupation="data engineer", language="English"
        )
    )
    failures: list[Failure] = []
    archiver = make_archiver(engine, model(server), failures)
    found = archiver.archive("u1", session.id, force=True)
    assert [(t.title, t.first_seq, t.last_seq) for t in found] == [
        ("Topic 0", 1, 30),
        ("Topic 1", 31, 50),
    ]
    assert found[0].summary == "What was discussed in part 0."
    assert found[0].keywords == ("k0", "shared")
    assert all(t.method == "llm:openai:test-model" for t in found) and not failures
    request = server.requests[0]
    assert request["response_format"]["type"] == "json_schema"
    prompt = request["messages"][-1]["content"]
    assert "[0] user: Hi, my name is Maya Chen" in prompt and "[49] assistant:" in prompt
    assert "[50]" not in prompt
    profile = archiver.profile("u1")
    assert profile["preferred_name"].value == "Maya"
    assert profile["preferred_name"].topic_id == found[0].topic_id
    assert profile["preferred_name"].first_seq == 1
    # Said by nobody in so many words: traced to the whole step.
    language = profile["language"]
    assert language.value == "English" and language.topic_id is None
    assert (language.first_seq, language.last_seq) == (1, 50)
    assert language.method == "llm:openai:test-model"


def test_short_topics_merge_and_an_uncovered_tail_stays_unarchived(
    engine: ContextEngine, server: ChatServer
) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    server.script(answer((0, 2), (3, 24), (25, 28), (29, 44)))  # 45..49 left out
    archiver = make_archiver(engine, model(server))
    found = archiver.archive("u1", session.id, force=True)
    assert [(t.first_seq, t.last_seq) for t in found] == [(1, 25), (26, 45)]
    assert [t.title for t in found] == ["Topic 1", "Topic 3"]  # the larger part's title
    assert found[0].summary == "What was discussed in part 0. What was discussed in part 1."
    assert archiver.archived_through("u1", session.id) == 45
    assert archiver.unarchived_tokens("u1", session.id)[0] == 15


def test_out_of_range_indices_are_sent_back_once(engine: ContextEngine, server: ChatServer) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    server.script(answer((0, 29), (30, 75)), answer((0, 29), (30, 49)))
    archiver = make_archiver(engine, model(server))
    found = archiver.archive("u1", session.id, force=True)
    assert [t.last_seq for t in found] == [30, 50] and found[0].method.startswith("llm:")
    assert len(server.requests) == 2
    retry = server.requests[1]["messages"][-1]["content"]
    assert "outside 0..49" in retry


@pytest.mark.parametrize(
    "bad",
    [
        answer((0, 29), (30, 75)),  # out of range
        answer((10, 5)),  # reversed
        answer((0, 30), (20, 49)),  # overlapping
    ],
    ids=["out-of-range", "reversed", "overlapping"],
)
def test_unusable_indices_twice_fall_back_to_offline(
    engine: ContextEngine, server: ChatServer, bad: Reply
) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    server.script(bad, bad)
    failures: list[Failure] = []
    archiver = make_archiver(engine, model(server), failures)
    found = archiver.archive("u1", session.id, force=True)
    assert found and all(t.method == "offline (llm failed: llm_response_invalid)" for t in found)
    assert 31 in {t.first_seq for t in found}  # the offline method's boundary
    assert len(server.requests) == 2
    assert [(f[0], f[1], f[2]) for f in failures] == [("u1", session.id, "topics")]
    assert isinstance(failures[0][3], LLMResponseInvalid)
    assert archiver.profile("u1")["preferred_name"].method.startswith("offline (llm failed")


@pytest.mark.parametrize(
    "reply",
    [
        Reply.text("Sure! The topics are the trip and then the database."),
        Reply.truncated('{"topics": [{"title": "Lisbon trip", "summary": "Flights and'),
    ],
    ids=["malformed", "truncated"],
)
def test_a_malformed_or_truncated_answer_falls_back_to_offline(
    engine: ContextEngine, server: ChatServer, reply: Reply
) -> None:
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    server.default = lambda body: reply
    failures: list[Failure] = []
    archiver = make_archiver(engine, model(server), failures)
    found = archiver.archive("u1", session.id, force=True)
    assert found and found[0].method == "offline (llm failed: llm_response_invalid)"
    assert_contiguous(found, links(engine, session), 50)
    assert len(failures) == 1 and isinstance(failures[0][3], LLMResponseInvalid)


def test_a_server_that_is_down_falls_back_to_offline(engine: ContextEngine) -> None:
    with start_chat_server() as down:
        llm = model(down)
    session = engine.create_session(user_id="u1")
    record(session, TRIP + POOL)
    failures: list[Failure] = []
    archiver = make_archiver(engine, llm, failures)
    found = archiver.archive("u1", session.id, force=True)
    assert found and all(t.method == "offline (llm failed: llm_unavailable)" for t in found)
    assert isinstance(failures[0][3], LLMUnavailable)
    assert archiver.archived_through("u1", session.id) == 50
