"""Sessions: isolation, listing, size guard, redaction gate, TTL, data control, audit."""

from __future__ import annotations

import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import func, select, update

from agentctx import (
    BlobNotFound,
    BlobPart,
    ContextEngine,
    EventType,
    InvalidEvent,
    InvalidInput,
    Redacted,
    RedactionRequired,
    SessionExists,
    SessionNotFound,
)
from agentctx.sessions.prepare import PreparedEvent
from agentctx.storage.schema import (
    MEMORY_TABLES,
    USER_DATA_TABLES,
    audit,
    blob_refs,
    blobs,
    erasures,
    metadata,
    sessions,
)
from agentctx.tokens import estimate_text_tokens
from conftest import make_png


def _count(engine: ContextEngine, table: Any, *where: Any) -> int:
    with engine.db.read() as conn:
        return int(conn.execute(select(func.count()).select_from(table).where(*where)).scalar_one())


def test_every_kind_of_cross_user_access_is_not_found(engine: ContextEngine, png: bytes) -> None:
    session = engine.create_session(user_id="alice", agent_id="helper")
    with session.turn() as turn:
        call = turn.add_tool_call("screenshot", {})
        result = turn.add_tool_result(call.call_id, content="ok", images=[png])
    image = result.images[0]
    sid = session.id

    attempts = {
        "get_session": lambda: engine.get_session(sid, user_id="mallory"),
        "verify": lambda: engine.verify(sid, user_id="mallory"),
        "delete_session": lambda: engine.delete_session(sid, user_id="mallory"),
        "restore_image": lambda: engine.restore_image(image.image_id, user_id="mallory"),
        "get_blob": lambda: engine.get_blob(image.blob_id, user_id="mallory"),
    }
    missing = {
        "get_session": lambda: engine.get_session("no-such-session", user_id="mallory"),
        "restore_image": lambda: engine.restore_image(
            "img_000000000000000000000000", user_id="mallory"
        ),
    }
    for name, attempt in attempts.items():
        with pytest.raises((SessionNotFound, BlobNotFound)) as caught:
            attempt()
        if name in missing:  # indistinguishable from a missing object: same type and message shape
            with pytest.raises(type(caught.value)) as other:
                missing[name]()
            assert str(other.value).split("'")[0] == str(caught.value).split("'")[0]

    # A handle forged for another user sees nothing and writes nothing.
    forged = engine.get_session(sid, user_id="alice")
    forged._info = forged._info.model_copy(update={"user_id": "mallory"})
    for attempt_fn in (
        forged.events,
        forged.turns,
        lambda: forged.add_message("user", "hi"),
        lambda: forged.update_state({"x": 1}),
        forged.turn,
        lambda: list(forged.export()),
        forged.refresh,
    ):
        with pytest.raises(SessionNotFound):
            attempt_fn()
    assert engine.list_sessions("mallory").items == []
    assert len(engine.get_session(sid, user_id="alice").events()) == 2
    denied = _count(engine, audit, audit.c.user_id == "mallory", audit.c.status == "error")
    assert denied >= len(attempts) + 6


def test_same_session_id_for_two_users_is_two_sessions(engine: ContextEngine) -> None:
    a = engine.create_session(user_id="alice", session_id="chat-1")
    b = engine.create_session(user_id="bob", session_id="chat-1")
    a.add_message("user", "alice's secret")
    b.add_message("user", "bob's note")
    assert [e.text for e in engine.get_session("chat-1", user_id="bob").events()] == ["bob's note"]
    with pytest.raises(SessionExists):
        engine.create_session(user_id="alice", session_id="chat-1")


def test_list_sessions_paginates(engine: ContextEngine) -> None:
    created = [
        engine.create_session(user_id="u1", agent_id="a" if i % 2 else "b").id for i in range(7)
    ]
    engine.create_session(user_id="u2")
    seen: list[str] = []
    cursor = None
    while True:
        page = engine.list_sessions("u1", limit=3, cursor=cursor)
        seen.extend(item.session_id for item in page.items)
        cursor = page.next_cursor
        if cursor is None:
            break
    assert seen == created
    # The operators' view pages through every user's sessions, each exactly once.
    everyone: list[tuple[str, str]] = []
    cursor = None
    while True:
        page = engine.list_all_sessions(limit=2, cursor=cursor)
        everyone.extend((item.user_id, item.session_id) for item in page.items)
        if (cursor := page.next_cursor) is None:
            break
    assert len(everyone) == len(set(everyone)) == 8
    assert [sid for user, sid in everyone if user == "u1"] == created
    assert len(engine.list_sessions("u1", agent_id="a").items) == 3
    with pytest.raises(InvalidInput):
        engine.list_sessions("u1", cursor="garbage!")
    with pytest.raises(InvalidInput):
        engine.list_sessions("u1", limit=0)


