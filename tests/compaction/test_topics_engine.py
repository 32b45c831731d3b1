"""Topic archiving inside the engine: windows of topics + unarchived messages, archiving
by the agent's context limit in the turn-end job (never by building a window), and model
failures recorded as error events."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from agentctx import AgentConfig, ContextEngine
from agentctx.sessions.session import Session
from compaction.topics_data import POOL, TRIP
from llm.openai_chat_server import Reply, start_chat_server

TOPICS = {"enabled": True, "min_archive_messages": 20, "keep_recent_messages": 10}


def make_engine(db_url: str, home: Path, **settings: Any) -> ContextEngine:
    settings.setdefault("embeddings", {"provider": "hashing"})
    settings.setdefault("topics", TOPICS)
    return ContextEngine(url=db_url, home=home, **settings)


def converse(session: Session, messages: list[tuple[str, str]]) -> None:
    for role, text in messages:
        session.add_message(role, text)


def test_a_window_is_topic_summaries_then_the_unarchived_messages(db_url: str, home: Path) -> None:
    with make_engine(db_url, home, jobs="manual") as engine:
        # The agent's own context limit decides when its sessions are archived (seed 001).
        engine.register_agent(AgentConfig(agent_id="travel", context_limit=1500))
        session = engine.create_session(user_id="u1", agent_id="travel")
        converse(session, TRIP + POOL)
        assert engine.topics.archived_through("u1", session.id) is None
        # Building (or inspecting) a window never archives, whatever its budget.
        for budget in (300, 1500):
            session.build_context(budget=budget)
        assert engine.topics.topics("u1", session.id) == []
        engine.jobs.run_pending()  # the turn-end jobs: 60 messages past 60% of 1,500
        through = engine.topics.archived_through("u1", session.id)
        assert through is not None and through <= 60 - TOPICS["keep_recent_messages"]
        window = session.build_context(budget=1500)
        summary = next(s for s in window.report.sections if s.name == "summary")
        recent = next(s for s in window.report.sections if s.name == "recent")
        assert summary.event_ids
        assert "[Topic summary]" in " ".join(str(m["content"]) for m in window.messages)
        shown = {e.event_id: e.seq for e in session.events()}
        assert recent.event_ids and all(shown[i] > through for i in recent.event_ids)
        assert window.tokens <= 1500
        # Archived events stay in the log, untouched.
        assert len(session.events()) == 60 and session.verify().ok


def test_an_agent_with_a_large_context_is_not_archived_yet(db_url: str, home: Path) -> None:
    with make_engine(db_url, home, jobs="manual") as engine:
        engine.register_agent(AgentConfig(agent_id="big", context_limit=200_000))
        session = engine.create_session(user_id="u1", agent_id="big")
        converse(session, TRIP + POOL)
        engine.jobs.run_pending()
        assert engine.topics.topics("u1", session.id) == []
        thresholds = engine.archive_thresholds("u1", session.id)
        assert (thresholds.context_threshold, thresholds.min_archive_messages) == (0.70, 20)


def test_the_turn_end_job_archives_when_the_threshold_is_passed(db_url: str, home: Path) -> None:
    topics = {**TOPICS, "context_limit": 1200}
    # Names kept: the profile read below holds the name the default redaction replaces.
    with make_engine(
        db_url, home, jobs="inline", topics=topics, redaction={"names": False}
    ) as engine:
        session = engine.create_session(user_id="u1")
        converse(session, TRIP[:15])
        assert engine.topics.topics("u1", session.id) == []  # below 20 messages
        converse(session, TRIP[15:] + POOL)
        stored = engine.topics.topics("u1", session.id)
        assert stored and stored[0].first_seq == 1
        assert engine.topics.profile("u1")["preferred_name"].value == "Maya Chen"


def test_with_archiving_off_windows_show_the_archived_messages(db_url: str, home: Path) -> None:
    with make_engine(db_url, home, jobs="manual") as engine:
        session = engine.create_session(user_id="u1")
        converse(session, TRIP + POOL)
        engine.topics.archive("u1", session.id, force=True)
        through = engine.topics.archived_through("u1", session.id)
        assert through is not None
        window = session.build_context(budget=20_000, config={"sections": {"summaries": False}})
        recent = next(s for s in window.report.sections if s.name == "recent")
        # Without the summary section nothing stands for archived events: they are shown.
        assert len(recent.event_ids) == 60


def test_a_failing_model_is_recorded_as_an_error_event(db_url: str, home: Path) -> None:
    with start_chat_server() as server:
        server.script(*[Reply.server_error()] * 4)
        llm = {
            "provider": "openai",
            "base_url": server.url,
            "api_key": "sk-test",
            "fast_model": "test-model",
            "max_retries": 0,
            "timeout": 5,
        }
        with make_engine(db_url, home, jobs="manual", llm=llm) as engine:
            session = engine.create_session(user_id="u1")
            converse(session, TRIP + POOL)
            stored = engine.topics.archive("u1", session.id, force=True)
            assert stored and all(t.method.startswith("offline (llm failed") for t in stored)
            errors = session.events(types=["error"])
            assert len(errors) == 1
            assert errors[0].payload["job"] == "topics"
            assert errors[0].payload["error_code"] == "llm_unavailable"
            # The error is not archived and does not break the log.
            assert session.verify().ok


def test_with_a_query_summaries_take_only_the_room_retrieval_leaves(
    db_url: str, home: Path
) -> None:
    with make_engine(db_url, home, jobs="manual") as engine:
        session = engine.create_session(user_id="u1")
        converse(session, TRIP + POOL)
        engine.topics.archive("u1", session.id, force=True)
        query = "Which hotel did I reserve in Lisbon, and for which nights?"
        plain = session.build_context(budget=4000)
        small = session.build_context(query=query, budget=600, strategy="semantic")
        large = session.build_context(query=query, budget=20_000, strategy="semantic")
        stored_topics = engine.topics.topics("u1", session.id)

    def section(window: Any, name: str) -> Any:
        return next(s for s in window.report.sections if s.name == name)

    # Without a query the summaries have their share; with one, retrieved events come
    # first, and summaries fill what is left: none in a small window, all in a large one.
    assert section(plain, "summary").event_ids
    assert section(small, "retrieved").event_ids and not section(small, "summary").event_ids
    texts = " ".join(str(m["content"]) for m in small.messages)
    assert "Memmo Alfama for four nights" in texts
    assert len(section(large, "summary").event_ids) == len(stored_topics)
    assert small.tokens <= 600 and large.tokens <= 20_000


def test_a_long_tool_result_counts_as_much_as_a_window_shows_of_it(db_url: str, home: Path) -> None:
    with make_engine(db_url, home, jobs="manual") as engine:
        session = engine.create_session(user_id="u1")
        with session.turn() as turn:
            turn.add_message("user", "Fetch the access log.")
            call = turn.add_tool_call("read_log", {"name": "access"})
            turn.add_tool_result(call.call_id, content="GET /index.html 200 " * 3000)
        messages, tokens = engine.topics.unarchived_tokens("u1", session.id)
        raw = sum(e.token_estimate for e in session.events())
        cap = engine.settings.tool_output.compress_over_tokens
        assert messages == 3 and raw > 10 * cap
        # The result counts as the shortened output a window carries, not its raw size.
        assert tokens == raw - session.events()[-1].token_estimate + cap
    with make_engine(db_url, home, jobs="manual", tool_output={"enabled": False}) as engine:
        assert engine.topics.unarchived_tokens("u1", session.id) == (3, raw)
