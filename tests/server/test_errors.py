"""Error responses: JSON with a stable code and the field named; 413 before a body is
stored; never a stack trace; nothing already stored is lost."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agentctx import ContextEngine
from agentctx.server.config import ServerConfig
from server.live import Live, serve

LIMIT = 64 * 1024


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    with (
        ContextEngine(home=tmp_path / "home") as engine,
        serve(engine, ServerConfig(max_body_bytes=LIMIT)) as running,
    ):
        yield running


@pytest.fixture
def client(live: Live) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {live.key('u1')}"}
    with httpx.Client(base_url=live.url, headers=headers, timeout=60) as c:
        yield c


def _event(text: str) -> dict[str, object]:
    return {"event": {"type": "user_input", "parts": [{"kind": "text", "text": text}]}}


def test_oversized_bodies_get_413_and_store_nothing(client: httpx.Client) -> None:
    sid = client.post("/v1/sessions", json={}).json()["session_id"]
    client.post(f"/v1/sessions/{sid}/events", json=_event("kept"))
    declared = client.post(f"/v1/sessions/{sid}/events", json=_event("x" * (LIMIT + 10)))
    assert declared.status_code == 413
    assert declared.json()["error"]["code"] == "body_too_large"

    def chunks() -> Iterator[bytes]:  # no Content-Length: counted while read
        yield b'{"event": {"type": "user_input", "parts": [{"kind": "text", "text": "'
        for _ in range(LIMIT // 1024 + 2):
            yield b"y" * 1024
        yield b'"}]}}'

    streamed = client.post(
        f"/v1/sessions/{sid}/events",
        content=chunks(),
        headers={"Content-Type": "application/json"},
    )
    assert streamed.status_code == 413
    events = client.get(f"/v1/sessions/{sid}/events").json()["items"]
    assert [e["parts"][0]["text"] for e in events] == ["kept"]


def test_malformed_bodies_get_422_naming_the_field(client: httpx.Client) -> None:
    sid = client.post("/v1/sessions", json={}).json()["session_id"]
    bad_type = client.post(
        f"/v1/sessions/{sid}/events",
        json={"event": {"type": "shout", "parts": []}},
    )
    assert bad_type.status_code == 422
    error = bad_type.json()["error"]
    assert error["code"] == "validation_error" and error["field"] == "event.type"
    not_json = client.post(
        f"/v1/sessions/{sid}/events",
        content=b"{not json",
        headers={"Content-Type": "application/json"},
    )
    assert not_json.status_code == 422 and not_json.json()["error"]["code"] == "validation_error"
    budget = client.post(f"/v1/sessions/{sid}/context", json={"budget": -5})
    assert budget.status_code == 422 and budget.json()["error"]["field"] == "budget"
    nul = client.post(f"/v1/sessions/{sid}/events", json=_event("a\u0000b"))
    assert nul.status_code == 422 and nul.json()["error"]["code"] in (
        "invalid_event",
        "invalid_input",
    )
    orphan = client.post(
        f"/v1/sessions/{sid}/events",
        json={"event": {"type": "tool_result", "call_id": "nope", "parts": []}},
    )
    assert orphan.status_code == 422
    assert client.get(f"/v1/sessions/{sid}").json()["last_seq"] == 0


def test_unexpected_failures_are_500_without_a_trace(live: Live, client: httpx.Client) -> None:
    sid = client.post("/v1/sessions", json={}).json()["session_id"]
    live.engine.db.dispose()
    engine_url = live.engine.db.url
    # A real failure: the database file is replaced by garbage under the running server.
    path = Path(engine_url.removeprefix("sqlite:///"))
    path.write_bytes(b"this is not a database" * 100)
    for suffix in ("-wal", "-shm"):
        Path(str(path) + suffix).unlink(missing_ok=True)
    failed = client.get(f"/v1/sessions/{sid}")
    assert failed.status_code in (500, 503)
    body = failed.json()
    assert set(body) == {"error"} and body["error"]["code"] in ("internal_error", "storage_error")
    assert "Traceback" not in failed.text and "sqlite" not in failed.text.lower()
    assert httpx.get(f"{live.url}/readyz").status_code == 503
