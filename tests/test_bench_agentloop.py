"""``agentctx bench agentloop``: the replay, its yardsticks and the naive window, on a small
file in the format of the development data (OpenAI chat messages per conversation)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from typer.testing import CliRunner

from agentctx.bench.agentloop import (
    Expected,
    naive_window,
    prefix_reuse,
    present,
)
from agentctx.bench.agentloop_data import arguments_seen_before, load_conversations
from agentctx.cli.main import app
from agentctx.tokens import EstimateCounter, message_tokens

POLICY = "# Policy\\nYou help customers with their bookings. " + "Be careful. " * 40


def call(call_id: str, name: str, **arguments: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": call_id,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(arguments)},
            }
        ],
    }


def conversation(task: int) -> dict[str, Any]:
    user = f"user_{task}_0042"
    booking = f"BK{task:03d}XY"
    traj = [
        {"role": "system", "content": POLICY},
        {"role": "user", "content": f"Hi, I want to change my booking. My id is {user}."},
        call("call_a", "get_user", user_id=user),
        {"role": "tool", "tool_call_id": "call_a", "content": json.dumps({"bookings": [booking]})},
        {"role": "assistant", "content": f"I see booking {booking}. What should change?"},
        {"role": "user", "content": "Move it to the 20th please. " + "Thanks a lot. " * 30},
        # A reused id, as real logs have.
        call("call_a", "get_booking", booking_id=booking),
        {"role": "tool", "tool_call_id": "call_a", "content": "flight HAT001 on the 18th " * 20},
        call("call_b", "update_booking", booking_id=booking, date="2024-05-20", user_id=user),
        {"role": "tool", "tool_call_id": "call_b", "content": "done"},
        {"role": "assistant", "content": "Your booking now flies on the 20th."},
    ]
    return {"task_id": task, "trial": 0, "reward": 1.0, "info": {}, "traj": traj}


def data_file(tmp_path: Path, count: int = 4) -> Path:
    path = tmp_path / "loops.json"
    path.write_text(json.dumps([conversation(i) for i in range(count)]))
    return path


def test_the_yardsticks() -> None:
    messages = conversation(1)["traj"][1:]
    # update_booking's arguments: the booking id and the user id appeared before, the
    # date as written ("2024-05-20") did not.
    index = next(i for i, m in enumerate(messages) if "update_booking" in json.dumps(m))
    assert sorted(arguments_seen_before(messages, index)) == ["BK001XY", "user_1_0042"]
    # Prefix reuse: the tokens shared from the start; its limit, the tokens seen before.
    previous = [("a", 10), ("b", 20), ("c", 5)]
    assert prefix_reuse(previous, [("a", 10), ("b", 20), ("d", 10)]) == (30 / 40, 30 / 40)
    assert prefix_reuse(previous, [("b", 20), ("a", 10), ("e", 10)]) == (0.0, 30 / 40)
    # A message is present as chat only with its role (a result as a tool message).
    window = [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [{"id": "x", "function": {"name": "f"}}],
        },
        {"role": "tool", "tool_call_id": "x", "content": "the result"},
    ]
    assert present(Expected("tool", "the result", answers="x"), window)
    assert not present(Expected("user", "the result"), window)
    assert present(Expected("assistant", "", calls=(("x", "f"),)), window)


def test_the_naive_window_fits_and_never_splits_a_call_from_its_results() -> None:
    counter = EstimateCounter()
    history = conversation(2)["traj"][1:]
    for budget in (200, 400, 700, 5000):
        window = naive_window(POLICY, history, budget, counter)
        assert window[0] == {"role": "system", "content": POLICY}
        assert 3 + sum(message_tokens(counter, m) for m in window) <= budget or len(window) == 1
        calls: set[str] = set()
        for message in window[1:]:
            if message["role"] == "tool":
                assert message["tool_call_id"] in calls
            calls |= {c["id"] for c in message.get("tool_calls") or ()}
        assert window[1:] == history[len(history) - len(window) + 1 :]  # the newest, whole


def test_cli_replays_and_judges(tmp_path: Path) -> None:
    data = data_file(tmp_path)
    assert [c.half for c in load_conversations(data)] == ["even", "odd", "even", "odd"]
    out, markdown = tmp_path / "loop.json", tmp_path / "loop.md"
    result = CliRunner().invoke(
        app,
        [
            "bench", "agentloop", "--data", str(data), "--budget", "600,4000",
            "--embedder", "hashing", "--out", str(out), "--markdown", str(markdown),
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads(out.read_text())
    assert report["conversations"] == 4 and report["sessions"] == 4
    assert report["model_calls"] == 4 * 5  # every assistant message
    cells = {(c["system"], c["budget"]): c for c in report["cells"]}
    assert set(cells) == {
        (s, b)
        for s in ("default", "full", "compressed", "adaptive", "semantic", "naive")
        for b in (600, 4000)
    }
    for cell in cells.values():
        assert cell["over_budget"] == 0
        for name in ("argument_recall", "recent_fidelity", "prefix_reuse", "reuse_limit"):
            assert 0.0 <= cell[name] <= 1.0
        assert cell["prefix_reuse"] <= cell["reuse_limit"] + 1e-9
    # A conversation this short fits a 4k window whole: every argument is there.
    assert cells["default", 4000]["argument_recall"] == 1.0
    assert cells["default", 4000]["recent_fidelity"] == 1.0
    assert "By half of the data" in markdown.read_text()
    # The oracle's ceiling for each rule, at each budget: never below what the windows did
    # under the same rule (the naive window keeps its whole prompt and slides: low_water).
    ceilings = {(c["budget"], c["rule"]): c["reuse"] for c in report["ceilings"]}
    assert set(ceilings) == {
        (b, r) for b in (600, 4000) for r in ("share_kept", "low_water", "compacted_past")
    }
    for budget in (600, 4000):
        assert ceilings[budget, "low_water"] >= cells["naive", budget]["prefix_reuse"] - 1e-9
    assert "Prefix reuse an oracle reaches" in markdown.read_text()
    grouped = CliRunner().invoke(
        app,
        [
            "bench", "agentloop", "--data", str(data), "--group", "2", "--budget", "4000",
            "--strategy", "default", "--embedder", "hashing", "--out", str(out),
        ],
    )  # fmt: skip
    assert grouped.exit_code == 0, grouped.output
    report = json.loads(out.read_text())
    assert report["sessions"] == 2
    assert {c["system"] for c in report["cells"]} == {"default", "naive"}
    bad = CliRunner().invoke(app, ["bench", "agentloop", "--data", str(data), "--strategy", "x"])
    assert bad.exit_code != 0
