"""``session.build_context``: sections, strategies, budgets, rendering and the report."""

from __future__ import annotations

import itertools
import json
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentctx import AgentConfig, ConfigError, ContextEngine, InvalidInput
from agentctx.context import ContextWindow, preset_for
from agentctx.context.lines import WHOLE_LINE_TOKENS
from agentctx.sessions.session import Session
from agentctx.tokens import messages_tokens
from conftest import make_png

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)


def window_text(window: ContextWindow) -> str:
    out = []
    for message in window.messages:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(p.get("text", "") for p in content if p.get("type") == "text")
        for call in message.get("tool_calls") or []:
            out.append(call["function"]["arguments"])
    return "\n".join(out)


def chat(session: Session, n: int, start: int = 0) -> None:
    for i in range(start, start + n):
        role = "user" if i % 2 == 0 else "assistant"
        session.add_message(role, f"message {i} about topic{i}", ts=T0 + timedelta(minutes=i))


def assert_pairs_intact(messages: list[dict[str, Any]]) -> None:
    """Every tool result follows its call, and every call in the window has its results."""
    open_calls: set[str] = set()
    for message in messages:
        for call in message.get("tool_calls") or []:
            open_calls.add(call["id"])
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls, "a tool result without its call"
            open_calls.discard(message["tool_call_id"])
    assert not open_calls, f"tool calls without their results: {open_calls}"


@pytest.fixture
def session(engine: ContextEngine) -> Session:
    return engine.create_session(user_id="u1", agent_id="helper")


def test_a_short_session_fits_whole_and_in_order(engine: ContextEngine, session: Session) -> None:
    chat(session, 6)
    window = session.build_context(query="topic3", budget=4000, system_prompt="Be brief.")
    texts = [m["content"] for m in window.messages if m["role"] in ("user", "assistant")]
    assert texts == [f"message {i} about topic{i}" for i in range(6)]
    assert window.messages[0] == {"role": "system", "content": "Be brief."}
    counter = engine.token_counter()
    assert window.tokens == messages_tokens(counter, window.messages) <= 4000
    report = window.report
    assert report.section("recent") is not None
    assert len(report.included_event_ids) == 6
    assert report.budget == 4000 and report.tokens == window.tokens


def test_the_budget_holds_and_older_events_are_reported(session: Session) -> None:
    chat(session, 200)
    window = session.build_context(budget=300, strategy="adaptive")
    assert window.tokens <= 300
    assert "message 199" in window_text(window)
    assert "message 0 " not in window_text(window)
    dropped = {d.reason for d in window.report.dropped}
    assert dropped <= {"budget", "not_relevant"}
    # What the window does not show is accounted for: left out, or never read.
    shown = len(window.report.included_event_ids) + len(
        window.report.section("summary").event_ids  # type: ignore[union-attr]
    )
    assert shown + len(window.report.dropped) + window.report.not_considered >= 200


def test_semantic_retrieves_the_relevant_old_event_with_its_date(session: Session) -> None:
    session.add_message("user", "My sister Ingrid lives in Trondheim.", ts=T0)
    chat(session, 120, start=1)
    window = session.build_context(query="Where does Ingrid live?", budget=600, strategy="semantic")
    text = window_text(window)
    assert "Ingrid lives in Trondheim" in text
    # Retrieved events keep their dates: a heading per day, the time on each line.
    assert "## 2024-03-01 (Friday)\nuser: My sister Ingrid" in text
    assert window.tokens <= 600
    # The index lookup is timed apart, within the retrieval step's time.
    timings = window.report.timings_ms
    assert 0 < timings["search_ms"] <= timings["retrieve_ms"] <= timings["total_ms"]
    assert session.build_context(budget=600).report.timings_ms["search_ms"] == 0.0  # no query


