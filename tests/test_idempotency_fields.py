"""An idempotent retry is the same event, field for field: a retry under the same
idempotency key or event id whose metadata, model, timestamp (when the caller gave
one), role, author, type, tool fields or images differ raises ``IdempotencyConflict``;
an exact retry returns the stored event."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from agentctx import ContextEngine, IdempotencyConflict
from agentctx.events import EventDraft, EventMeta, EventType, ImageData, Role, TextPart
from conftest import make_png

TS = datetime(2025, 3, 1, 12, 0, 0, 123456, tzinfo=UTC)
PNG = make_png(seed=1)


def draft(**changes: Any) -> EventDraft:
    """The event every retry below starts from; ``changes`` replace its fields."""
    fields: dict[str, Any] = {
        "type": EventType.USER_INPUT,
        "role": Role.USER,
        "author": "kate",
        "parts": (TextPart(text="pay 10"), ImageData(data=PNG, media_type="image/png")),
        "payload": {"amount": 10},
        "meta": EventMeta(model="m-1", duration_ms=12.5, extra={"channel": "web"}),
        "ts": TS,
        "idempotency_key": "k-1",
    }
    fields.update(changes)
    return EventDraft(**fields)


DIFFERENT = {
    "metadata": {"meta": EventMeta(model="m-1", duration_ms=12.5, extra={"channel": "sms"})},
    "model": {"meta": EventMeta(model="m-2", duration_ms=12.5, extra={"channel": "web"})},
    "duration": {"meta": EventMeta(model="m-1", duration_ms=99.0, extra={"channel": "web"})},
    "timestamp": {"ts": TS + timedelta(seconds=1)},
    "role": {"role": Role.SYSTEM},
    "author": {"author": "bob"},
    "type": {"type": EventType.NOTE},
    "text": {"parts": (TextPart(text="pay 1000"), ImageData(data=PNG, media_type="image/png"))},
    "image": {
        "parts": (
            TextPart(text="pay 10"),
            ImageData(data=make_png(seed=7), media_type="image/png"),
        )
    },
    "payload": {"payload": {"amount": 1000}},
}


@pytest.mark.parametrize("field", sorted(DIFFERENT))
def test_a_retry_that_differs_in_one_field_is_a_conflict(engine: ContextEngine, field: str) -> None:
    session = engine.create_session(user_id="u1")
    stored = session.append(draft())[0]
    with pytest.raises(IdempotencyConflict):
        session.append(draft(**DIFFERENT[field]))
    # Under a chosen event id rather than a key, alike.
    keyed_by_id = draft(idempotency_key=None, event_id="evt-1")
    session.append(keyed_by_id)
    with pytest.raises(IdempotencyConflict):
        session.append(draft(idempotency_key=None, event_id="evt-1", **DIFFERENT[field]))
    assert [e.event_id for e in session.events()] == [stored.event_id, "evt-1"]


def test_an_exact_retry_returns_the_stored_event(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    stored = session.append(draft())[0]
    assert session.append(draft())[0] == stored
    # Without a timestamp of the caller's, each try is stamped anew: not compared.
    first = session.append(draft(ts=None, idempotency_key="k-2"))[0]
    assert session.append(draft(ts=None, idempotency_key="k-2"))[0] == first
    # Each retry may come with a request id of its own.
    assert session.append(draft(request_id="req-2"))[0] == stored
    assert len(session.events()) == 2


def test_a_tool_call_retry_with_other_arguments_or_tool_is_a_conflict(
    engine: ContextEngine,
) -> None:
    session = engine.create_session(user_id="u1")
    call = session.add_tool_call("search", {"q": "flights"}, call_id="c1", idempotency_key="t")
    assert session.add_tool_call("search", {"q": "flights"}, call_id="c1", idempotency_key="t") == (
        call
    )
    with pytest.raises(IdempotencyConflict):
        session.add_tool_call("search", {"q": "hotels"}, call_id="c1", idempotency_key="t")
    with pytest.raises(IdempotencyConflict):
        session.add_tool_call("browse", {"q": "flights"}, call_id="c1", idempotency_key="t")
    with pytest.raises(IdempotencyConflict):
        session.add_tool_call(
            "search", {"q": "flights"}, call_id="c1", idempotency_key="t", model="other"
        )


def test_a_batch_retry_is_checked_event_by_event(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    batch = [
        draft(idempotency_key="b-0"),
        draft(idempotency_key="b-1", parts=(TextPart(text="then"),)),
    ]
    stored = session.append(*batch)
    assert session.append(*batch) == stored
    other_metadata = draft(
        idempotency_key="b-1",
        parts=(TextPart(text="then"),),
        meta=EventMeta(model="m-1", duration_ms=12.5, extra={"channel": "api"}),
    )
    with pytest.raises(IdempotencyConflict):
        session.append(batch[0], other_metadata)
    assert [e.event_id for e in session.events()] == [e.event_id for e in stored]
