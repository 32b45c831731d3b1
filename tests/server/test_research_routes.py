"""Web research over REST: the report, its sources and pages, scoped to the user."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from search.agent_web import GOOD, QUESTION, local_web, make_engine, tavily_config
from search.servers import tavily_server
from server.live import Live, serve


@pytest.fixture
def live(tmp_path: Path) -> Iterator[Live]:
    with local_web([GOOD, GOOD]) as web, tavily_server(pages=web.corpus) as srv:
        config = tavily_config(srv.url, srv.api_key or "")
        db_url = f"sqlite:///{tmp_path / 'agentctx.db'}"
        with (
            make_engine(db_url, tmp_path / "home", search=config) as engine,
            serve(engine) as running,
        ):
            yield running


def test_research_records_one_result_and_pages_restore(live: Live) -> None:
    headers = {"Authorization": f"Bearer {live.key('u1')}"}
    with httpx.Client(base_url=live.url, headers=headers, timeout=120) as client:
        sid = client.post("/v1/sessions", json={"agent_id": "helper"}).json()["session_id"]
        report = client.post(f"/v1/sessions/{sid}/research", json={"question": QUESTION})
        assert report.status_code == 200
        body = report.json()
        assert body["confidence"] >= 0.8 and body["sources"]
        sub = body["sub_session_id"]
        listed = client.get(f"/v1/sessions/{sid}/research").json()
        assert [s["session_id"] for s in listed] == [sub]
        assert client.get(f"/v1/research/{sub}").json()["answer"] == body["answer"]
        page_id = body["sources"][0]["page_id"]
        page = client.get(f"/v1/sessions/{sub}/offloaded/{page_id}")
        assert page.status_code == 200 and "Skerryvore" in page.text
        parent = client.get(f"/v1/sessions/{sid}/events").json()["items"]
        assert [e["type"] for e in parent] == ["tool_call", "tool_result"]
        assert page.text not in str(parent[1])  # the parent holds the report, not the page
    other = {"Authorization": f"Bearer {live.key('u2')}"}
    assert httpx.get(f"{live.url}/v1/research/{sub}", headers=other).status_code == 404
    denied = httpx.get(f"{live.url}/v1/sessions/{sub}/offloaded/{page_id}", headers=other)
    assert denied.status_code == 404


def test_without_a_provider_research_is_503(tmp_path: Path) -> None:
    db_url = f"sqlite:///{tmp_path / 'agentctx.db'}"
    with make_engine(db_url, tmp_path / "home") as engine, serve(engine) as live:
        headers = {"Authorization": f"Bearer {live.key('u1')}"}
        sid = engine.create_session("u1").id
        answer = httpx.post(
            f"{live.url}/v1/sessions/{sid}/research", json={"question": "x"}, headers=headers
        )
        assert answer.status_code == 503
        assert answer.json()["error"]["code"] == "search_not_configured"
