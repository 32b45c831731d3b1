"""``session.import_messages`` and ``agentctx sessions import``: conversations in OpenAI's and
Anthropic's message formats recorded as the agent made them, on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from agentctx import ContextEngine, EventType, InvalidInput, SessionNotFound
from agentctx.sessions.importer import MessageImporter
from conftest import make_png
from test_cli import cli, sqlite_url

POLICY = "# Airline Agent Policy\nYou can book, modify or cancel reservations."

AIRLINE: list[dict[str, Any]] = [
    {"role": "system", "content": POLICY},
    {"role": "user", "content": "Hi! I'd like to book a flight from New York to Seattle."},
    {"role": "assistant", "content": "Sure. What is your user ID?"},
    {"role": "user", "content": "My user ID is mia_li_3668."},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "search_direct_flight", "arguments": '{"origin":"JFK"}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "name": "search_direct_flight", "content": "[]"},
    {
        # Real logs reuse a call id once its result came back.
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "search_onestop_flight", "arguments": '{"origin":"JFK"}'},
            },
            {
                "id": "call_2",
                "type": "function",
                "function": {"name": "get_user_details", "arguments": "not json"},
            },
        ],
    },
    {"role": "tool", "tool_call_id": "call_1", "content": '[{"flight_number": "HAT057"}]'},
    {"role": "tool", "tool_call_id": "call_2", "content": '{"name": "Mia Li"}'},
    {"role": "assistant", "content": "HAT057 leaves at 11:00. Shall I book it?"},
]


def test_an_openai_conversation_is_recorded_turn_by_turn(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "airline")
    report = session.import_messages(AIRLINE)

    events = session.events()
    assert [e.type for e in events] == [
        EventType.SYSTEM,
        EventType.USER_INPUT,
        EventType.AGENT_RESPONSE,
        EventType.USER_INPUT,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.TOOL_CALL,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.TOOL_RESULT,
        EventType.AGENT_RESPONSE,
    ]
    assert [e.event_id for e in report.events] == [e.event_id for e in events]
    # Each user message opened a turn; the system prompt came before any.
    assert len(report.turn_ids) == 2
    assert events[0].turn_id not in report.turn_ids
    assert {e.turn_id for e in events[1:3]} == {report.turn_ids[0]}
    assert {e.turn_id for e in events[3:]} == {report.turn_ids[1]}
    assert all(t.status == "ok" for t in session.turns() if t.turn_id in report.turn_ids)
    # Calls keep their ids, names and arguments; results name their call's tool.
    assert events[6].call_id == "call_1" and events[6].meta.tool_name == "search_onestop_flight"
    assert events[6].parts[0].data == {"origin": "JFK"}  # type: ignore[union-attr]
    assert events[7].text == "not json"
    assert events[8].meta.tool_name == "search_onestop_flight"
    assert events[9].meta.tool_name == "get_user_details"
    assert session.verify().ok

    window = session.build_context(budget=8000)
    calls = [c for m in window.messages for c in m.get("tool_calls") or ()]
    assert [c["function"]["name"] for c in calls] == [
        "search_direct_flight",
        "search_onestop_flight",
        "get_user_details",
    ]
    # Every call's result follows it, in order.
    tool_ids = [m["tool_call_id"] for m in window.messages if m["role"] == "tool"]
    assert tool_ids == ["call_1", "call_1", "call_2"]


def test_anthropic_messages_keep_tool_results_in_the_turn(engine: ContextEngine) -> None:
    png = make_png(seed=5)
    conversation = {
        "system": "You operate a browser.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is on the page?"},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": base64.b64encode(png).decode(),
                        },
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "thinking", "thinking": "look closer"},
                    {"type": "text", "text": "Let me zoom in."},
                    {"type": "tool_use", "id": "toolu_1", "name": "zoom", "input": {"x": 3}},
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": [{"type": "text", "text": "zoom failed"}],
                        "is_error": True,
                    }
                ],
            },
            {"role": "assistant", "content": "The page shows a login form."},
            {"role": "user", "content": "Thanks!"},
        ],
    }
    session = engine.create_session("u1", "browser")
    report = session.import_messages(conversation, format="anthropic")
    events = session.events()
    assert [e.type for e in events] == [
        EventType.SYSTEM,
        EventType.USER_INPUT,
        EventType.AGENT_RESPONSE,
        EventType.TOOL_CALL,
        EventType.TOOL_RESULT,
        EventType.AGENT_RESPONSE,
        EventType.USER_INPUT,
    ]
    assert len(report.turn_ids) == 2  # the tool_result message continued the first turn
    assert len({e.turn_id for e in events[1:6]}) == 1
    assert events[2].text == "Let me zoom in."  # the thinking block is not recorded
    assert events[4].meta.status == "error" and events[4].text == "zoom failed"
    image = events[1].images[0]
    assert engine.restore_image(image.image_id, user_id="u1") == png


def test_openai_image_parts_are_stored_and_addresses_are_kept_as_text(
    engine: ContextEngine,
) -> None:
    png = make_png(seed=8)
    url = "data:image/png;base64," + base64.b64encode(png).decode()
    session = engine.create_session("u1")
    session.import_messages(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Compare these"},
                    {"type": "image_url", "image_url": {"url": url}},
                    {"type": "image_url", "image_url": {"url": "https://example.org/a.png"}},
                ],
            }
        ]
    )
    (event,) = session.events()
    assert engine.restore_image(event.images[0].image_id, user_id="u1") == png
    assert event.text == "Compare these\n[image: https://example.org/a.png]"


def test_bad_messages_name_their_place_and_keep_what_came_before(engine: ContextEngine) -> None:
    session = engine.create_session("u1")
    with pytest.raises(InvalidInput, match=r"messages\[2\]: unknown role 'robot'"):
        session.import_messages(
            [
                {"role": "user", "content": "hello"},
                {"role": "assistant", "content": "hi"},
                {"role": "robot", "content": "beep"},
            ]
        )
    assert [e.text for e in session.events()] == ["hello", "hi"]
    for bad, match in [
        ({"role": "tool", "content": "x"}, "tool_call_id"),
        ({"role": "assistant", "tool_calls": [{"id": "c"}]}, "'function' object"),
        ({"role": "user", "content": [{"type": "audio"}]}, "unsupported content part"),
        ({"role": "user", "content": 42}, "string or a list"),
        ("just text", "must be an object"),
    ]:
        with pytest.raises(InvalidInput, match=match):
            session.import_messages([bad])
    with pytest.raises(InvalidInput, match="unknown message format"):
        session.import_messages([], format="gemini")
    with pytest.raises(InvalidInput, match="'messages' list"):
        session.import_messages({"system": "x"})


def test_an_importer_adds_one_message_at_a_time_into_the_open_turn(
    engine: ContextEngine,
) -> None:
    """The agent loop benchmark replays conversations message by message, building a
    window before each model call: the turn stays open between the messages."""
    session = engine.create_session("u1", "airline")
    with MessageImporter(session) as importer:
        importer.add(AIRLINE[0])
        assert importer.turn_id is None
        importer.add(AIRLINE[1])
        first = importer.turn_id
        assert first is not None and session.turn_info(first).status == "open"
        importer.add(AIRLINE[2])
        window = session.build_context(budget=4000)
        assert any(m.get("content") == "Sure. What is your user ID?" for m in window.messages)
        importer.add(AIRLINE[3])
        assert session.turn_info(first).status == "ok" and importer.turn_id != first
    assert all(t.status == "ok" for t in session.turns())


def test_an_import_whose_session_is_erased_raises_that_not_the_turns_end(
    engine: ContextEngine,
) -> None:
    session = engine.create_session(user_id="u1")
    with pytest.raises(SessionNotFound) as raised, MessageImporter(session) as importer:
        importer.add({"role": "user", "content": "my order never came"})
        engine.delete_user_data("u1")
        importer.add({"role": "assistant", "content": "let me look"})
    assert f"turn {importer.report.turn_ids[-1]} could not be ended" in raised.value.__notes__[0]
    assert "SessionNotFound" in raised.value.__notes__[0]


def test_cli_imports_a_file_into_a_new_session(tmp_path: Path) -> None:
    url, home = sqlite_url(tmp_path), tmp_path / "home"
    path = tmp_path / "conversation.json"
    path.write_text(json.dumps(AIRLINE))
    code, stdout, stderr = cli(
        url, home, "sessions", "import", str(path), "--user", "u1", "--session", "s-imported"
    )
    assert code == 0, stderr
    assert "imported 11 events in 2 turns into session s-imported" in stdout
    lines = tmp_path / "lines.jsonl"
    lines.write_text("\n".join(json.dumps(m) for m in AIRLINE[1:3]))
    code, stdout, _ = cli(
        url, home, "sessions", "import", str(lines), "-u", "u1", "-s", "s-imported"
    )
    assert code == 0 and "imported 2 events in 1 turns" in stdout
    with ContextEngine(url=url, home=home) as engine:
        assert len(engine.get_session("s-imported", user_id="u1").events()) == 13
    broken = tmp_path / "broken.json"
    broken.write_text("{not json")
    code, _, stderr = cli(url, home, "sessions", "import", str(broken), "-u", "u1")
    assert code == 2 and "neither JSON nor JSON lines" in stderr
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps([{"role": "robot"}]))
    code, _, stderr = cli(url, home, "sessions", "import", str(bad), "-u", "u1")
    assert code == 2 and "unknown role 'robot'" in stderr
