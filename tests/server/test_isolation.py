"""Per-user authorization: another user's ids behave exactly like missing ones.

The walk covers every route of the OpenAPI spec, so a route added later without a
case here fails the test until it is covered.
"""

from __future__ import annotations

import base64
from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from agentctx import ContextEngine
from conftest import make_png
from server.live import Live, serve

# A request body fit for each (method, path template): valid, so only ownership decides.
BODIES: dict[tuple[str, str], Any] = {
    ("post", "/v1/sessions/{session_id}/events"): {
        "event": {"type": "user_input", "parts": [{"kind": "text", "text": "hi"}]}
    },
    ("post", "/v1/sessions/{session_id}/events/batch"): {
        "events": [{"type": "user_input", "parts": [{"kind": "text", "text": "hi"}]}]
    },
    ("post", "/v1/sessions/{session_id}/turns"): {},
    ("post", "/v1/sessions/{session_id}/turns/{turn_id}/end"): {"status": "ok"},
    ("post", "/v1/sessions/{session_id}/context"): {"query": "hi", "budget": 500},
    ("patch", "/v1/sessions/{session_id}/state"): {"changes": {"x": 1}},
    ("patch", "/v1/memories/{memory_id}"): {"content": "changed"},
    ("post", "/v1/sessions/{session_id}/hitl/resolve"): {"note": "done"},
    ("post", "/v1/sessions/{session_id}/research"): {"question": "what is new"},
}
HEADERS: dict[tuple[str, str], dict[str, str]] = {
    ("patch", "/v1/sessions/{session_id}/state"): {"If-Match": '"0"'},
}
# Routes without ids of another user's data: they act on the caller's own user.
OWN_USER_ROUTES = {
    ("get", "/v1/sessions"),
    ("post", "/v1/sessions"),
    ("get", "/v1/memories"),
    ("post", "/v1/memories"),
    ("get", "/v1/memories/search"),
    ("get", "/v1/memory-settings"),
    ("put", "/v1/memory-settings"),
    ("get", "/v1/hitl"),
}
PUBLIC = {("get", "/healthz"), ("get", "/readyz"), ("get", "/metrics")}
NO_USER_DATA = {("get", "/v1/me")}  # the caller's own identity


@pytest.fixture
def victim(engine: ContextEngine) -> dict[str, str]:
    """u1's data: a session with a turn, an image and offloaded output; a memory."""
    session = engine.create_session("u1", "agent")
    with session.turn() as turn:
        turn.add_message("user", "secret plans for Tuesday")
        call = turn.add_tool_call("screenshot", {})
        result = turn.add_tool_result(call.call_id, content="x" * 200_000, images=[make_png()])
    open_turn = session.begin_turn()
    image = result.images[0]
    offloaded = next(p for p in result.parts if p.kind == "blob")
    memory = engine.memory.add("u1", "u1 likes green tea")
    return {
        "session_id": session.id,
        "turn_id": open_turn.turn_id,
        "image_id": image.image_id,
        "blob_id": image.blob_id,
        "offloaded_id": offloaded.blob_id,
        "memory_id": memory.memory_id,
        "key_id": "0000000000000000",
        "user_id": "u1",
        "sub_session_id": session.id,
    }


@pytest.fixture
def live(engine: ContextEngine) -> Iterator[Live]:
    with serve(engine) as running:
        yield running


def _routes(live: Live) -> list[tuple[str, str]]:
    # The schema is built on its first request (half a second here, more on a loaded
    # machine): as long a timeout as the routes' own calls.
    spec = httpx.get(f"{live.url}/openapi.json", timeout=60).json()
    return [(m, p) for p, ops in spec["paths"].items() for m in ops]


def _call(
    client: httpx.Client, method: str, path: str, ids: dict[str, str], **params: str
) -> httpx.Response:
    url = path.format(**ids)
    return client.request(
        method,
        url,
        params=params or None,
        json=BODIES.get((method, path)),
        headers=HEADERS.get((method, path)),
    )