def test_size_guard_offloads_large_content(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, max_inline_bytes=1024) as engine:
        session = engine.create_session(user_id="u1")
        big = "line of tool output\n" * 500  # ~10 KB
        with session.turn() as turn:
            call = turn.add_tool_call("cat", {"path": "/var/log/app.log"})
            result = turn.add_tool_result(
                call.call_id, content=big, data={"rows": list(range(2000))}
            )
        text_part, data_part = result.parts
        assert isinstance(text_part, BlobPart) and isinstance(data_part, BlobPart)
        assert text_part.size == len(big.encode()) and text_part.media_type.startswith("text/plain")
        assert text_part.preview == big[:500]
        assert data_part.media_type == "application/json"
        assert engine.get_blob(text_part.blob_id, user_id="u1").decode() == big
        assert json.loads(engine.get_blob(data_part.blob_id, user_id="u1")) == {
            "rows": list(range(2000))
        }
        # The window pays for the previews, not the 10 KB of text and the 2,000 numbers.
        whole = estimate_text_tokens(big) + estimate_text_tokens(json.dumps(list(range(2000))))
        assert result.token_estimate < whole / 5
        stored = session.events()[-1]
        assert stored.parts == result.parts
        assert session.verify().ok


def test_oversized_payload_is_offloaded_whole(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, max_inline_bytes=1024) as engine:
        session = engine.create_session(user_id="u1")
        payload = {"plan": ["step"] * 1000}
        event = session.add_event(EventType.PLANNER, "planning", payload=payload)
        assert event.payload == {}
        blob = event.parts[-1]
        assert isinstance(blob, BlobPart) and blob.original_kind == "payload"
        assert json.loads(engine.get_blob(blob.blob_id, user_id="u1")) == payload


def test_bad_input_is_refused_and_loses_nothing(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    session.add_message("user", "kept")
    bad_calls = [
        lambda: session.add_message("tool", "x"),
        lambda: session.add_message("user", "nul\x00byte"),
        lambda: session.add_event(EventType.NOTE, payload={"n": float("nan")}),
        lambda: session.add_event(EventType.NOTE, payload={"n": 2**70}),
        lambda: session.add_message("user", "x", images=[b"not an image"]),
        lambda: session.add_message("user", "x", images=["%%%not-base64"]),
        lambda: session.add_event("no_such_type", "x"),
        lambda: session.add_message("user", "x", idempotency_key=""),
    ]
    for call in bad_calls:
        with pytest.raises(InvalidInput):
            call()
    from datetime import datetime

    with pytest.raises(InvalidEvent, match="timezone"):
        session.add_message("user", "x", ts=datetime(2026, 1, 1))
    with pytest.raises(InvalidInput):
        engine.create_session(user_id="bad user id with spaces")
    assert [e.text for e in session.events()] == ["kept"]
    assert session.verify().ok


def test_images_accept_base64_and_data_urls(engine: ContextEngine) -> None:
    import base64

    png = make_png(seed=3)
    encoded = base64.b64encode(png).decode()
    session = engine.create_session(user_id="u1")
    event = session.add_message(
        "user", "look", images=[png, encoded, f"data:image/png;base64,{encoded}"]
    )
    assert len({image.image_id for image in event.images}) == 1  # same content, one blob
    assert event.images[0].width == 320 and event.images[0].height == 200
    assert event.images[0].image_id.startswith("img_")
    assert engine.restore_image(event.images[0].image_id, user_id="u1") == png
    assert _count(engine, blobs) == 1


class _MarkingRedactor:
    """Replaces the word 'secret' and reports it: proves the gate runs on every write path."""

    def redact_text(self, text: str) -> Redacted:
        found = frozenset({"TEST"}) if "secret" in text else frozenset()
        return Redacted(text.replace("secret", "[TEST]"), found)

    def redact_json(self, value: Any) -> Redacted:
        if isinstance(value, str):
            return self.redact_text(value)
        if isinstance(value, dict):
            results = {k: self.redact_json(v) for k, v in value.items()}
            found = (
                frozenset().union(*(r.entity_types for r in results.values()))
                if results
                else frozenset()
            )
            return Redacted({k: r.value for k, r in results.items()}, found)
        if isinstance(value, list):
            items = [self.redact_json(v) for v in value]
            found = frozenset().union(*(r.entity_types for r in items)) if items else frozenset()
            return Redacted([r.value for r in items], found)
        return Redacted(value)


def test_redactor_runs_before_anything_is_stored(db_url: str, home: Path) -> None:
    with ContextEngine(
        url=db_url, home=home, redactor=_MarkingRedactor(), max_inline_bytes=1024
    ) as engine:
        session = engine.create_session(user_id="u1", state={"note": "secret plan"})
        with session.turn() as turn:
            turn.add_message("user", "my secret is 42", metadata={"tag": "secret"})
            call = turn.add_tool_call("lookup", {"query": "secret"})
            big = turn.add_tool_result(call.call_id, content="secret " * 400)
        session.update_state({"x": "secret"})
        events = session.events()
        assert events[0].text == "my [TEST] is 42"
        assert events[0].redacted and events[0].redacted_types == ("TEST",)
        assert events[0].meta.extra == {"tag": "[TEST]"}
        assert events[1].parts[0].data == {"query": "[TEST]"}  # type: ignore[union-attr]
        offloaded = big.parts[0]
        assert isinstance(offloaded, BlobPart)
        assert b"secret" not in engine.get_blob(offloaded.blob_id, user_id="u1")
        fresh = engine.get_session(session.id, user_id="u1")
        assert fresh.state == {"note": "[TEST] plan", "x": "[TEST]"}
        with engine.db.read() as conn:
            dumped = json.dumps([list(map(str, row)) for row in conn.execute(select(sessions))])
        assert "secret" not in dumped


def test_store_refuses_unredacted_events(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    from agentctx import EventDraft, TextPart

    draft = EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text="raw"),))
    prepared = engine._service.preparer.prepare("u1", session.id, draft, None)
    prepared.row["redacted"] = False
    with pytest.raises(RedactionRequired):
        engine._service.writer.write(
            "u1", session.id, [prepared], turn_id=None, own_turn=True, request_id=None
        )
    assert session.events() == []
    assert isinstance(prepared, PreparedEvent)


