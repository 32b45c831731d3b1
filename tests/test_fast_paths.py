"""The read and write shortcuts must give exactly what the general paths give."""

from __future__ import annotations

import gc
import inspect
from datetime import timedelta

import pytest
from sqlalchemy import select

from agentctx import ContextEngine, Event, EventType
from agentctx.events import JsonPart, pack_event, trusted_event, unpack_event, utcnow
from agentctx.storage import event_reads
from agentctx.storage import repository as repo
from agentctx.storage.schema import events


def _varied_session(engine: ContextEngine, png: bytes):  # type: ignore[no-untyped-def]
    session = engine.create_session(user_id="u1")
    with session.turn(author="planner") as turn:
        turn.add_message("user", "plan a trip", metadata={"lang": "en", "n": 2})
        call = turn.add_tool_call("search", {"q": "Lisbon", "limit": 5}, model="m-1")
        turn.add_tool_result(call.call_id, content="3 hits", images=[png], duration_ms=12.5)
        turn.add_event(EventType.REFLECTION, "looks fine", payload={"confidence": 0.9})
        turn.add_tool_result(
            turn.add_tool_call("fetch", {"url": "x"}).call_id, content="x" * 70_000, is_error=True
        )
    session.update_state({"step": 1})
    return session


def test_trusted_events_equal_validated_ones(engine: ContextEngine, png: bytes) -> None:
    session = _varied_session(engine, png)
    with engine.db.read() as conn:
        rows = [dict(r) for r in conn.execute(select(events).order_by(events.c.seq)).mappings()]
    kinds = {part["kind"] for row in rows for part in row["parts"]}
    assert kinds == {"text", "json", "image", "blob"}
    for row in rows:
        fast = Event.from_row(row)
        assert fast == Event.model_validate(row)
        assert fast.model_dump() == Event.model_validate(row).model_dump()
        assert fast.model_fields_set == set(Event.model_fields)
    assert session.verify().ok


def test_packed_events_unpack_equal_and_are_not_tracked(engine: ContextEngine, png: bytes) -> None:
    """What the hot cache holds: every part kind, payloads, meta extras and roles come
    back equal, and the packed form leaves the collector nothing to track."""
    session = _varied_session(engine, png)
    with session.turn() as turn:
        turn.add_message("assistant", "a plain reply")
    stored = session.events()
    assert {part.kind for event in stored for part in event.parts} == {
        "text",
        "json",
        "image",
        "blob",
    }
    assert any(event.payload for event in stored) and any(e.meta.extra for e in stored)
    packed = [pack_event(event) for event in stored]
    for event, values in zip(stored, packed, strict=True):
        back = unpack_event(values)
        assert back == event and back is not event
        assert back.model_dump() == event.model_dump()
        assert back.model_fields_set == set(Event.model_fields)
        assert back.meta.model_fields_set == event.meta.model_fields_set
        assert type(back.type) is EventType
    # Every event packs to tuples of plain values (payloads, extras and JSON data as
    # their JSON bytes), which a collection or two untracks (dicts never are).
    for _ in range(3):
        gc.collect()
    assert not any(gc.is_tracked(values) for values in packed)


def test_what_one_reader_does_to_its_event_no_other_reader_sees(
    engine: ContextEngine, png: bytes
) -> None:
    session = _varied_session(engine, png)
    with session.turn() as turn:
        turn.add_message("assistant", "a plain reply")
    stored = session.events()
    packed = [pack_event(event) for event in stored]
    first = [unpack_event(values) for values in packed]
    for event in first:
        if event.payload:
            event.payload["changed"] = True
        if event.meta.extra:
            event.meta.extra["changed"] = True
        for part in event.parts:
            if isinstance(part, JsonPart) and isinstance(part.data, dict):
                part.data["changed"] = True
    assert [unpack_event(values) for values in packed] == stored
    # An event without extras shares one empty extra with the others: it is read-only,
    # so writing to it cannot give every such event an extra.
    plain = next(e for e in first if not e.meta.extra)
    with pytest.raises(TypeError, match="read-only"):
        plain.meta.extra["changed"] = True
    with pytest.raises(TypeError, match="read-only"):
        plain.meta.extra.update(changed=True)
    assert [e.meta.extra for e in session.events()] == [e.meta.extra for e in stored]
    assert plain.meta.extra == {} and plain.model_dump()["meta"]["extra"] == {}


