"""Batched appends: one write of many drafts keeps every guarantee a single append has,
on both backends (redaction of each event, all or nothing, idempotency keys, the chain,
the audit record) however the write is carried out (one redaction per recurring value,
PostgreSQL's pipelined statements)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from sqlalchemy import select

from agentctx import ContextEngine
from agentctx.errors import InvalidEvent, StorageError
from agentctx.events import EventDraft, EventType, JsonPart, TextPart
from agentctx.jobs import Job
from agentctx.sessions.turn_end import WrittenEvent
from agentctx.storage.schema import audit

EMAIL = "ada.lovelace@example.org"
PHONE = "+1 415 555 0132"


def user(text: str, **fields: Any) -> EventDraft:
    return EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text=text),), **fields)


def appends_recorded(engine: ContextEngine, session_id: str) -> list[tuple[str, Any]]:
    with engine.db.read() as conn:
        rows = conn.execute(
            select(audit.c.status, audit.c.meta).where(
                audit.c.session_id == session_id, audit.c.action == "append"
            )
        ).all()
    return [(row.status, row.meta) for row in rows]


def test_a_batch_mixing_personal_data_and_plain_text(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1", agent_id="a1")
    texts = [
        f"write to {EMAIL} today",
        "nothing personal in order #0000042",
        f"write to {EMAIL} today",  # the same text again: redacted the same way
        f"call me on {PHONE}",
        "nothing personal in order #0000042",
    ]
    drafts = [user(text) for text in texts]
    drafts.append(
        EventDraft(
            type=EventType.NOTE,
            parts=(JsonPart(data={"contact": EMAIL, "n": 1}),),
            payload={"owner": EMAIL, "plain": "fine"},
            meta={"extra": {"note": "plain"}},
        )
    )
    written = session.append(*drafts)

    assert [event.seq for event in written] == list(range(1, len(drafts) + 1))
    stored = session.events()
    assert stored == written
    for event in stored:
        assert event.redacted
        assert EMAIL not in str(event.model_dump()) and PHONE not in str(event.model_dump())
    # Each event names what was found in it, and only that.
    assert [set(event.redacted_types) for event in stored] == [
        {"EMAIL"},
        set(),
        {"EMAIL"},
        {"PHONE"},
        set(),
        {"EMAIL"},
    ]
    assert stored[1].text == texts[1] and stored[4].text == texts[4]
    assert stored[0].text == stored[2].text != texts[0]
    note = stored[5]
    assert note.payload["plain"] == "fine" and note.meta.extra == {"note": "plain"}
    # One request for the batch: every event carries the same (redacted) request id.
    assert len({event.request_id for event in stored}) == 1
    assert session.verify().ok
    assert appends_recorded(engine, session.id) == [("ok", {"events": len(drafts)})]


def test_json_is_stored_as_every_backend_reads_it_back(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1", agent_id="a1")
    payload = {"zero": -0.0, "big": 1e16, "items": [1.5, -0.0], "nested": {"x": 2e17}}
    (event,) = session.append(
        EventDraft(type=EventType.NOTE, parts=(JsonPart(data=payload),), payload=payload)
    )
    expected = {"zero": 0.0, "big": 10**16, "items": [1.5, 0.0], "nested": {"x": 2 * 10**17}}
    for stored in (event, session.events()[0]):
        assert stored.payload == expected
        assert isinstance(stored.payload["big"], int)
        part = stored.parts[0]
        assert isinstance(part, JsonPart) and part.data == expected
    assert session.verify().ok


@pytest.mark.parametrize(
    "bad",
    [
        user("lone \ud800 surrogate"),
        EventDraft(type=EventType.NOTE, payload={"n": float("nan")}),
        EventDraft(type=EventType.NOTE, parts=(JsonPart(data={"k": "nul \x00"}),)),
        EventDraft(type=EventType.NOTE, meta={"extra": {"big": 2**70}}),
    ],
    ids=["text", "payload", "json-part", "metadata"],
)
def test_a_batch_with_one_invalid_event_stores_nothing(
    engine: ContextEngine, bad: EventDraft
) -> None:
    session = engine.create_session(user_id="u1", agent_id="a1")
    session.append(user("before"))
    batch = [user(f"fine {i} {EMAIL}") for i in range(5)]
    batch.insert(3, bad)
    with pytest.raises(InvalidEvent):
        session.append(*batch)
    assert [event.text for event in session.events()] == ["before"]
    assert session.refresh().last_seq == 1
    assert session.verify().ok
    # The next batch continues the log where it was.
    written = session.append(*batch[:3])
    assert [event.seq for event in written] == [2, 3, 4]
    assert session.verify().ok


def test_a_batch_repeating_an_idempotency_key_is_refused(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1", agent_id="a1")
    batch = [user("one", idempotency_key="k1"), user("two", idempotency_key="k1")]
    with pytest.raises(InvalidEvent, match="may not repeat"):
        session.append(*batch)
    assert session.events() == []
    assert appends_recorded(engine, session.id) == [
        ("error", {"events": 2}),
    ]


def test_a_retried_batch_is_stored_once(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1", agent_id="a1")
    batch = [user(f"message {i} to {EMAIL}", idempotency_key=f"{i}:{EMAIL}") for i in range(4)]
    first = session.append(*batch)
    again = session.append(*batch)
    assert again == first
    assert [event.seq for event in session.events()] == [1, 2, 3, 4]
    # Keys are identifiers: redacted with stable tokens, equal for equal keys.
    assert all(EMAIL not in (event.idempotency_key or "") for event in first)
    assert len({event.idempotency_key for event in first}) == 4
    assert session.verify().ok


class _WrittenProbe:
    """A turn-end condition that answers from the written events, and fails on demand:
    it is asked after the append's statements were sent (or queued)."""

    def __init__(self) -> None:
        self.fail = False
        self.asked = 0

    def __call__(self, _conn: Any, _user_id: str, _session_id: str, _turn_id: str) -> bool:
        return True

    def written(self, events: Sequence[WrittenEvent]) -> bool:
        self.asked += 1
        if self.fail:
            raise StorageError("the turn-end condition failed")
        return False


def test_a_write_failing_after_its_statements_leaves_nothing(engine: ContextEngine) -> None:
    probe = _WrittenProbe()
    ran: list[Job] = []
    engine.on_turn_end("probe", ran.append, when=probe)
    session = engine.create_session(user_id="u1", agent_id="a1")
    session.append(user("kept"))
    probe.fail = True
    with pytest.raises(StorageError):
        session.append(*(user(f"lost {i}") for i in range(3)))
    probe.fail = False
    assert probe.asked == 2
    assert [event.text for event in session.events()] == ["kept"]
    info = session.refresh()
    assert info.last_seq == 1 and info.last_hash == session.events()[0].hash
    assert len(session.turns()) == 1
    written = session.append(user("next"))
    assert written[0].seq == 2 and session.verify().ok
    assert ran == []  # the condition said no every time


def test_pipeline_needs_a_write_connection(engine: ContextEngine) -> None:
    db = engine.db
    with db.read() as conn:
        if db.dialect == "postgresql":
            with pytest.raises(StorageError):
                db.pipeline(conn)
        else:
            db.pipeline(conn)  # nothing to do on SQLite
    with db.write() as conn:
        db.pipeline(conn)