def test_expired_sessions_vanish_and_are_swept(engine: ContextEngine, png: bytes) -> None:
    shared = make_png(seed=9)
    keep = engine.create_session(user_id="u1")
    keep.add_message("user", "keep", images=[shared])
    doomed = engine.create_session(user_id="u1", ttl=timedelta(hours=1))
    doomed.add_message("user", "old", images=[png, shared])
    with engine.db.write() as conn:  # an hour passes for this session only
        conn.execute(
            update(sessions)
            .where(sessions.c.session_id == doomed.id)
            .values(expires_at=sessions.c.created_at)
        )
    with pytest.raises(SessionNotFound):
        engine.get_session(doomed.id, user_id="u1")
    with pytest.raises(SessionNotFound):
        doomed.events(last=10)  # an expired session cannot be read through an old handle
    assert [s.session_id for s in engine.list_sessions("u1").items] == [keep.id]
    report = engine.sweep()
    assert report.expired_sessions == 1 and report.deleted.events == 1
    assert report.deleted.blobs == 1  # the shared screenshot stays: `keep` still uses it
    assert engine.restore_image(keep.events()[0].images[0].image_id, user_id="u1") == shared
    assert _count(engine, blobs) == 1
    assert not engine.blobs.exists(doomed_blob := engine_blob_id(png)) and doomed_blob
    # The id is free again.
    engine.create_session(user_id="u1", session_id=keep.id + "-2")


def engine_blob_id(data: bytes) -> str:
    from agentctx.storage.blobs import blob_id_of

    return blob_id_of(data)


def test_writes_renew_the_sliding_ttl(db_url: str, home: Path) -> None:
    from agentctx.events import utcnow

    with ContextEngine(url=db_url, home=home, session_ttl=timedelta(days=1)) as engine:
        session = engine.create_session(user_id="u1")
        created_expiry = session.info.expires_at
        session.add_message("user", "right away")
        # Within 1% of the TTL the expiry is not rewritten (it is indexed).
        assert session.refresh().expires_at == created_expiry
        half_day = utcnow() + timedelta(hours=12)
        with engine.db.write() as conn:  # half a day passes
            conn.execute(
                update(sessions)
                .where(sessions.c.session_id == session.id)
                .values(expires_at=half_day)
            )
        session.add_message("user", "half a day later")
        renewed = session.refresh().expires_at
        assert renewed is not None and renewed - utcnow() > timedelta(hours=23)
    with ContextEngine(url=db_url, home=home, session_ttl=None) as engine:
        assert engine.create_session(user_id="u1").info.expires_at is None