def test_compiled_reads_equal_core_reads(engine: ContextEngine, png: bytes) -> None:
    session = _varied_session(engine, png)
    now = utcnow()
    with engine.db.read() as conn:
        core = [
            Event.from_row(r)
            for r in conn.execute(
                select(events).where(events.c.session_id == session.id).order_by(events.c.seq)
            ).mappings()
        ]
        fast = event_reads.select_events(conn, "u1", session.id, live_at=now)
        newest = event_reads.select_events(
            conn, "u1", session.id, limit=3, newest_first=True, live_at=now
        )
        window = event_reads.select_events(conn, "u1", session.id, start_seq=2, end_seq=4)
    assert fast == core
    assert [e.seq for e in newest] == [core[-1].seq, core[-2].seq, core[-3].seq]
    assert window == core[1:4]
    assert [e.ts for e in fast] == [e.ts for e in core] and all(e.ts.tzinfo for e in fast)


def test_reads_by_seq_list_equal_core_reads(engine: ContextEngine, png: bytes) -> None:
    session = _varied_session(engine, png)
    other = _varied_session(engine, png)  # same seqs in another session: never mixed in
    short = engine.create_session(user_id="u1", ttl=timedelta(hours=1))
    short.add_message("user", "soon gone")
    now = utcnow()
    with engine.db.read() as conn:
        core = {
            e.seq: e
            for e in (
                Event.from_row(r)
                for r in conn.execute(
                    select(events).where(events.c.session_id == session.id)
                ).mappings()
            )
        }
        picked = event_reads.select_events(
            conn, "u1", session.id, seqs=[5, 2, 2, 99, 4], live_at=now
        )
        ranged = event_reads.select_events(
            conn, "u1", session.id, seqs=[1, 2, 5, 6], start_seq=2, end_seq=5
        )
        none = event_reads.select_events(conn, "u1", session.id, seqs=[])
        foreign = event_reads.select_events(conn, "u2", other.id, seqs=[1, 2])
        live = event_reads.select_events(conn, "u1", short.id, seqs=[1], live_at=now)
        expired = event_reads.select_events(
            conn, "u1", short.id, seqs=[1], live_at=now + timedelta(days=400)
        )
    assert picked == [core[2], core[4], core[5]]  # in seq order, each once, unknown ones left out
    assert ranged == [core[2], core[5]]
    assert none == [] and foreign == []
    assert [e.seq for e in live] == [1]
    assert expired == []


def test_the_hot_read_selects_columns_in_trusted_event_order() -> None:
    assert tuple(inspect.signature(trusted_event).parameters) == event_reads.EVENT_FIELDS
    assert set(event_reads.EVENT_FIELDS) == {column.name for column in events.columns}


def test_system_event_reads_equal_core_reads_in_every_shape(engine: ContextEngine) -> None:
    """Every window reads the session's instructions through a compiled statement per
    shape (seq bounds, liveness): the same events as Core, nothing of another session,
    and nothing once the session has expired."""
    session = engine.create_session(user_id="u1", ttl=timedelta(hours=1))
    other = engine.create_session(user_id="u1")
    for index in range(4):
        session.add_event(EventType.SYSTEM, f"rule {index}")
        session.add_message("user", f"message {index}")
        other.add_event(EventType.SYSTEM, f"other rule {index}")
    now = utcnow()
    with engine.db.read() as conn:
        core = [
            Event.from_row(r)
            for r in conn.execute(
                select(events)
                .where(events.c.session_id == session.id, events.c.type == "system")
                .order_by(events.c.seq)
            ).mappings()
        ]
        shapes = {
            (start, end, live): event_reads.select_events(
                conn,
                "u1",
                session.id,
                types=["system"],
                start_seq=start,
                end_seq=end,
                live_at=now if live else None,
            )
            for start in (None, 3)
            for end in (None, 5)
            for live in (False, True)
        }
        expired = event_reads.select_events(
            conn, "u1", session.id, types=["system"], live_at=now + timedelta(days=1)
        )
        alive = repo.session_exists(conn, "u1", session.id, now)
        gone = repo.session_exists(conn, "u1", session.id, now + timedelta(days=1))
        missing = repo.session_exists(conn, "u1", "no-such-session", now)
    assert [e.seq for e in core] == [1, 3, 5, 7]
    for (start, end, _live), found in shapes.items():
        low, high = start or 1, end or 10**9
        assert found == [e for e in core if low <= e.seq <= high]
    assert expired == []
    assert (alive, gone, missing) == (True, False, False)
