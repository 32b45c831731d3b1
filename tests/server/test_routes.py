"""Every route's behaviour over real HTTP, on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator

import httpx
import pytest

from agentctx import ContextEngine
from conftest import make_png
from server.live import Live, serve


@pytest.fixture
def live(engine: ContextEngine) -> Iterator[Live]:
    with serve(engine) as running:
        yield running


@pytest.fixture
def client(live: Live) -> Iterator[httpx.Client]:
    token = live.key("u1")
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=live.url, headers=headers, timeout=60) as c:
        yield c


def _text(kind: str, text: str) -> dict[str, object]:
    return {"type": kind, "parts": [{"kind": "text", "text": text}]}


def test_session_lifecycle(client: httpx.Client) -> None:
    created = client.post("/v1/sessions", json={"agent_id": "helper", "state": {"step": 1}})
    assert created.status_code == 201
    info = created.json()
    assert info["user_id"] == "u1" and info["agent_id"] == "helper"
    assert created.headers["etag"] == '"0"'
    sid = info["session_id"]

    got = client.get(f"/v1/sessions/{sid}")
    assert got.status_code == 200 and got.json()["state"] == {"step": 1}

    listed = client.get("/v1/sessions", params={"search": sid[:8]})
    assert [s["session_id"] for s in listed.json()["items"]] == [sid]
    assert client.get("/v1/sessions", params={"search": "no-such"}).json()["items"] == []

    deleted = client.delete(f"/v1/sessions/{sid}")
    assert deleted.status_code == 200 and deleted.json()["sessions"] == 1
    missing = client.get(f"/v1/sessions/{sid}")
    assert missing.status_code == 404
    assert missing.json()["error"]["code"] == "session_not_found"


def test_session_listing_pages(client: httpx.Client) -> None:
    ids = [client.post("/v1/sessions", json={}).json()["session_id"] for _ in range(5)]
    seen: list[str] = []
    cursor = None
    while True:
        params = {"limit": 2, **({"cursor": cursor} if cursor else {})}
        page = client.get("/v1/sessions", params=params).json()
        seen += [s["session_id"] for s in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert seen == ids


def test_state_compare_and_set_by_etag(client: httpx.Client) -> None:
    sid = client.post("/v1/sessions", json={}).json()["session_id"]
    state = client.get(f"/v1/sessions/{sid}/state")
    etag = state.headers["etag"]
    first = client.patch(
        f"/v1/sessions/{sid}/state", json={"changes": {"a": 1}}, headers={"If-Match": etag}
    )
    assert first.status_code == 200 and first.json() == {"state": {"a": 1}, "state_version": 1}
    assert first.headers["etag"] == '"1"'
    stale = client.patch(
        f"/v1/sessions/{sid}/state", json={"changes": {"a": 2}}, headers={"If-Match": etag}
    )
    assert stale.status_code == 412 and stale.json()["error"]["code"] == "stale_session"
    unconditional = client.patch(f"/v1/sessions/{sid}/state", json={"changes": {"a": 3}})
    assert unconditional.status_code == 428
    assert client.get(f"/v1/sessions/{sid}/state").json()["state"] == {"a": 1}


def test_events_append_list_and_idempotency(client: httpx.Client) -> None:
    sid = client.post("/v1/sessions", json={}).json()["session_id"]
    one = client.post(
        f"/v1/sessions/{sid}/events",
        json={"event": _text("user_input", "mail me at ann@example.com")},
        headers={"Idempotency-Key": "k-1"},
    )
    assert one.status_code == 201
    event = one.json()
    assert event["seq"] == 1 and "[EMAIL]" in event["parts"][0]["text"]
    again = client.post(
        f"/v1/sessions/{sid}/events",
        json={"event": _text("user_input", "mail me at ann@example.com")},
        headers={"Idempotency-Key": "k-1"},
    )
    assert again.json()["event_id"] == event["event_id"]
    batch = {"events": [_text("agent_response", f"answer {i}") for i in range(3)]}
    first = client.post(
        f"/v1/sessions/{sid}/events/batch", json=batch, headers={"Idempotency-Key": "b"}
    )
    retry = client.post(
        f"/v1/sessions/{sid}/events/batch", json=batch, headers={"Idempotency-Key": "b"}
    )
    assert [e["seq"] for e in first.json()] == [2, 3, 4]
    assert [e["event_id"] for e in retry.json()] == [e["event_id"] for e in first.json()]

    page = client.get(f"/v1/sessions/{sid}/events", params={"limit": 3}).json()
    assert [e["seq"] for e in page["items"]] == [1, 2, 3]
    rest = client.get(f"/v1/sessions/{sid}/events", params={"cursor": page["next_cursor"]}).json()
    assert [e["seq"] for e in rest["items"]] == [4] and rest["next_cursor"] is None
    typed = client.get(f"/v1/sessions/{sid}/events", params={"type": "user_input"}).json()
    assert [e["seq"] for e in typed["items"]] == [1]
    ranged = client.get(f"/v1/sessions/{sid}/events", params={"after_seq": 1, "until_seq": 2})
    assert [e["seq"] for e in ranged.json()["items"]] == [2]
    assert client.get(f"/v1/sessions/{sid}/verify").json()["ok"] is True


def test_stale_append_is_refused_and_stores_nothing(client: httpx.Client) -> None:
    sid = client.post("/v1/sessions", json={}).json()["session_id"]
    client.post(f"/v1/sessions/{sid}/events", json={"event": _text("user_input", "a")})
    stale = client.post(
        f"/v1/sessions/{sid}/events",
        json={"event": _text("user_input", "b"), "expected_last_seq": 0},
    )
    assert stale.status_code == 412
    assert len(client.get(f"/v1/sessions/{sid}/events").json()["items"]) == 1


def test_turns_with_tool_call_image_and_context(client: httpx.Client) -> None:
    sid = client.post("/v1/sessions", json={}).json()["session_id"]
    turn = client.post(f"/v1/sessions/{sid}/turns", json={"author": "agent"})
    assert turn.status_code == 201 and turn.json()["status"] == "open"
    tid = turn.json()["turn_id"]
    png = make_png(seed=3)
    drafts = [
        _text("user_input", "find the cheapest flight to Lisbon"),
        {
            "type": "tool_call",
            "call_id": "call_1",
            "payload": {"name": "screenshot"},
            "meta": {"tool_name": "screenshot"},
            "parts": [{"kind": "json", "data": {"region": "full"}}],
        },
        {
            "type": "tool_result",
            "call_id": "call_1",
            "parts": [
                {"kind": "text", "text": "page loaded: TAP 89 EUR"},
                {"kind": "image_data", "data": base64.b64encode(png).decode()},
            ],
        },
    ]
    stored = client.post(
        f"/v1/sessions/{sid}/events/batch", json={"events": drafts, "turn_id": tid}
    )
    assert stored.status_code == 201
    assert {e["turn_id"] for e in stored.json()} == {tid}
    image = next(p for p in stored.json()[2]["parts"] if p["kind"] == "image")
    ended = client.post(f"/v1/sessions/{sid}/turns/{tid}/end", json={"status": "ok"})
    assert ended.json()["status"] == "ok" and ended.json()["event_count"] == 3
    late = client.post(
        f"/v1/sessions/{sid}/events", json={"event": _text("user_input", "x"), "turn_id": tid}
    )
    assert late.status_code == 409 and late.json()["error"]["code"] == "turn_error"

    restored = client.get(f"/v1/images/{image['image_id']}")
    assert restored.headers["content-type"] == "image/png"
    assert hashlib.sha256(restored.content).hexdigest() == image["blob_id"]
    assert client.get(f"/v1/sessions/{sid}/images/{image['image_id']}").content == png
    assert client.get(f"/v1/blobs/{image['blob_id']}").content == png
    frames = client.get(f"/v1/sessions/{sid}/images").json()
    assert [f["image_id"] for f in frames] == [image["image_id"]]

    window = client.post(f"/v1/sessions/{sid}/context", json={"query": "Lisbon", "budget": 3000})
    body = window.json()
    assert window.status_code == 200 and body["tokens"] <= 3000
    assert body["report"]["tokens"] == body["tokens"]
    roles = [m["role"] for m in body["messages"]]
    assert "tool" in roles and roles.index("assistant") < roles.index("tool")
    anthropic = client.post(
        f"/v1/sessions/{sid}/context",
        json={"query": "Lisbon", "budget": 3000, "format": "anthropic"},
    ).json()
    assert all(m["role"] in ("user", "assistant") for m in anthropic["messages"])
    blocks = [b["type"] for m in anthropic["messages"] for b in m["content"]]
    assert blocks.count("tool_use") == 1 and blocks.count("tool_result") == 1
    turns = client.get(f"/v1/sessions/{sid}/turns").json()
    assert [t["turn_id"] for t in turns] == [tid]
    for path in ("summaries", "topics", "folds"):
        assert client.get(f"/v1/sessions/{sid}/{path}").status_code == 200


def test_memory_routes(client: httpx.Client) -> None:
    added = client.post(
        "/v1/memories", json={"content": "Ann prefers window seats", "kind": "preference"}
    )
    assert added.status_code == 201
    memory = added.json()
    mid = memory["memory_id"]
    hits = client.get("/v1/memories/search", params={"query": "window seats"}).json()
    assert hits and hits[0]["memory"]["memory_id"] == mid
    stale = client.patch(
        f"/v1/memories/{mid}",
        json={"content": "Ann prefers aisle seats"},
        headers={"If-Match": '"99"'},
    )
    assert stale.status_code == 412 and stale.json()["error"]["code"] == "stale_memory"
    updated = client.patch(
        f"/v1/memories/{mid}",
        json={"content": "Ann prefers aisle seats"},
        headers={"If-Match": f'"{memory["version"]}"'},
    )
    assert updated.status_code == 200 and updated.json()["version"] == memory["version"] + 1
    listed = client.get("/v1/memories").json()
    assert [m["memory_id"] for m in listed["items"]] == [mid]
    history = client.get(f"/v1/memories/{mid}/history").json()
    assert [h["action"] for h in history] == ["create", "update"]
    assert client.delete(f"/v1/memories/{mid}").json()["status"] == "deleted"
    assert client.get("/v1/memories/search", params={"query": "aisle"}).json() == []
    # Deleted, it is gone from the API (its history stays).
    for gone in (
        client.get(f"/v1/memories/{mid}"),
        client.patch(f"/v1/memories/{mid}", json={"content": "back"}),
        client.delete(f"/v1/memories/{mid}"),
    ):
        assert gone.status_code == 404 and gone.json()["error"]["code"] == "memory_not_found"
    assert client.get(f"/v1/memories/{mid}/history").json()[-1]["action"] == "delete"
    assert client.put("/v1/memory-settings", json={"declarative_opt_out": True}).json() == {
        "declarative_opt_out": True
    }
    refused = client.post("/v1/memories", json={"content": "Ann lives in Porto"})
    assert refused.status_code == 409 and refused.json()["error"]["code"] == "opted_out"


def test_admin_routes_need_the_admin_scope(live: Live, client: httpx.Client) -> None:
    sid = client.post("/v1/sessions", json={}).json()["session_id"]
    client.post(f"/v1/sessions/{sid}/events", json={"event": _text("user_input", "hello")})
    assert client.post("/v1/admin/sweep").status_code == 403
    admin = {"Authorization": f"Bearer {live.key(scopes=('admin',))}"}
    with httpx.Client(base_url=live.url, headers=admin) as root:
        assert root.get(f"/v1/admin/sessions/{sid}/verify", params={"user_id": "u1"}).json()["ok"]
        assert root.post("/v1/admin/sweep").status_code == 200
        issued = root.post("/v1/admin/keys", json={"users": ["u9"]}).json()
        assert issued["token"].startswith("actx_")
        assert issued["key"]["key_id"] in {k["key_id"] for k in root.get("/v1/admin/keys").json()}
        other = {"Authorization": f"Bearer {issued['token']}"}
        assert httpx.get(f"{live.url}/v1/sessions", headers=other).status_code == 200
        assert root.delete(f"/v1/admin/keys/{issued['key']['key_id']}").status_code == 200
        assert httpx.get(f"{live.url}/v1/sessions", headers=other).status_code == 401
        report = root.delete("/v1/admin/users/u1").json()
        assert report["sessions"] == 1 and report["events"] >= 1
    assert client.get(f"/v1/sessions/{sid}").status_code == 404


def test_health_ready_and_metrics(live: Live, client: httpx.Client) -> None:
    assert httpx.get(f"{live.url}/healthz").json() == {"status": "ok", "detail": None}
    assert httpx.get(f"{live.url}/readyz").json()["status"] == "ok"
    client.get("/v1/sessions")
    metrics = httpx.get(f"{live.url}/metrics").text
    assert 'agentctx_http_requests_total{method="GET",route="/v1/sessions",status="200"}' in metrics
    spec = httpx.get(f"{live.url}/openapi.json").json()
    assert spec["openapi"].startswith("3.") and "/v1/sessions/{session_id}/context" in spec["paths"]


def test_offloaded_tool_output_reads_back_in_pages(live: Live, client: httpx.Client) -> None:
    session = live.engine.create_session("u1", "agent")
    original = "\n".join(f"row {i}: " + "value " * 20 for i in range(3000))
    with session.turn() as turn:
        call = turn.add_tool_call("query_db", {"sql": "select *"})
        result = turn.add_tool_result(call.call_id, content=original)
    blob = next(p for p in result.parts if p.kind == "blob")
    whole = client.get(f"/v1/sessions/{session.id}/offloaded/{blob.blob_id}")
    assert whole.status_code == 200 and whole.text == original
    page = client.get(
        f"/v1/sessions/{session.id}/offloaded/{blob.blob_id}", params={"max_tokens": 200}
    )
    rest = client.get(
        f"/v1/sessions/{session.id}/offloaded/{blob.blob_id}",
        params={"offset": len(page.text)},
    )
    assert 0 < len(page.text) < len(original) and page.text + rest.text == original
    other = live.engine.create_session("u1", "agent")
    foreign = client.get(f"/v1/sessions/{other.id}/offloaded/{blob.blob_id}")
    assert foreign.status_code == 404