def test_a_retrieved_message_of_a_quarter_of_a_small_budget_is_shown_whole(
    engine: ContextEngine, session: Session
) -> None:
    # About 200 tokens: over an eighth of a 1k budget, so it was shortened once.
    places = ", ".join(f"then past the old mill number {i}" for i in range(24))
    whole = f"My sister Ingrid lives in Trondheim, {places}."
    # About 600 tokens: over 256, so it is shortened at any budget where it is a line.
    rambling = "Ingrid works in Bergen. " + " ".join(
        f"The harbour crane {i} lifts crates." for i in range(80)
    )
    counter = engine.token_counter()
    assert 125 < counter.count(whole) <= 250
    assert counter.count(rambling) > WHOLE_LINE_TOKENS
    session.add_message("user", whole, ts=T0)
    session.add_message("user", rambling, ts=T0 + timedelta(minutes=1))
    chat(session, 120, start=2)
    window = session.build_context(query="Where does Ingrid live?", budget=1000)
    text = window_text(window)
    assert whole in text
    assert "Ingrid works in Bergen." in text and "[shortened]" in text
    assert rambling not in text
    assert window.tokens <= 1000


def test_a_tool_call_and_its_result_are_never_split(session: Session) -> None:
    chat(session, 10)
    with session.turn() as turn:
        turn.add_message("user", "look it up")
        for i in range(6):
            call = turn.add_tool_call("search", {"q": f"query {i}" * 20})
            turn.add_tool_result(call.call_id, content=f"result {i} " + "data " * 150)
        turn.add_message("assistant", "done")
    for budget in (200, 400, 900, 3000):
        window = session.build_context(budget=budget)
        assert window.tokens <= budget
        assert_pairs_intact(window.messages)


def test_an_oversized_turn_is_shortened_from_its_middle(session: Session) -> None:
    with session.turn() as turn:
        turn.add_message("user", "FIRST: please research this")
        for i in range(20):
            call = turn.add_tool_call("fetch", {"page": i})
            turn.add_tool_result(call.call_id, content=f"page {i} " + "text " * 80)
        turn.add_message("assistant", "LAST: here is the answer")
    window = session.build_context(budget=1500, strategy="semantic")
    text = window_text(window)
    assert "FIRST: please research this" in text and "LAST: here is the answer" in text
    assert "events of this turn omitted to fit the budget" in text
    assert window.tokens <= 1500
    assert_pairs_intact(window.messages)


def test_an_agent_loops_long_turn_keeps_its_request_and_compacts_what_left(
    session: Session,
) -> None:
    """adaptive: a turn too long for the window keeps its first message (the request),
    the events that left as compact lines (every page number still there), and its
    newest events whole."""
    with session.turn() as turn:
        turn.add_message("user", "FIRST: please research this")
        for i in range(20):
            call = turn.add_tool_call("fetch", {"page": i})
            turn.add_tool_result(call.call_id, content=f"page {i} " + "text " * 80)
        turn.add_message("assistant", "LAST: here is the answer")
    window = session.build_context(budget=1500)
    text = window_text(window)
    chat = [m for m in window.messages if m["role"] != "system"]
    assert chat[0]["content"] == "FIRST: please research this"
    assert chat[-1]["content"] == "LAST: here is the answer"
    compacted = next(m["content"] for m in window.messages if "compacted" in str(m["content"]))
    assert compacted.startswith("[… ") and "earlier events of this turn" in compacted
    assert compacted.count('called fetch({"page":') >= 2  # calls left, with their arguments
    assert "page 19 text" in text  # the newest results whole
    assert window.tokens <= 1500
    assert_pairs_intact(window.messages)


def test_an_overlong_message_is_cut_with_a_visible_marker(session: Session) -> None:
    session.add_message("user", "START " + "lorem ipsum dolor " * 2000 + " END")
    window = session.build_context(budget=1000)
    (message,) = [m for m in window.messages if m["role"] == "user"]
    assert message["content"].startswith("START") and message["content"].endswith("END")
    assert "truncated" in message["content"]
    assert window.report.truncated and window.report.truncated[0].tokens_before > 1000
    assert window.tokens <= 1000


