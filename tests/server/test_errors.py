"""Error responses: JSON with a stable code and the field named; 413 before a body is
stored; never a stack trace; nothing already stored is lost."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from fastapi import Depends, Request

from agentctx import ContextEngine
from agentctx.server.config import ServerConfig
from server.live import Live, serve
from server.logcapture import captured_logs

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


def test_an_unexpected_error_is_one_safe_log_line_and_the_connection_survives(
    live: Live,
) -> None:
    secret = "alice@example.com-in-a-failing-request"

    def broken() -> str:  # a dependency that fails the way a bug would
        raise RuntimeError(f"cannot handle {secret}")

    @live.app.get("/test/broken/{thing}")
    def broken_route(thing: str, value: str = Depends(broken)) -> dict[str, str]:
        return {"thing": thing, "value": value}

    @live.app.get("/test/port")
    def port(request: Request) -> dict[str, int]:
        assert request.client is not None
        return {"port": request.client.port}

    with captured_logs() as logs, httpx.Client(base_url=live.url, timeout=30) as client:
        before = client.get("/test/port").json()["port"]
        failed = client.get(f"/test/broken/{secret}", params={"q": secret})
        after = client.get("/test/port")
    assert failed.status_code == 500
    assert failed.json()["error"] == {"code": "internal_error", "message": "internal server error"}
    assert failed.headers.get("connection") != "close"
    # The same keep-alive connection answered the next request.
    assert after.status_code == 200 and after.json()["port"] == before
    errors = [r for r in logs.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1, logs.text()
    line = logs.text()
    assert "RuntimeError" in line and "/test/broken/{thing}" in line
    assert secret not in line and "cannot handle" not in line
    assert errors[0].exc_info is None  # no traceback with the exception's message


def test_overlong_and_control_character_ids_are_422_and_still_audited(
    engine: ContextEngine,
) -> None:
    # On PostgreSQL a 200-character session id used to overflow the audit's id column
    # (a 500 for every such request) and a NUL byte in a parameter broke the query.
    with serve(engine) as running, httpx.Client(base_url=running.url, timeout=30) as client:
        client.headers["Authorization"] = f"Bearer {running.key('u1')}"
        long_id = "s" * 200
        for url, params in (
            (f"/v1/sessions/{long_id}", None),
            (f"/v1/sessions/{long_id}/events", None),
            ("/v1/sessions/ok/events", {"turn_id": "t\x00"}),
            ("/v1/sessions", {"agent_id": "a\x00b"}),
            ("/v1/sessions", {"user_id": "u" * 200}),
            ("/v1/memories/search", {"query": "tea\x00"}),
            ("/v1/memories", {"agent_id": "x" * 129}),
        ):
            answer = client.get(url, params=params)
            assert answer.status_code == 422, (url, params, answer.text)
            assert answer.json()["error"]["code"] == "validation_error"
        unknown = client.get(f"/v1/sessions/{'s' * 128}")
        assert unknown.status_code == 404
    from sqlalchemy import select

    from agentctx.storage.schema import audit

    with engine.db.read() as conn:
        rows = conn.execute(select(audit).where(audit.c.action == "http_access")).mappings()
        statuses = [r["meta"]["http_status"] for r in rows]
    assert statuses.count(422) == 7 and statuses.count(404) == 1


def test_an_expected_seq_is_bounded_where_a_double_is_exact(client: httpx.Client) -> None:
    """The schema's bound on ``expected_last_seq`` reads the same as a double, so a
    client (or a fuzzer) checking against it never sends a value it calls valid and the
    server refuses: 2**63 - 1 read as a double is 2**63, and let 2**63 + 191 through."""
    schema = client.get("/openapi.json").json()["components"]["schemas"]
    for name in ("EventAppend", "EventBatch"):
        bound = json.dumps(schema[name]["properties"]["expected_last_seq"])
        # (Stated as a double: 9007199254740991.0, exact.)
        assert '"maximum": 9007199254740991' in bound, (name, bound)
    sid = client.post("/v1/sessions", json={}).json()["session_id"]
    event = {"type": "user_input", "parts": [{"kind": "text", "text": "x"}]}
    for seq, status in ((2**53 - 1, 412), (2**53, 422), (2**63 + 191, 422)):
        one = client.post(
            f"/v1/sessions/{sid}/events", json={"event": event, "expected_last_seq": seq}
        )
        batch = client.post(
            f"/v1/sessions/{sid}/events/batch", json={"events": [event], "expected_last_seq": seq}
        )
        assert (one.status_code, batch.status_code) == (status, status), (seq, batch.text)
    assert client.get(f"/v1/sessions/{sid}/events").json()["items"] == []


def test_numbers_beyond_what_storage_holds_are_422(client: httpx.Client) -> None:
    # Each of these used to reach the engine: an OverflowError building the TTL, an
    # integer too wide for a 64-bit column on PostgreSQL.
    assert client.post("/v1/sessions", json={"ttl_seconds": 1.6e16}).status_code == 422
    sid = client.post("/v1/sessions", json={"ttl_seconds": 60}).json()["session_id"]
    huge = 2**70
    for params in ({"after_seq": huge}, {"until_seq": huge}, {"cursor": "9" * 30}):
        answer = client.get(f"/v1/sessions/{sid}/events", params=params)
        assert answer.status_code == 422, (params, answer.text)
    appended = client.post(
        f"/v1/sessions/{sid}/events",
        json={
            "event": {"type": "user_input", "parts": [{"kind": "text", "text": "x"}]},
            "expected_last_seq": huge,
        },
    )
    assert appended.status_code == 422
    stale = client.patch(
        f"/v1/sessions/{sid}/state", json={"changes": {}}, headers={"If-Match": '"9999999999999"'}
    )
    assert stale.status_code == 422
    state = client.patch(
        f"/v1/sessions/{sid}/state",
        json={"changes": {"n": huge, "k\u0000": 1}},
        headers={"If-Match": '"0"'},
    )
    assert state.status_code == 422 and state.json()["error"]["code"] == "validation_error"