def test_every_route_hides_another_users_data(live: Live, victim: dict[str, str]) -> None:
    intruder = {"Authorization": f"Bearer {live.key('u2')}"}
    owner = {"Authorization": f"Bearer {live.key('u1')}"}
    with (
        httpx.Client(base_url=live.url, headers=intruder, timeout=60) as bad,
        httpx.Client(base_url=live.url, headers=owner, timeout=60) as good,
    ):
        for method, path in _routes(live):
            if (method, path) in PUBLIC or (method, path) in NO_USER_DATA:
                continue
            if path.startswith("/v1/admin"):
                assert _call(bad, method, path, victim, user_id="u1").status_code == 403, path
                continue
            if (method, path) in OWN_USER_ROUTES:
                # Naming the other user is "no such user"; the caller's own view is empty.
                named = _call(bad, method, path, victim, user_id="u1")
                assert named.status_code == 404, (method, path, named.text)
                assert named.json()["error"]["code"] == "user_not_found"
                continue
            foreign = _call(bad, method, path, victim)
            assert foreign.status_code == 404, (method, path, foreign.status_code, foreign.text)
            named = _call(bad, method, path, victim, user_id="u1")
            assert named.status_code == 404, (method, path, named.text)
            missing_ids = {k: v[:-4] + "0000" for k, v in victim.items()}
            missing = _call(bad, method, path, missing_ids)
            assert missing.status_code == 404, (method, path)
            # "Exactly like a missing one": the same code, nothing that tells them apart.
            assert foreign.json()["error"]["code"] == missing.json()["error"]["code"], path
        # The owner still reaches everything the intruder tried, unchanged.
        sid = victim["session_id"]
        assert good.get(f"/v1/sessions/{sid}").json()["state"] == {}
        assert good.get(f"/v1/images/{victim['image_id']}").content == make_png()
        events = good.get(f"/v1/sessions/{sid}/events").json()["items"]
        assert [e["type"] for e in events] == ["user_input", "tool_call", "tool_result"]
        assert good.get(f"/v1/memories/{victim['memory_id']}").json()["status"] == "active"
        assert bad.get("/v1/sessions").json()["items"] == []
        assert bad.get("/v1/memories/search", params={"query": "green tea"}).json() == []


def test_tenants_are_apart_even_with_equal_user_ids(live: Live) -> None:
    acme = {"Authorization": f"Bearer {live.key('u1', tenant='acme')}"}
    plain = {"Authorization": f"Bearer {live.key('u1')}"}
    with (
        httpx.Client(base_url=live.url, headers=acme, timeout=60) as a,
        httpx.Client(base_url=live.url, headers=plain, timeout=60) as b,
    ):
        created = a.post("/v1/sessions", json={"session_id": "shared-name"}).json()
        assert created["user_id"] == "u1"
        assert b.get("/v1/sessions/shared-name").status_code == 404
        assert b.get("/v1/sessions").json()["items"] == []
        mine = b.post("/v1/sessions", json={"session_id": "shared-name"})
        assert mine.status_code == 201
        a.post(
            "/v1/sessions/shared-name/events",
            json={"event": {"type": "user_input", "parts": [{"kind": "text", "text": "acme"}]}},
        )
        assert b.get("/v1/sessions/shared-name/events").json()["items"] == []
    assert {s.user_id for s in live.engine.list_all_sessions().items} == {"acme/u1", "u1"}


def test_unauthenticated_and_denied_accesses_are_audited(
    live: Live, victim: dict[str, str]
) -> None:
    sid = victim["session_id"]
    assert httpx.get(f"{live.url}/v1/sessions/{sid}").status_code == 401
    intruder = {"Authorization": f"Bearer {live.key('u2')}"}
    assert httpx.get(f"{live.url}/v1/sessions/{sid}", headers=intruder).status_code == 404
    owner = {"Authorization": f"Bearer {live.key('u1')}"}
    assert httpx.get(f"{live.url}/v1/sessions/{sid}", headers=owner).status_code == 200
    image = base64.b64encode(make_png()).decode()
    assert image  # a body the audit must never hold
    rows = _access_rows(live.engine, sid)
    statuses = [(r["meta"]["http_status"], r["user_id"], r["status"]) for r in rows]
    assert statuses == [(401, None, "denied"), (404, "u2", "denied"), (200, "u1", "ok")]
    assert rows[1]["error_code"] == "session_not_found"
    assert all(r["meta"]["route"] == "/v1/sessions/{session_id}" for r in rows)


def _access_rows(engine: ContextEngine, session_id: str) -> list[dict[str, Any]]:
    from sqlalchemy import select

    from agentctx.storage.schema import audit

    query = (
        select(audit)
        .where(audit.c.action == "http_access", audit.c.session_id == session_id)
        .order_by(audit.c.audit_id)
    )
    with engine.db.read() as conn:
        return [dict(r) for r in conn.execute(query).mappings()]