def test_the_recent_window_never_starts_mid_turn(session: Session) -> None:
    for t in range(30):
        with session.turn() as turn:
            turn.add_message("user", f"question {t} " + "x " * 30)
            turn.add_message("assistant", f"answer {t} " + "y " * 30)
    window = session.build_context(budget=700, strategy="full")
    chat_messages = [m for m in window.messages if m["role"] in ("user", "assistant")]
    assert chat_messages[0]["content"].startswith("question")
    assert chat_messages[-1]["content"].startswith("answer 29")
    assert window.messages[0]["content"].startswith("[Earlier conversation truncated")


def test_compressed_shortens_older_turns_and_keeps_recent_ones_whole(session: Session) -> None:
    for i in range(12):
        session.add_message("user", f"note {i}: " + "word " * 120)
    window = session.build_context(budget=20_000, strategy="compressed")
    contents = [m["content"] for m in window.messages if m["role"] == "user"]
    whole = [c for c in contents if "truncated" not in c]
    cut = [c for c in contents if "truncated" in c]
    assert len(whole) == 5 and all(
        c.startswith(f"note {i}") for i, c in zip(range(7, 12), whole, strict=True)
    )
    assert len(cut) == 7  # medium_recent=10 messages cover only the ones that exist
    dropped = [d for d in window.report.dropped if d.reason == "compacted"]
    assert not dropped


def test_semantic_prefers_decisions_and_errors_over_background(session: Session) -> None:
    session.add_message("assistant", "We decided to use PostgreSQL for the ledger.", ts=T0)
    for i in range(60):
        session.add_message("user", f"chit chat {i} " + "la " * 20)
    window = session.build_context(budget=800, strategy="semantic")
    assert "decided to use PostgreSQL" in window_text(window)


def test_active_task_and_pinned_instruction_close_the_window(session: Session) -> None:
    chat(session, 4)
    session.set_task("Book a flight to Lisbon", steps_done=["searched flights"])
    session.update_task(finding="TP-537 is cheapest", next_step="book it")
    window = session.build_context(budget=3000)
    task, pinned = window.messages[-2], window.messages[-1]
    assert task["content"].startswith("[ACTIVE TASK] Goal: Book a flight to Lisbon")
    assert "TP-537 is cheapest" in task["content"] and "1. searched flights" in task["content"]
    assert pinned["content"].startswith("[CRITICAL INSTRUCTION]")
    assert "Book a flight to Lisbon" in pinned["content"]
    off = session.build_context(
        budget=3000, config={"sections": {"active_task": False, "pinned_instruction": False}}
    )
    assert "[ACTIVE TASK]" not in window_text(off) and "CRITICAL" not in window_text(off)
    with pytest.raises(InvalidInput):
        session.set_task("")


def test_the_same_inputs_give_the_same_bytes(session: Session) -> None:
    chat(session, 40)
    call = session.add_tool_call("lookup", {"b": 2, "a": 1})
    session.add_tool_result(call.call_id, content="ok", data={"z": 1, "y": [1, 2]})
    first = session.build_context(query="topic7", budget=1200)
    second = session.build_context(query="topic7", budget=1200)
    assert json.dumps(first.messages) == json.dumps(second.messages)
    args = next(m for m in first.messages if m.get("tool_calls"))["tool_calls"][0]
    assert args["function"]["arguments"] == '{"a":1,"b":2}'


def test_images_are_inlined_and_counted_by_the_provider_formula(
    engine: ContextEngine, session: Session
) -> None:
    call = session.add_tool_call("screenshot", {})
    session.add_tool_result(call.call_id, content="screen", images=[make_png(1024, 1024)])
    window = session.build_context(budget=5000)
    images = [
        p
        for m in window.messages
        if isinstance(m.get("content"), list)
        for p in m["content"]
        if p.get("type") == "image_url"
    ]
    assert len(images) == 1 and images[0]["image_url"]["url"].startswith("data:image/png;base64,")
    text_only = session.build_context(budget=5000, config={"images": "placeholder"})
    # A 1024x1024 image costs 765 tokens at OpenAI's high detail.
    assert window.tokens - text_only.tokens >= 700
    assert "[Image img_" in window_text(text_only)
    anthropic = window.to_anthropic()
    blocks = [b for m in anthropic["messages"] for b in m["content"]]
    assert any(b["type"] == "image" for b in blocks)
    assert any(b["type"] == "tool_result" for b in blocks)
    assert any(b["type"] == "tool_use" for b in blocks)


