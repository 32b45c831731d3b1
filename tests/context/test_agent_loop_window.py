"""``adaptive``, the default window: what an agent loop needs before its next model call.

The system prompt and the session's system events, the compacted past, the recent
history as chat exactly as recorded (sliding in whole-turn steps so consecutive windows
share their start), then what varies per call. On SQLite and PostgreSQL.
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentctx import AgentConfig, ContextEngine
from agentctx.context import ContextWindow, adaptive
from agentctx.context.render import PLACEHOLDER_PATTERN
from agentctx.sessions.session import Session
from agentctx.tokens import message_tokens
from conftest import make_png


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as eng:
        yield eng


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "\n".join(p.get("text", "") for p in content if p.get("type") == "text")
    calls = [
        f"{c['function']['name']}{c['function']['arguments']}"
        for c in message.get("tool_calls") or ()
    ]
    return "\n".join([str(content or ""), *calls])


def customer_turn(session: Session, i: int, size: int = 30) -> None:
    """One request of an agent loop: the user asks, the agent looks something up, answers."""
    with session.turn() as turn:
        turn.add_message("user", f"Request {i}: please check booking BK{i:04d} " + "now " * size)
        call = turn.add_tool_call("get_booking", {"booking_id": f"BK{i:04d}"}, call_id=f"c{i}")
        turn.add_tool_result(
            call.call_id,
            content=f'{{"booking_id": "BK{i:04d}", "seat": "{i}A", "notes": "{"x " * size}"}}',
        )
        turn.add_message("assistant", f"Booking BK{i:04d} has seat {i}A. " + "ok " * size)


def test_the_layout_is_stable_first_then_history_then_what_varies(engine: ContextEngine) -> None:
    engine.register_agent(AgentConfig(agent_id="desk", system_prompt="You run the travel desk."))
    session = engine.create_session("u1", "desk")
    session.add_message("system", "Always confirm before you book.")
    for i in range(3):
        customer_turn(session, i)
    session.set_task("Check every booking", steps_done=["BK0000"])
    window = session.build_context(query="check booking BK0002", budget=4000)
    messages = window.messages
    # 1. the configured prompt, then the session's own system event (not history)
    assert messages[0] == {"role": "system", "content": "You run the travel desk."}
    assert messages[1] == {"role": "system", "content": "Always confirm before you book."}
    assert sum("Always confirm" in text_of(m) for m in messages) == 1
    # 3. the history exactly as recorded: calls as calls, results as tool messages
    history = messages[2:-2]
    assert [m["role"] for m in history[:4]] == ["user", "assistant", "tool", "assistant"]
    assert history[1]["tool_calls"][0]["function"] == {
        "name": "get_booking",
        "arguments": '{"booking_id":"BK0000"}',
    }
    assert history[2]["tool_call_id"] == "c0"
    # 4. what varies per call last: the active task, then the pinned instruction
    assert messages[-2]["content"].startswith("[ACTIVE TASK] Goal: Check every booking")
    assert messages[-1]["content"].startswith("[CRITICAL INSTRUCTION]")
    report = window.report
    assert (
        report.section("system").tokens
        == sum(  # type: ignore[union-attr]
            message_tokens(engine.token_counter(), m)
            for m in (messages[0], messages[1], *messages[-2:])
        )
    )


def test_without_a_task_the_request_is_not_repeated_unless_asked(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "desk")
    customer_turn(session, 1)
    plain = session.build_context(query="check booking BK0001", budget=4000)
    assert not any("CRITICAL INSTRUCTION" in text_of(m) for m in plain.messages)
    pinned = session.build_context(
        query="check booking BK0001",
        budget=4000,
        config={"sections": {"pinned_instruction": True}},
    )
    assert text_of(pinned.messages[-1]).startswith("[CRITICAL INSTRUCTION]")
    assert "check booking BK0001" in text_of(pinned.messages[-1])


def agent_loop_windows(session: Session, turns: int, budget: int) -> list[ContextWindow]:
    """A window before each model call of ``turns`` requests (two calls per request)."""
    windows = []
    for i in range(turns):
        with session.turn() as turn:
            turn.add_message("user", f"Request {i}: check booking BK{i:04d} " + "now " * 30)
            windows.append(session.build_context(query=f"check booking BK{i:04d}", budget=budget))
            call = turn.add_tool_call("get_booking", {"booking_id": f"BK{i:04d}"}, call_id=f"c{i}")
            turn.add_tool_result(call.call_id, content=f"BK{i:04d}: seat {i}A " + "x " * 60)
            windows.append(session.build_context(query=f"check booking BK{i:04d}", budget=budget))
            turn.add_message("assistant", f"Seat {i}A is booked. " + "ok " * 30)
    return windows


def history_ids(window: ContextWindow) -> tuple[str, ...]:
    return window.report.section("recent").event_ids  # type: ignore[union-attr]


def test_consecutive_windows_only_grow_at_the_history_until_a_slide(
    engine: ContextEngine,
) -> None:
    session = engine.create_session("u1", "desk")
    windows = agent_loop_windows(session, 40, budget=2000)
    slides = 0
    for before, after in itertools.pairwise(windows):
        assert after.tokens <= 2000
        old, new = history_ids(before), history_ids(after)
        if new[: len(old)] == old:
            # Only appended: everything before the history and the whole history of the
            # previous window start the new one, byte for byte.
            end = len(before.messages) - sum(
                1
                for m in before.messages[::-1]
                if m["role"] == "system" and "retrieved" in text_of(m)
            )
            assert after.messages[:end] == before.messages[:end]
            stable = after.report.stable_prefix_tokens
            assert stable is not None and stable >= sum(
                message_tokens(session._engine.token_counter(), m) for m in before.messages[:end]
            )
        else:
            slides += 1
            # A slide drops whole turns from the old end: the new history starts a turn.
            first = new[0]
            event = next(e for e in session.events() if e.event_id == first)
            turn_first = session.events(turn_id=event.turn_id)[0]
            assert turn_first.event_id == first
    # 40 requests of ~250 tokens in a ~1,100-token history: it slid, but seldom.
    assert 0 < slides <= len(windows) // 4
    assert (
        windows[0].report.stable_prefix_tokens is None
        or windows[0].report.stable_prefix_tokens == 0
    )


def test_the_same_log_gives_the_same_window_in_another_process(
    db_url: str, home: Path, tmp_path: Path
) -> None:
    """Where the history starts is a function of the log, not of what was built before."""
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as first:
        session = first.create_session("u1", "desk")
        agent_loop_windows(session, 25, budget=1500)
        built = session.build_context(query="check booking BK0024", budget=1500)
    with ContextEngine(
        url=db_url, home=tmp_path / "other", embeddings={"provider": "hashing"}
    ) as second:
        again = second.get_session(session.id, user_id="u1").build_context(
            query="check booking BK0024", budget=1500
        )
    assert again.messages == built.messages


def test_turns_that_left_the_history_stay_readable_in_the_digest(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "desk")
    for i in range(30):
        customer_turn(session, i)
    window = session.build_context(query="check booking BK0029", budget=2500)
    digest = next(m for m in window.messages if text_of(m).startswith("Earlier in this session"))
    history = [m for m in window.messages if m["role"] != "system"]
    first_shown = int(history[0]["content"].split(":")[0].split()[1])  # "Request N: …"
    assert first_shown > 0  # older turns left the history…
    previous = f"BK{first_shown - 1:04d}"
    # …and the one just before it is compacted: its call's arguments, its result's fields.
    assert f'called get_booking({{"booking_id":"{previous}"}})' in text_of(digest)
    assert f"booking_id={previous}; seat={first_shown - 1}A" in text_of(digest)
    assert set(window.report.section("summary").event_ids)  # type: ignore[union-attr]


def test_screenshots_of_earlier_turns_are_frames_or_placeholders_with_their_ids(
    engine: ContextEngine,
) -> None:
    session = engine.create_session("u1", "browser")
    for t in range(3):
        with session.turn() as turn:
            turn.add_message("user", f"step {t}: click through the checkout")
            for k in range(4):
                call = turn.add_tool_call("screenshot", {"k": k}, call_id=f"s{t}-{k}")
                turn.add_tool_result(
                    call.call_id, content=f"frame {k}", images=[make_png(seed=10 * t + k)]
                )
            turn.add_message("assistant", f"step {t} done")
    window = session.build_context(budget=32_000)
    text = "\n".join(text_of(m) for m in window.messages)
    placeholders = PLACEHOLDER_PATTERN.findall(text)
    assert placeholders, "process frames of ended turns show as placeholders"
    for image_id in placeholders:
        assert engine.restore_image(image_id, user_id="u1")  # each names a restorable image
    sent = [
        p for m in window.messages if isinstance(m.get("content"), list)
        for p in m["content"] if p.get("type") == "image_url"
    ]  # fmt: skip
    assert sent, "kept frames of earlier turns are still sent as images"
    assert set(window.report.images.placeholders) == set(placeholders)
    assert window.report.not_considered == 0  # a 32k window reads every screenshot turn


def test_a_question_about_the_past_is_answered_by_relevance(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "desk")
    session.add_message("user", "My loyalty number is LX-88231, keep it for later.")
    for i in range(40):
        customer_turn(session, i)
    asked = session.build_context(query="What is my loyalty number?", budget=2000)
    assert "LX-88231" in "\n".join(text_of(m) for m in asked.messages)
    assert any("about the past" in note for note in asked.report.notes)
    # The request at hand keeps the agent loop's layout.
    working = session.build_context(query="check booking BK0039", budget=2000)
    assert not any("about the past" in note for note in working.report.notes)


def test_erasure_forgets_the_last_windows_fingerprints(engine: ContextEngine) -> None:
    first = engine.create_session("u1", "desk")
    second = engine.create_session("u1", "desk")
    for session in (first, second):
        customer_turn(session, 1)
        session.build_context(budget=2000)
        assert session.build_context(budget=2000).report.stable_prefix_tokens
    memory = engine.context_builder.prefixes
    engine.delete_session(first.id, user_id="u1")
    assert memory.exchange(("u1", first.id), ()) is None
    engine.delete_user_data("u1")
    assert memory.exchange(("u1", second.id), ()) is None


def test_a_screenshot_session_is_read_by_what_its_images_cost_in_the_history(
    engine: ContextEngine,
) -> None:
    """A screenshot is stored with its full-size estimate (~1,100 tokens at 1280x800), but
    the history shows most as placeholders or low-detail frames: a 32k window reads every
    turn of a session whose estimates add up to several times that."""
    session = engine.create_session("u1", "browser")
    for t in range(24):
        with session.turn() as turn:
            turn.add_message("user", f"step {t}")
            for k in range(5):
                call = turn.add_tool_call("screenshot", {"k": k}, call_id=f"s{t}-{k}")
                shot = make_png(1280, 800, seed=7 * t + k)
                turn.add_tool_result(call.call_id, content=f"frame {t}.{k}", images=[shot])
    estimated = sum(e.token_estimate for e in session.events())
    assert estimated > 4 * 32_000
    for strategy in ("adaptive", "semantic", "full"):
        window = session.build_context(
            budget=32_000, strategy=strategy, config={"full": {"max_messages": 1000}}
        )
        assert window.report.not_considered == 0, strategy
        assert session.events()[1].event_id in window.report.included_event_ids, strategy
        assert window.tokens <= 32_000


def test_a_newest_turn_longer_than_the_budget_keeps_its_request_calls_and_results(
    engine: ContextEngine,
) -> None:
    session = engine.create_session("u1", "desk")
    with session.turn() as turn:
        turn.add_message("user", "Export the three parts of the report.")
        calls = [turn.add_tool_call("export", {"part": p}, call_id=f"p{p}") for p in range(3)]
        for p, call in enumerate(calls):
            rows = [{"row": f"row_{p}_{k}", "value": f"cell {k * 7919 % 1000}"} for k in range(80)]
            turn.add_tool_result(call.call_id, content=json.dumps(rows))
        turn.add_message("assistant", "All three parts exported.")
    for budget in (3000, 1000, 600):
        window = session.build_context(query="export", budget=budget)
        assert window.tokens <= budget
        roles = [m["role"] for m in window.messages]
        # The request, the calls, each call's result (cut), the answer: nothing dropped,
        # no marker for events that were not omitted.
        assert roles == ["user", "assistant", "tool", "tool", "tool", "assistant"], roles
        assert window.messages[0]["content"] == "Export the three parts of the report."
        assert [m["tool_call_id"] for m in window.messages[2:5]] == ["p0", "p1", "p2"]
        assert window.report.truncated


def test_searching_after_the_history_builds_the_same_window(
    engine: ContextEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The user's latest request is searched for once the history is placed (its
    # embedding runs meanwhile); searched for first, as any other query, the window and
    # what it reports are the same.
    session = engine.create_session("u1", "desk")
    session.add_message("user", "My loyalty number is LX-88231, keep it for later.")
    for i in range(40):
        customer_turn(session, i)
    request = f"Request 39: please check booking BK0039 {'now ' * 30}".strip()
    kinds = []
    asked_anew: list[bool] = []
    original = adaptive._asks_anew
    for search_first in (False, True):

        def asks_anew(build: Any, capacity: int, first: bool = search_first) -> bool:
            asked_anew.append(original(build, capacity))
            return first or asked_anew[-1]

        monkeypatch.setattr(adaptive, "_asks_anew", asks_anew)
        window = session.build_context(query=request, budget=2000)
        report = window.report
        kinds.append(
            (
                window.messages,
                report.sections,
                report.included_event_ids,
                report.dropped,
                report.truncated,
                report.not_considered,
                report.dense_ranking,
                report.notes,
            )
        )
    assert asked_anew == [False, False]  # the latest request: history first
    assert kinds[0] == kinds[1]
    assert any("BK0039" in text_of(m) for m in kinds[0][0])
