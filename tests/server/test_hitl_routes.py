"""Error recovery over REST: failures recorded through the API mark the session as
needing a human; the repro package holds the failing turn, its window and the config."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentctx import ContextEngine
from server.live import serve


@pytest.fixture
def client(tmp_path: Path) -> Iterator[httpx.Client]:
    with (
        ContextEngine(home=tmp_path / "home", embeddings={"provider": "hashing"}) as engine,
        serve(engine) as live,
        httpx.Client(
            base_url=live.url,
            headers={"Authorization": f"Bearer {live.key('u1')}"},
            timeout=60,
        ) as c,
    ):
        yield c


def _call(call_id: str) -> dict[str, object]:
    return {
        "type": "tool_call",
        "call_id": call_id,
        "payload": {"name": "click"},
        "meta": {"tool_name": "click"},
        "parts": [{"kind": "json", "data": {"selector": "#buy"}}],
    }


def _failure(call_id: str) -> dict[str, object]:
    return {
        "type": "tool_result",
        "call_id": call_id,
        "payload": {"is_error": True},
        "meta": {"status": "error"},
        "parts": [{"kind": "text", "text": "element not found"}],
    }


def test_repeated_tool_failures_need_a_human_and_repro_has_the_turn(client: httpx.Client) -> None:
    sid = client.post("/v1/sessions", json={}).json()["session_id"]
    assert client.get(f"/v1/sessions/{sid}/hitl").json()["status"] == "none"
    tid = client.post(f"/v1/sessions/{sid}/turns", json={}).json()["turn_id"]
    ask = {
        "type": "user_input",
        "parts": [{"kind": "text", "text": "buy it, bill ann@example.com"}],
    }
    events = [ask]
    for i in range(3):
        events += [_call(f"c{i}"), _failure(f"c{i}")]
    client.post(f"/v1/sessions/{sid}/events/batch", json={"events": events, "turn_id": tid})
    window = client.post(
        f"/v1/sessions/{sid}/context",
        json={
            "query": "why does buying fail for ann@example.com",
            "budget": 2000,
            "turn_id": tid,
            "strategy": "semantic",  # its pinned instruction quotes the raw query
        },
    )
    assert window.status_code == 200
    client.post(f"/v1/sessions/{sid}/turns/{tid}/end", json={"status": "error"})

    waiting = client.get("/v1/hitl").json()
    assert [f["session_id"] for f in waiting] == [sid]
    assert waiting[0]["trigger"] == "tool_failures" or "tool" in waiting[0]["trigger"]
    repro = client.get(f"/v1/sessions/{sid}/repro").json()
    assert repro["turn_id"] == tid
    assert [e["type"] for e in repro["events"]][:3] == ["user_input", "tool_call", "tool_result"]
    assert "ann@example.com" not in str(repro) and "[EMAIL]" in str(repro["events"])
    assert repro["window"]["query"] == "why does buying fail for [EMAIL]"
    # The window as sent, but stored redacted: the pinned instruction quotes the query.
    sent = window.json()["messages"]
    assert repro["window"]["messages"][:-1] == sent[:-1]
    assert "[EMAIL]" in repro["window"]["messages"][-1]["content"]
    assert "ann@example.com" in sent[-1]["content"]
    assert "agent" in str(repro["config"]) or repro["config"]

    resolved = client.post(f"/v1/sessions/{sid}/hitl/resolve", json={"note": "selector fixed"})
    assert resolved.json()["status"] == "resolved"
    assert client.get("/v1/hitl").json() == []
    types = [e["type"] for e in client.get(f"/v1/sessions/{sid}/events").json()["items"]]
    assert types.count("hitl") == 2  # needed, then resolved
