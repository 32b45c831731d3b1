"""What only the client has: windows equal to the embedded engine's on the same data,
retries that never duplicate a write, the server's own errors, admin calls."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import (
    ContextEngine,
    EventDraft,
    EventType,
    InvalidInput,
    NotFound,
    SessionNotFound,
    StaleSession,
    StorageError,
    TextPart,
)
from agentctx.client import (
    BodyTooLarge,
    Forbidden,
    RemoteEngine,
    RequestInvalid,
    ServerUnavailable,
    Unauthenticated,
    UserNotFound,
)
from agentctx.server.config import ServerConfig
from client.faults import Faults, posts_to
from client.media import noise_png
from server.live import Live, free_port, serve


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as eng:
        yield eng


@pytest.fixture
def live(engine: ContextEngine) -> Iterator[Live]:
    with serve(engine) as running:
        yield running


@pytest.fixture
def faults() -> Iterator[Faults]:
    transport = Faults()
    yield transport
    transport.close()


@pytest.fixture
def remote(live: Live, faults: Faults) -> Iterator[RemoteEngine]:
    with RemoteEngine(live.url, live.key("u1"), transport=faults, backoff=0.01) as client:
        yield client


def test_remote_windows_equal_embedded_windows_on_the_same_data(
    engine: ContextEngine, remote: RemoteEngine
) -> None:
    session = remote.create_session("u1", "travel")
    for n in range(3):
        with session.turn() as turn:
            turn.add_message("user", f"Find flights to city {n}; budget {100 + n} EUR")
            call = turn.add_tool_call("search", {"to": f"C{n}"})
            turn.add_tool_result(call.call_id, f"{n + 2} flights found", images=[noise_png(n)])
            turn.add_message("assistant", f"Option {n}: {90 + n} EUR")
    session.set_task("book the cheapest flight", steps_done=["search"])
    embedded = engine.get_session(session.id, "u1")
    for kwargs in (
        {"query": "cheapest flight", "budget": 4000},
        {"query": None, "budget": 300},
        {"query": "city 1", "budget": 2000, "strategy": "compressed", "system_prompt": "Book."},
        {"query": "city 2", "budget": 3000, "strategy": "semantic"},
    ):
        over_http = session.build_context(**kwargs)  # type: ignore[arg-type]
        in_process = embedded.build_context(**kwargs)  # type: ignore[arg-type]
        assert over_http.messages == in_process.messages
        assert over_http.tokens == in_process.tokens
        assert over_http.to_anthropic() == in_process.to_anthropic()
        report, expected = over_http.report, in_process.report
        assert report.included_event_ids == expected.included_event_ids
        assert report.sections == expected.sections and report.dropped == expected.dropped
    assert any(m["role"] == "tool" for m in over_http.messages)


def test_a_lost_append_response_is_retried_without_duplicating(
    remote: RemoteEngine, faults: Faults
) -> None:
    """Retry safety: the server stored the event, the response was lost, the client
    retried with the same Idempotency-Key and got the stored event back."""
    session = remote.create_session("u1")
    faults.lose(posts_to("/events"))
    event = session.add_message("user", "book it", images=[noise_png(7)])
    assert faults.sent.count(("POST", f"/v1/sessions/{session.id}/events")) == 2
    [stored] = session.events()
    assert stored == event
    assert len(session.turns()) == 1  # the retry did not open a second one-event turn

    # The retry is recognised before the compare-and-set on the log's end is checked.
    faults.lose(posts_to("/events"))
    checked = session.add_message("user", "checked", expected_last_seq=1)
    assert checked.seq == 2
    with pytest.raises(StaleSession):
        session.add_message("user", "late", expected_last_seq=1)

    faults.lose(posts_to("/events/batch"))
    with session.turn() as turn:
        turn.add_message("assistant", "Looking.")  # single events keep one request each
        faults.lose(posts_to("/events"))
        call = turn.add_tool_call("search", {"q": "flights"})
        turn.add_tool_result(call.call_id, "none")
    batch = session.append(
        EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text="a"),)),
        EventDraft(type=EventType.AGENT_RESPONSE, parts=(TextPart(text="b"),)),
    )
    events = session.events()
    assert [e.seq for e in events] == [1, 2, 3, 4, 5, 6, 7]
    assert [e.text for e in events[-2:]] == ["a", "b"] and events[-2:] == batch
    assert session.verify().ok


def test_the_idempotency_key_decides_whether_a_repeat_appends(remote: RemoteEngine) -> None:
    session = remote.create_session("u1")
    path = f"/v1/sessions/{session.id}/events"
    body = {"event": {"type": "user_input", "parts": [{"kind": "text", "text": "hi"}]}}
    user = {"user_id": "u1"}
    first = remote.transport.request(
        "POST", path, params=user, json=body, headers={"Idempotency-Key": "k1"}
    )
    again = remote.transport.request(
        "POST", path, params=user, json=body, headers={"Idempotency-Key": "k1"}
    )
    assert first.json()["event_id"] == again.json()["event_id"]
    assert len(session.events()) == 1
    remote.transport.request("POST", path, params=user, json=body)
    remote.transport.request("POST", path, params=user, json=body)
    assert len(session.events()) == 3  # without a key, each request is a new event


def test_lost_responses_of_session_create_turns_and_reads_are_recovered(
    remote: RemoteEngine, faults: Faults
) -> None:
    faults.lose(posts_to("/v1/sessions"))
    session = remote.create_session("u1", state={"a": 1})
    assert [s.session_id for s in remote.list_sessions("u1").items] == [session.id]

    with session.turn() as turn:
        turn.add_message("user", "hi")
        faults.lose(posts_to("/end"))
    assert turn.status == "ok" and session.turn_info(turn.turn_id).status == "ok"

    faults.lose(lambda r: r.method == "GET", times=2)
    faults.unavailable(posts_to("/context"))
    window = session.build_context("hi", 1000)
    assert window.messages[-1]["content"] == "hi" or any(
        m.get("content") == "hi" for m in window.messages
    )
    assert len(session.events()) == 1


def test_writes_that_could_apply_twice_are_not_retried(
    remote: RemoteEngine, faults: Faults, engine: ContextEngine
) -> None:
    session = remote.create_session("u1")
    faults.lose(lambda r: r.method == "POST" and r.url.path == "/v1/memories")
    with pytest.raises(ServerUnavailable):
        remote.memory.add("u1", "The user prefers trains")
    assert [m.content for m in engine.memory.list("u1")] == ["The user prefers trains"]

    faults.unavailable(lambda r: r.method == "PATCH")
    with pytest.raises(StorageError):
        session.update_state({"a": 1})  # the proxy refused it: nothing changed, no retry
    assert session.refresh().state_version == 0
    assert session.update_state({"a": 1}) == {"a": 1}

    faults.lose(lambda r: r.method == "PATCH")
    with pytest.raises(ServerUnavailable):
        session.update_state({"a": 2})
    with pytest.raises(StaleSession):  # it did apply: the handle's version is behind
        session.update_state({"a": 3})
    assert session.refresh().state == {"a": 2}


def test_503_is_retried_with_backoff_until_the_retries_run_out(live: Live, faults: Faults) -> None:
    key = live.key("u1")
    with RemoteEngine(live.url, key, transport=faults, retries=2, backoff=0.01) as remote:
        session = remote.create_session("u1")
        faults.unavailable(lambda r: r.method == "GET", times=2)
        assert remote.get_session(session.id, "u1").id == session.id
        faults.unavailable(lambda r: r.method == "GET", times=3)
        with pytest.raises(StorageError) as failed:
            remote.get_session(session.id, "u1")
        assert failed.value.status == 503  # type: ignore[attr-defined]


def test_an_unreachable_server_raises_server_unavailable() -> None:
    with RemoteEngine(f"http://127.0.0.1:{free_port()}", "k", retries=1, backoff=0.01) as remote:
        with pytest.raises(ServerUnavailable):
            remote.get_session("s1", "u1")
        with pytest.raises(ServerUnavailable):
            remote.memory.add("u1", "never sent")


def test_server_only_errors_have_classes_of_their_own(live: Live, engine: ContextEngine) -> None:
    with RemoteEngine(live.url, "ak_not-a-real-key") as stranger, pytest.raises(Unauthenticated):
        stranger.list_sessions("u1")
    with RemoteEngine(live.url, live.key("u1")) as remote:
        with pytest.raises(UserNotFound) as denied:
            remote.list_sessions("u3")
        assert isinstance(denied.value, NotFound) and denied.value.status == 404  # type: ignore[attr-defined]
        with pytest.raises(Forbidden):
            remote.sweep()
        session = remote.create_session("u1")
        with pytest.raises(RequestInvalid) as invalid:
            session.build_context("q", budget=0)
        assert isinstance(invalid.value, InvalidInput) and invalid.value.field == "budget"  # type: ignore[attr-defined]
        with pytest.raises(SessionNotFound) as missing:
            remote.get_session("no-such-session", "u1")
        assert missing.value.session_id == "no-such-session"
    with (
        serve(engine, ServerConfig(max_body_bytes=4096)) as small,
        RemoteEngine(small.url, small.key("u1")) as remote,
    ):
        session = remote.create_session("u1")
        with pytest.raises(BodyTooLarge):
            session.add_message("user", "x" * 10_000)
        assert session.events() == []


def test_admin_calls_need_an_admin_key(live: Live) -> None:
    with RemoteEngine(live.url, live.key("u1")) as user:
        session = user.create_session("u1")
        session.add_message("user", "my data", images=[noise_png(9)])
        user.memory.add("u1", "The user is vegetarian")
        with pytest.raises(Forbidden):
            user.delete_user_data("u1")
    with RemoteEngine(live.url, live.key(scopes=("admin",))) as admin:
        assert admin.sweep().expired_sessions == 0
        assert admin.verify(session.id, "u1").ok
        report = admin.delete_user_data("u1")
        assert (report.sessions, report.events) == (1, 1)
        assert report.extra.get("memories") == 1
        with pytest.raises(SessionNotFound):
            admin.get_session(session.id, "u1")
        assert admin.memory.list("u1") == []


def test_remote_engine_reads_its_key_from_the_environment(
    live: Live, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCTX_API_KEY", live.key("u1"))
    with RemoteEngine(live.url) as remote:
        remote.ping()
        assert remote.create_session("u1").user_id == "u1"


def test_without_httpx_the_client_names_the_extra_to_install() -> None:
    code = (
        "import sys; sys.modules['httpx'] = None\n"
        "try:\n    from agentctx.client import RemoteEngine\n"
        "except ImportError as exc:\n    print(type(exc).__name__, exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    assert result.stdout.strip() == (
        "MissingExtra httpx is required for this feature: pip install 'agentctx[client]'"
    )


def test_long_logs_are_read_page_by_page(engine: ContextEngine, remote: RemoteEngine) -> None:
    session = remote.create_session("u1")
    local = engine.get_session(session.id, "u1")
    for start in (0, 1000):
        count = 1000 if start == 0 else 205
        local.append(
            *(
                EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text=f"m{start + i}"),))
                for i in range(count)
            )
        )
    events = session.events()
    assert [e.seq for e in events] == list(range(1, 1206))
    assert events == local.events()
    assert [e.seq for e in session.events(limit=1001)] == list(range(1, 1002))
    assert [e.seq for e in session.events(start_seq=990, end_seq=1010)] == list(range(990, 1011))
    assert [e.text for e in session.events(types=["user_input"], last=2)] == ["m1203", "m1204"]
