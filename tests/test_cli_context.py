"""``agentctx sessions context``: the window a session gives a model, for people and as
JSON, built by the same code as ``session.build_context``, on real SQLite files."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentctx import ContextEngine
from agentctx.cli.sessions import StrategyChoice
from agentctx.context import STRATEGIES
from conftest import make_png
from server.live import serve
from test_cli import cli, sqlite_url

CODE_LINE = "The locker code at the gym is 4512, write it down somewhere safe."


def recorded(tmp_path: Path) -> tuple[str, Path, str]:
    """A session whose fact about the locker sits far behind a screenshot-taking turn."""
    url, home = sqlite_url(tmp_path), tmp_path / "home"
    with ContextEngine(url=url, home=home) as engine:
        session = engine.create_session(user_id="alice", agent_id="helper")
        session.add_message("user", CODE_LINE)
        for index in range(30):
            session.add_message("user", f"filler question {index} about the weather today")
            session.add_message("assistant", f"filler answer {index}: mild and dry")
        with session.turn() as turn:
            turn.add_message("user", "take a screenshot")
            turn.add_tool_call("screenshot", {"region": "full"}, call_id="call_s")
            turn.add_tool_result("call_s", content="ok", images=[make_png(seed=3)])
            turn.add_message("assistant", "done")
        return url, home, session.id


def without_timings(body: dict[str, Any]) -> dict[str, Any]:
    """A window body minus what differs between two builds of the same window."""
    report = dict(body["report"])
    report.pop("timings_ms")
    return {**body, "report": report}


def api_body(url: str, home: Path, sid: str, fmt: str, **options: Any) -> dict[str, Any]:
    """The window of ``session.build_context(**options)`` in ``fmt``, as JSON data."""
    with ContextEngine(url=url, home=home) as engine:
        window = engine.get_session(sid, user_id="alice").build_context(**options)
        return without_timings(json.loads(json.dumps(window.body(fmt))))  # type: ignore[arg-type]


def http_body(url: str, home: Path, sid: str, request: dict[str, Any]) -> dict[str, Any]:
    """What ``POST /v1/sessions/{sid}/context`` answers, from a real HTTP server."""
    with ContextEngine(url=url, home=home) as engine, serve(engine) as live:
        headers = {"Authorization": f"Bearer {live.key('alice')}"}
        answer = httpx.post(
            f"{live.url}/v1/sessions/{sid}/context", json=request, headers=headers, timeout=60
        )
    assert answer.status_code == 200, answer.text
    return without_timings(answer.json())


def test_text_shows_every_message_and_the_report(tmp_path: Path) -> None:
    url, home, sid = recorded(tmp_path)
    code, out, err = cli(
        url, home, "sessions", "context", sid, "-u", "alice", "-q", "locker code", "-b", "700"
    )
    assert code == 0, err
    body = api_body(url, home, sid, "openai", query="locker code", budget=700)
    header = re.search(r"window\s+([\d,]+) of 700 tokens, (\d+) messages", out)
    assert header is not None
    assert int(header.group(1).replace(",", "")) == body["tokens"] <= 700
    assert int(header.group(2)) == len(body["messages"])
    assert "query     locker code" in out
    assert CODE_LINE in out  # retrieved from far behind the recent window
    assert "-> screenshot(" in out  # the tool call, with its id
    # The screenshot is summarized, not printed as base64.
    assert re.search(r"\[image: image/png, [\d,]+ characters of base64", out)
    assert "data:image" not in out
    report = body["report"]
    for section in report["sections"]:
        row = re.search(rf"^{section['name']}\s+([\d,]+)\s+([\d,]+)\s", out, re.MULTILINE)
        assert row is not None, section["name"]
        assert int(row.group(2).replace(",", "")) == section["tokens"]
    assert f"included  {len(report['included_event_ids'])} events" in out
    assert report["dropped"], "a 700-token window leaves the filler out"
    assert f"left out  {len(report['dropped'])} events" in out


@pytest.mark.parametrize("fmt", ["openai", "anthropic"])
def test_json_is_the_rest_body(tmp_path: Path, fmt: str) -> None:
    url, home, sid = recorded(tmp_path)
    code, out, err = cli(
        url, home, "sessions", "context", sid, "-u", "alice", "-q", "locker", "-b", "900",
        "-s", "semantic", "-f", fmt,
    )  # fmt: skip
    assert code == 0, err
    printed = without_timings(json.loads(out))
    request = {"query": "locker", "budget": 900, "strategy": "semantic", "format": fmt}
    served = http_body(url, home, sid, request)
    assert printed == served
    assert printed["report"]["strategy"] == "semantic"
    assert printed["tokens"] <= 900
    if fmt == "anthropic":
        assert isinstance(printed["system"], list)  # the leading system blocks apart
        assert {m["role"] for m in printed["messages"]} <= {"user", "assistant"}
    else:
        assert "system" not in printed


def test_building_a_window_appends_nothing(tmp_path: Path) -> None:
    url, home, sid = recorded(tmp_path)
    with ContextEngine(url=url, home=home) as engine:
        before = engine.get_session(sid, user_id="alice").events()
    code, _, _ = cli(url, home, "sessions", "context", sid, "-u", "alice", "-b", "300")
    assert code == 0
    with ContextEngine(url=url, home=home) as engine:
        after = engine.get_session(sid, user_id="alice").events()
        assert engine.verify(sid, user_id="alice").ok
    assert [e.event_id for e in after] == [e.event_id for e in before]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["sessions", "context", "nope", "-u", "alice"], "not found"),
        (["sessions", "context", "{sid}", "-u", "bob"], "not found"),
        (["sessions", "context", "{sid}"], "--user"),
        (["sessions", "context", "{sid}", "-u", "alice", "-b", "0"], "--budget"),
        (["sessions", "context", "{sid}", "-u", "alice", "-s", "clever"], "--strategy"),
        (["sessions", "context", "{sid}", "-u", "alice", "-f", "yaml"], "--format"),
    ],
)
def test_bad_input_exits_2_and_says_why(tmp_path: Path, args: list[str], message: str) -> None:
    url, home, sid = recorded(tmp_path)
    code, out, err = cli(url, home, *(a.format(sid=sid) for a in args))
    assert code == 2
    assert message in err.lower() or message in err
    assert out == ""


def test_the_strategy_choices_are_the_engines() -> None:
    assert tuple(choice.value for choice in StrategyChoice) == STRATEGIES