def test_delete_user_data_removes_everything_of_that_user(
    engine: ContextEngine, png: bytes
) -> None:
    shared = make_png(seed=5)
    for i in range(3):
        session = engine.create_session(user_id="gone")
        with session.turn() as turn:
            call = turn.add_tool_call("screenshot", {})
            turn.add_tool_result(
                call.call_id, content=f"shot {i}", images=[make_png(seed=100 + i), shared]
            )
        session.update_state({"i": i})
    other = engine.create_session(user_id="stays")
    other.add_message("user", "mine", images=[shared])

    report = engine.delete_user_data("gone")
    assert report.sessions == 3
    assert report.events == 9  # call, result, state_delta per session
    assert report.turns == 6
    assert report.blob_refs == 6
    assert report.blobs == 3  # the shared image is still used by "stays"
    assert engine.list_sessions("gone").items == []
    for table in (sessions, blob_refs):
        assert _count(engine, table, table.c.user_id == "gone") == 0
    assert engine.get_session(other.id, user_id="stays").events()[0].images
    assert engine.restore_image(other.events()[0].images[0].image_id, user_id="stays") == shared
    deletion = _count(
        engine, audit, audit.c.action == "delete_user_data", audit.c.user_id == "gone"
    )
    assert deletion == 1
    assert engine.delete_user_data("gone").sessions == 0


KEPT_AFTER_DELETION = {audit.name, erasures.name}
"""Tables that keep a row naming a deleted user: the audit log (ids and outcomes, which
prove the deletion) and the erasure feed (the deletion itself, trimmed by the sweep)."""


def test_every_table_naming_a_user_is_emptied_by_delete_user_data() -> None:
    """A table added later with a ``user_id`` column must be listed for deletion."""
    naming = {table.name for table in metadata.sorted_tables if "user_id" in table.c}
    emptied = {table.name for table in (*USER_DATA_TABLES, *MEMORY_TABLES)}
    assert naming - KEPT_AFTER_DELETION == emptied


def test_delete_user_data_leaves_no_row_of_the_user_in_any_table(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="gone")
    with session.turn() as turn:
        call = turn.add_tool_call("screenshot", {})
        turn.add_tool_result(call.call_id, content="shot", images=[make_png(seed=3)])
    session.add_message("user", "I moved to Lisbon last spring")
    session.build_context(query="Where did I move?", budget=2_000)  # indexes the session
    engine.memory.add("gone", "The user moved to Lisbon")
    engine.memory.add("stays", "The user lives in Oslo")
    naming = [table for table in metadata.sorted_tables if "user_id" in table.c]
    before = {t.name: _count(engine, t, t.c.user_id == "gone") for t in naming}
    assert sum(before.values()) > 10

    engine.delete_user_data("gone")

    after = {t.name: _count(engine, t, t.c.user_id == "gone") for t in naming}
    assert {name for name, n in after.items() if n} == KEPT_AFTER_DELETION
    assert _count(engine, sessions) == 0 and engine.memory.search("stays", "Oslo")


def test_audit_records_every_operation(engine: ContextEngine, home: Path) -> None:
    session = engine.create_session(user_id="u1")
    event = session.add_message("user", "unmistakable-content-7731")
    session.update_state({"a": 1})
    engine.get_session(session.id, user_id="u1")
    with pytest.raises(SessionNotFound):
        engine.get_session(session.id, user_id="u2")
    session.verify()
    engine.delete_session(session.id, user_id="u1")
    engine.sweep()
    with engine.db.read() as conn:
        rows = [dict(r) for r in conn.execute(select(audit).order_by(audit.c.audit_id)).mappings()]
    actions = [r["action"] for r in rows]
    for expected in (
        "session_create",
        "append",
        "state_update",
        "session_load",
        "session_verify",
        "session_delete",
        "sweep",
    ):
        assert expected in actions
    append = next(r for r in rows if r["action"] == "append")
    assert append["event_id"] == event.event_id and append["event_type"] == "user_input"
    assert append["status"] == "ok" and append["duration_ms"] is not None
    assert next(r for r in rows if r["action"] == "state_update")["state_version"] == 1
    denied = next(r for r in rows if r["user_id"] == "u2")
    assert denied["status"] == "error" and denied["error_code"] == "session_not_found"
    lines = [json.loads(line) for line in (home / "audit.jsonl").read_text().splitlines()]
    assert {
        "ts",
        "action",
        "user_id",
        "session_id",
        "request_id",
        "event_id",
        "event_type",
        "state_version",
        "duration_ms",
        "status",
        "error_code",
    } <= set(lines[0])
    assert [line["action"] for line in lines if line["session_id"] == session.id][:2] == [
        "session_create",
        "append",
    ]
    assert "unmistakable-content-7731" not in (home / "audit.jsonl").read_text()
