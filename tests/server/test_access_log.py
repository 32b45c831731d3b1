"""The server's logs, as ``agentctx serve`` configures them, hold route templates,
methods, statuses and durations: never a query string (searches carry the user's
text) nor an id from a path."""

from __future__ import annotations

import time
from pathlib import Path

import httpx

from agentctx import ContextEngine
from server.live import serve
from server.logcapture import captured_logs


def test_no_query_string_nor_path_id_reaches_any_log(tmp_path: Path) -> None:
    email = "alice.liddell@example.com"
    session_id = "sess-7f3a9c-private"
    with (
        ContextEngine(home=tmp_path / "home") as engine,
        serve(engine, log_level="debug") as live,
        captured_logs() as logs,
        httpx.Client(base_url=live.url, timeout=30) as client,
    ):
        client.headers["Authorization"] = f"Bearer {live.key('u1')}"
        created = client.post("/v1/sessions", json={"session_id": session_id})
        assert created.status_code == 201
        events = client.get(f"/v1/sessions/{session_id}/events", params={"turn_id": email[:5]})
        assert events.status_code == 200
        search = client.get("/v1/memories/search", params={"query": f"mail {email}"})
        assert search.status_code == 200
        missing = client.get(f"/v1/sessions/{session_id}-x", params={"user_id": "u1"})
        assert missing.status_code == 404
        unmatched = client.get(f"/v1/nothing/{session_id}", params={"q": email})
        assert unmatched.status_code == 404
        # A request's access line is written once its answer is sent: wait for the last.
        deadline = time.monotonic() + 10
        while len(logs.of("agentctx.server.access")) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
    # httpx's own records are the test client's, not the server's.
    text = logs.text(exclude=("httpx", "httpcore"))
    assert email not in text and "example.com" not in text
    assert session_id not in text
    access = [r.getMessage() for r in logs.of("agentctx.server.access")]
    assert "GET /v1/memories/search 200" in "\n".join(access)
    assert any(m.startswith("GET /v1/sessions/{session_id}/events 200 ") for m in access)
    assert any(m.startswith("GET /v1/sessions/{session_id} 404 ") for m in access)
    assert any(m.startswith("GET unmatched 404 ") for m in access)
    assert not logs.of("uvicorn.access")  # replaced by agentctx's
