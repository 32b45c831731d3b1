"""Reproduction packages: the failing turn's redacted events, its recorded window and the
configuration without secrets; recorded windows and flags leave with the user's data."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from agentctx import ContextEngine
from agentctx.agents import AgentConfig
from agentctx.errors import TurnNotFound
from agentctx.hitl import HitlConfig, HitlService, install_hitl, scrub_secrets
from agentctx.sessions.session import Session
from hitl.hitl_support import call_tool, count_rows

EMAIL = "jane.doe@example.com"
SECRETS = ("sk-live-abcdefghijklmnop1234", "s3cretpw", "hunter2", "supersecret-hash-key", "tok123")


def _build_and_record(
    hitl: HitlService, session: Session, turn_id: str | None, query: str, budget: int
) -> Any:
    """What ContextEngine.build_context does once wired: build, then record. (semantic:
    its pinned instruction sends the raw query out, which the package must redact.)"""
    window = session.build_context(query, budget, strategy="semantic")
    hitl.record_window(
        session.user_id,
        session.id,
        turn_id,
        query=query,
        budget=budget,
        strategy=window.report.strategy,
        messages=window.messages,
        tokens=window.tokens,
        report=window.report,
    )
    return window


@pytest.fixture
def engine(db_url: str, home: Path) -> Any:
    """The shared fixture's engine with feature-hashing embeddings: windows with a query
    search, and the local embedding model would take seconds to load."""
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as eng:
        yield eng


@pytest.fixture
def secret_engine(db_url: str, home: Path) -> Any:
    with ContextEngine(
        url=db_url,
        home=home,
        llm={
            "provider": "none",
            "base_url": "http://admin:s3cretpw@llm.internal:8000/v1?api_key=tok123&v=2",
            "api_key": SECRETS[0],
        },
        redaction={"hash_key": SECRETS[3]},
        embeddings={"provider": "hashing"},
    ) as engine:
        yield engine


def test_repro_holds_the_failing_turn_its_window_and_no_secrets(
    secret_engine: ContextEngine, png: bytes
) -> None:
    engine = secret_engine
    hitl = install_hitl(engine, HitlConfig())
    engine.register_agent(
        AgentConfig(
            agent_id="booker",
            system_prompt="You book flights.",
            extra={"webhook_token": "hunter2", "notes": "calls " + SECRETS[0]},
        )
    )
    session = engine.create_session(user_id="u1", agent_id="booker")
    with session.turn():
        session.add_message("user", "hello")
        call_tool(session, "click", ok=True)
    with session.turn() as turn:
        ask = session.add_message("user", f"Book it and mail {EMAIL}")
        _build_and_record(hitl, session, turn.turn_id, f"book and mail {EMAIL}", 2000)
        failures = [call_tool(session, "click", ok=False, image=png) for _ in range(3)]
        window = _build_and_record(hitl, session, turn.turn_id, f"retry for {EMAIL}", 3000)
    assert any(EMAIL in json.dumps(m) for m in window.messages)  # the raw query went out

    package = hitl.repro("u1", session.id)
    assert package.turn_id == turn.turn_id
    assert package.trigger == "tool_failures"
    assert package.cause_event_ids == tuple(f.event_id for f in failures)
    assert package.agent_id == "booker"
    ids = [e.event_id for e in package.events]
    assert ask.event_id in ids and all(f.event_id in ids for f in failures)
    assert all(e.turn_id == turn.turn_id for e in package.events)
    asked = next(e for e in package.events if e.event_id == ask.event_id)
    assert "[EMAIL]" in asked.text and EMAIL not in asked.text

    recorded = package.window
    assert recorded is not None
    assert recorded.turn_id == turn.turn_id
    assert recorded.budget == 3000  # the last build of the turn
    assert recorded.tokens == window.tokens
    assert recorded.strategy == window.report.strategy
    assert recorded.query == "retry for [EMAIL]"
    assert recorded.report["query"] == "retry for [EMAIL]"
    assert len(recorded.messages) == len(window.messages)
    stored = json.dumps(recorded.messages)
    assert EMAIL not in stored and "[EMAIL]" in stored
    assert "data:image" not in stored  # image bytes are not kept; the report names them
    assert "You book flights." in stored

    config = package.config
    dumped = json.dumps(package.model_dump(mode="json"))
    for secret in SECRETS:
        assert secret not in dumped
    assert EMAIL not in dumped
    assert config["engine"]["llm"]["base_url"] == "http://llm.internal:8000/v1?v=2"
    assert "api_key" not in config["engine"]["llm"]
    assert "hash_key" not in config["engine"]["redaction"]
    assert config["agent"]["system_prompt"] == "You book flights."
    assert "webhook_token" not in config["agent"]["extra"]
    assert config["agent"]["extra"]["notes"] == "calls [SECRET]"
    assert config["context"]["strategy"] == "adaptive"
    assert config["hitl"]["consecutive_tool_failures"] == 3
    assert config["database"] in {"sqlite", "postgresql"}
    assert "url" not in config["engine"] and "home" not in config["engine"]


def test_repro_of_an_error_turn_a_named_turn_and_of_nothing(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig(record_windows=False))
    session = engine.create_session(user_id="u1")
    with pytest.raises(TurnNotFound, match="no failed turn"):
        hitl.repro("u1", session.id)  # nothing failed
    with session.turn() as quiet:
        session.add_message("user", "hi")
        hitl.record_window(  # switched off: nothing is kept
            "u1",
            session.id,
            quiet.turn_id,
            query="hi",
            budget=500,
            strategy="full",
            messages=[{"role": "user", "content": "hi"}],
            tokens=3,
            report={},
        )
    with pytest.raises(ValueError, match="bad plan"), session.turn() as failed:
        session.add_message("user", "plan it")
        raise ValueError("bad plan")
    package = hitl.repro("u1", session.id)
    assert package.turn_id == failed.turn_id
    assert package.reason == "bad plan"
    assert package.trigger is None
    assert [e.type.value for e in package.events] == ["user_input", "error"]
    named = hitl.repro("u1", session.id, quiet.turn_id)
    assert [e.text for e in named.events] == ["hi"]
    assert named.window is None
    assert hitl.window("u1", session.id, quiet.turn_id) is None


def test_windows_outside_a_turn_and_the_last_build_wins(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig())
    session = engine.create_session(user_id="u1")
    session.add_message("user", "first")
    _build_and_record(hitl, session, None, "q1", 800)
    _build_and_record(hitl, session, None, "q2", 900)
    recorded = hitl.window("u1", session.id, None)
    assert recorded is not None
    assert recorded.turn_id is None
    assert (recorded.query, recorded.budget) == ("q2", 900)
    assert count_rows(engine, "context_windows", "u1") == 1


def test_deleting_a_session_or_a_user_removes_flags_and_windows(engine: ContextEngine) -> None:
    hitl = install_hitl(engine, HitlConfig())
    sessions = []
    for _ in range(2):
        session = engine.create_session(user_id="u1")
        with session.turn() as turn:
            _build_and_record(hitl, session, turn.turn_id, "go", 500)
            for _ in range(3):
                call_tool(session, "click", ok=False)
        sessions.append(session)
    other = engine.create_session(user_id="u2")
    with other.turn() as turn:
        _build_and_record(hitl, other, turn.turn_id, "go", 500)
        for _ in range(3):
            call_tool(other, "click", ok=False)
    assert count_rows(engine, "hitl_flags", "u1") == 2
    assert count_rows(engine, "context_windows", "u1") == 2

    sessions[0].delete()
    assert count_rows(engine, "hitl_flags", "u1") == 1
    assert count_rows(engine, "context_windows", "u1") == 1
    engine.delete_user_data("u1")
    assert count_rows(engine, "hitl_flags", "u1") == 0
    assert count_rows(engine, "context_windows", "u1") == 0
    assert hitl.needs_human("u1") == []
    # Another user's data stays.
    assert count_rows(engine, "hitl_flags", "u2") == 1
    assert count_rows(engine, "context_windows", "u2") == 1
    # A window recorded for a session deleted meanwhile is dropped quietly.
    hitl.record_window(
        "u1",
        sessions[1].id,
        None,
        query="late",
        budget=1,
        strategy="full",
        messages=[],
        tokens=0,
        report={},
        redactor=engine.redactor,
    )
    assert count_rows(engine, "context_windows", "u1") == 0


def test_scrub_secrets_drops_keys_and_url_credentials() -> None:
    scrubbed = scrub_secrets(
        {
            "api_key": "x",
            "OPENAI-API-KEY": "x",
            "nested": [{"password": "p", "max_tokens": 5, "tokenizer": "estimate"}],
            "dsn": "postgresql://u:p@db/x",
            "url": "postgresql://user:pw@db.internal:5432/app?sslmode=require&password=pw",
            "plain": "https://example.com/v1",
            "text": "token ghp_abcdefghijklmnopqrstu here",
        }
    )
    assert scrubbed == {
        "nested": [{"max_tokens": 5, "tokenizer": "estimate"}],
        "url": "postgresql://db.internal:5432/app?sslmode=require",
        "plain": "https://example.com/v1",
        "text": "token [SECRET] here",
    }
