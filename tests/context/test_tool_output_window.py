"""Tool results in windows: shortened by their tool's strategy, or offloaded behind a pointer."""

from __future__ import annotations

import json
import re
from pathlib import Path

from agentctx import ContextEngine


def tool_messages(messages: list[dict[str, object]]) -> list[str]:
    return [str(m["content"]) for m in messages if m["role"] == "tool"]


def test_a_long_result_is_shortened_and_a_huge_one_offloaded(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    rows = [{"id": i, "name": f"item {i}", "notes": "lorem ipsum " * 8} for i in range(400)]
    huge = "\n".join(f"log line {i}: request served in {i % 97} ms" for i in range(6000))
    with session.turn() as turn:
        turn.add_message("user", "list the items and fetch the log")
        call = turn.add_tool_call("list_items", {"limit": 400})
        turn.add_tool_result(call.call_id, data=rows)
        call = turn.add_tool_call("fetch_log", {"service": "api"})
        turn.add_tool_result(call.call_id, content=huge)
        turn.add_message("assistant", "done")

    stored = [e.model_dump() for e in session.events()]
    window = session.build_context(budget=20_000)
    assert window.tokens <= 20_000
    listed, logged = tool_messages(window.messages)
    counter = engine.token_counter()
    # The list is cut to whole items with a count of the rest, within the threshold.
    assert counter.count(listed) <= engine.settings.tool_output.compress_over_tokens
    assert "more items" in listed and '"id":0' in listed.replace(" ", "")
    # The log is offloaded: a preview and a pointer the model can follow.
    pointer = re.search(
        r"\[tool_output: (out_[0-9a-f]+), ([\d,]+) tokens, use read_offloaded", logged
    )
    assert pointer is not None and logged.startswith("log line 0")
    assert session.read_offloaded(pointer.group(1)) == huge
    # The stored events are untouched, and a second build gives the same bytes.
    assert [e.model_dump() for e in session.events()] == stored
    again = session.build_context(budget=20_000)
    assert json.dumps(again.messages, sort_keys=True) == json.dumps(window.messages, sort_keys=True)


def test_compression_can_be_switched_off(tmp_path: Path) -> None:
    text = "\n".join(f"row {i}" for i in range(3000))
    with ContextEngine(
        url=f"sqlite:///{tmp_path / 'a.db'}", home=tmp_path, tool_output={"enabled": False}
    ) as engine:
        session = engine.create_session(user_id="u1")
        with session.turn() as turn:
            turn.add_message("user", "dump it")
            call = turn.add_tool_call("dump", {})
            turn.add_tool_result(call.call_id, content=text)
        window = session.build_context(budget=50_000)
        assert tool_messages(window.messages) == [text]
