"""Properties of every window, over generated sessions, budgets and strategies.

For any mix of messages, tool calls with results (some failing, some with images),
errors and legacy events, any budget from 200 to 200k tokens and any strategy:
the window never exceeds the budget as counted by the tokenizer (framing included),
never separates a tool call from its results, and its report accounts for it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentctx import ContextEngine, EventDraft, EventType, TextPart
from agentctx.tokens import messages_tokens
from conftest import make_png

WORDS = ["alpha", "beta", "gamma", "delta", "报告", "数据", "error", "decided", "x" * 40]

text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=400).map(" ".join)

step = st.one_of(
    st.tuples(st.just("message"), st.sampled_from(["user", "assistant"]), text),
    st.tuples(st.just("tool"), st.integers(1, 3), text, st.booleans(), st.booleans()),
    st.tuples(st.just("error"), text),
    st.tuples(st.just("legacy"), text),
)
turn = st.lists(step, min_size=1, max_size=6)


@pytest.fixture(scope="module")
def engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContextEngine]:
    home: Path = tmp_path_factory.mktemp("props")
    with ContextEngine(home=home) as engine:
        yield engine


def record(engine: ContextEngine, turns: list[list[tuple[Any, ...]]]) -> Any:
    session = engine.create_session(user_id="u1")
    image = make_png(640, 400)
    for steps in turns:
        legacy = [s for s in steps if s[0] == "legacy"]
        if legacy:  # events from before turns existed: no turn id
            session.import_legacy(
                *(EventDraft(type=EventType.NOTE, parts=(TextPart(text=s[1]),)) for s in legacy)
            )
        with session.turn() as current:
            for item in steps:
                kind = item[0]
                if kind == "message":
                    current.add_message(item[1], item[2])
                elif kind == "tool":
                    _, parallel, body, failed, with_image = item
                    calls = [current.add_tool_call("t", {"i": i}) for i in range(parallel)]
                    for call in calls:
                        current.add_tool_result(
                            call.call_id,
                            content=body,
                            is_error=failed,
                            images=[image] if with_image else None,
                        )
                elif kind == "error":
                    current.add_event(EventType.ERROR, item[1])
    return session


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    turns=st.lists(turn, min_size=1, max_size=8),
    budget=st.one_of(st.integers(200, 2_000), st.integers(2_000, 200_000)),
    strategy=st.sampled_from(["full", "compressed", "adaptive", "semantic"]),
    query=st.one_of(st.none(), text),
    images=st.sampled_from(["inline", "placeholder"]),
)
def test_every_window_fits_and_keeps_tool_pairs(  # noqa: PLR0917 - hypothesis arguments
    engine: ContextEngine,
    turns: list[list[tuple[Any, ...]]],
    budget: int,
    strategy: str,
    query: str | None,
    images: str,
) -> None:
    session = record(engine, turns)
    window = session.build_context(
        query=query, budget=budget, strategy=strategy, config={"images": images}
    )
    counter = engine.token_counter()
    assert window.tokens <= budget
    if images == "placeholder":
        assert messages_tokens(counter, window.messages) == window.tokens
    open_calls: set[str] = set()
    for message in window.messages:
        assert message["role"] in ("system", "user", "assistant", "tool")
        for call in message.get("tool_calls") or []:
            open_calls.add(call["id"])
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls
            open_calls.discard(message["tool_call_id"])
    assert not open_calls
    report = window.report
    assert report.tokens == window.tokens and report.budget == budget
    included = set(report.included_event_ids)
    assert not included & {d.event_id for d in report.dropped}
    # The newest event makes it unless it alone cannot fit (then the report says so).
    newest = session.events(last=1)[0]
    assert newest.event_id in included or newest.event_id in {
        d.event_id for d in report.dropped if d.reason == "budget"
    }


loop_turn = st.tuples(
    st.sampled_from(WORDS),  # the request
    st.lists(st.tuples(st.integers(0, 600), st.booleans()), max_size=4),  # results: size, image
)


@pytest.fixture(scope="module")
def loop_engine(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ContextEngine]:
    # Visual compaction turns an ended turn's process frames into placeholders once, when
    # the turn ends (a change at the history's end, by design): off here, so what is
    # checked is the slide alone.
    home: Path = tmp_path_factory.mktemp("loop")
    with ContextEngine(
        home=home, visual={"compaction": False}, embeddings={"provider": "hashing"}
    ) as engine:
        yield engine


@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    turns=st.lists(loop_turn, min_size=1, max_size=12),
    budget=st.one_of(st.integers(200, 3_000), st.integers(3_000, 200_000)),
)
def test_an_agent_loops_windows_share_their_start_until_a_slide(
    loop_engine: ContextEngine, turns: list[tuple[str, list[tuple[int, bool]]]], budget: int
) -> None:
    """Before every model call of an agent loop: the window fits, keeps every call with its
    results, and, unless the history slid, starts with everything the previous window had
    up to the end of its history."""
    session = loop_engine.create_session(user_id="u1")
    image = make_png(640, 400)
    previous = None
    for index, (request, results) in enumerate(turns):
        with session.turn() as current:
            current.add_message("user", f"request {index}: {request}")
            for number, (size, with_image) in enumerate(results):
                window = session.build_context(query=request, budget=budget)
                check_loop_window(window, previous, budget)
                previous = window
                call = current.add_tool_call("t", {"n": number})
                current.add_tool_result(
                    call.call_id,
                    content=" ".join(WORDS[i % len(WORDS)] for i in range(size)),
                    images=[image] if with_image else None,
                )
            window = session.build_context(query=request, budget=budget)
            check_loop_window(window, previous, budget)
            previous = window
            current.add_message("assistant", f"done {index}")


def check_loop_window(window: Any, previous: Any, budget: int) -> None:
    assert window.tokens <= budget
    open_calls: set[str] = set()
    for message in window.messages:
        for call in message.get("tool_calls") or []:
            open_calls.add(call["id"])
        if message["role"] == "tool":
            assert message["tool_call_id"] in open_calls
            open_calls.discard(message["tool_call_id"])
    assert not open_calls
    if previous is None:
        return
    old = previous.report.section("recent").event_ids
    new = window.report.section("recent").event_ids
    same_past = (
        previous.report.section("summary").event_ids == window.report.section("summary").event_ids
    )
    if (
        new[: len(old)] != old
        or not same_past
        or _shortened(previous)
        or _shortened(window)
        or _cut_again(previous, window)
    ):
        # The history slid, compaction ran, or a turn too long for the room on its own
        # was shortened or cut (again when a newer event takes room from it): the start
        # may change once.
        return
    varying = previous.report.section("retrieved").messages + sum(
        1
        for m in previous.messages
        if str(m.get("content", "")).startswith(("[ACTIVE TASK]", "[CRITICAL INSTRUCTION]"))
    )
    end = len(previous.messages) - varying
    assert window.messages[:end] == previous.messages[:end]
    stable = window.report.stable_prefix_tokens
    assert stable is not None and stable >= sum(s.tokens for s in previous.report.sections[:2])


def _shortened(window: Any) -> bool:
    return any("events of this turn" in str(m.get("content", "")) for m in window.messages)


def _cut_again(previous: Any, window: Any) -> bool:
    """Whether a message both windows show is cut to another length in the second, or cut
    in one only (a turn too long for the room on its own: how much of it is cut depends
    on what came after)."""
    before = {t.event_id: t.tokens_after for t in previous.report.truncated}
    after = {t.event_id: t.tokens_after for t in window.report.truncated}
    both = set(previous.report.included_event_ids) & set(window.report.included_event_ids)
    return any(before.get(event_id) != after.get(event_id) for event_id in both)