def test_to_anthropic_alternates_roles_and_lifts_the_system_prompt(session: Session) -> None:
    chat(session, 5)
    window = session.build_context(budget=2000, system_prompt="You help.")
    converted = window.to_anthropic()
    assert converted["system"][0] == {"type": "text", "text": "You help."}
    roles = [m["role"] for m in converted["messages"]]
    assert roles[0] == "user"
    assert all(a != b for a, b in itertools.pairwise(roles))


def test_bad_configuration_names_the_field(tmp_path: Path) -> None:
    with ContextEngine(home=tmp_path) as engine:
        session = engine.create_session(user_id="u1")
        with pytest.raises(ConfigError, match="strategy"):
            session.build_context(budget=1000, strategy="everything")
        with pytest.raises(ConfigError, match=r"add up to 1\.0"):
            session.build_context(budget=1000, budget_split={"recent": 0.5})
        with pytest.raises(ConfigError, match=r"semantic\.min_recent"):
            session.build_context(budget=1000, config={"semantic": {"min_recent": -1}})
        with pytest.raises(ConfigError, match=r"semantic\.day_weight"):
            session.build_context(budget=1000, config={"semantic": {"day_weight": -0.1}})
        with pytest.raises(ConfigError, match=r"semantic\.fact_weight"):
            session.build_context(budget=1000, config={"semantic": {"fact_weight": -0.01}})
        with pytest.raises(ConfigError, match=r"semantic\.name_weight"):
            session.build_context(budget=1000, config={"semantic": {"name_weight": 2}})
        with pytest.raises(ConfigError, match=r"adaptive\.low_water"):
            session.build_context(budget=1000, config={"adaptive": {"low_water": 1}})
        with pytest.raises(ConfigError, match=r"adaptive\.digest_share"):
            session.build_context(budget=1000, config={"adaptive": {"digest_share": -0.5}})
        with pytest.raises(InvalidInput):
            session.build_context(budget=10)
        with pytest.raises(ValueError, match="context"):
            AgentConfig(agent_id="a", context={"strategy": "nope"})
    with pytest.raises(ConfigError, match="tokenizer"):
        ContextEngine(home=tmp_path / "x", context={"tokenizer": "bogus"}).token_counter()


def test_agent_settings_choose_the_strategy(tmp_path: Path) -> None:
    with ContextEngine(home=tmp_path) as engine:
        engine.register_agent(
            AgentConfig(agent_id="ops", strategy="full", system_prompt="You run ops.")
        )
        session = engine.create_session(user_id="u1", agent_id="ops")
        chat(session, 3)
        window = session.build_context(budget=1000)
        assert window.report.strategy == "full"
        assert window.messages[0]["content"] == "You run ops."
        assert session.build_context(budget=1000, strategy="semantic").report.strategy == (
            "semantic"
        )


def test_presets_follow_the_context_size_table() -> None:
    assert (preset_for(32_000).context_threshold, preset_for(32_000).min_archive_messages) == (
        0.60,
        10,
    )
    assert preset_for(64_000).min_archive_messages == 15
    assert preset_for(200_000).min_archive_messages == 20
    assert preset_for(8_000).context_limit == 32_000


def test_events_the_state_retracts_stay_out_of_the_window(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "agent")
    kept = session.add_message("user", "book a table for two")
    taken_back = session.add_message("assistant", "RETRACTED-ANSWER about tables")
    session.update_state(
        {"retracted_events": [{"event_id": taken_back.event_id, "seq": taken_back.seq}]}
    )
    window = session.build_context("table", budget=2000)
    text = str(window.messages)
    assert "book a table for two" in text and "RETRACTED-ANSWER" not in text
    assert kept.event_id in window.report.included_event_ids
    assert taken_back.event_id not in window.report.included_event_ids
