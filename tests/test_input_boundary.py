"""The input boundary: whatever a caller passes to a public write or read, only an
``AgentCtxError`` comes out, and what was stored before is still there and verifies.

A hypothesis property over every public library entry point (arbitrary Unicode with
surrogates and NUL, numbers with NaN and infinities, nested JSON, bytes), on SQLite and
PostgreSQL, and the specific inputs that used to escape as driver or pydantic errors.
"""

from __future__ import annotations

import contextlib
import os
import struct
import zlib
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from agentctx import ContextEngine
from agentctx.context.config import parse_context_config
from agentctx.errors import (
    AgentCtxError,
    ConfigError,
    ImageTooLarge,
    InvalidEvent,
    InvalidInput,
)
from agentctx.sessions import Session
from conftest import make_png

# Text as an attacker sends it: any code point, lone surrogates and NUL included.
_ANY_CHAR = st.characters(codec=None, exclude_categories=())
_TEXT = st.one_of(
    st.text(_ANY_CHAR, max_size=40),
    st.sampled_from(["a\ud800", "a\x00b", "\udfff", "!!!", "😀", "a/b", "", " ", "x" * 300]),
)
_NUMBER = st.one_of(
    st.integers(),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from([-1, 0, 2**63, 10**30, float("nan"), float("inf"), 1e12]),
)
_JSON = st.recursive(
    st.one_of(st.none(), st.booleans(), _NUMBER, _TEXT),
    lambda inner: st.one_of(
        st.lists(inner, max_size=3),
        st.dictionaries(st.one_of(_TEXT, st.integers()), inner, max_size=3),
    ),
    max_leaves=8,
)
_VALUE = st.one_of(_TEXT, _NUMBER, _JSON, st.binary(max_size=32), st.none(), st.booleans())

Operation = Callable[[ContextEngine, Session, Any], object]


def _ttl(value: Any) -> Any:
    # A number means seconds, as a caller converting from a request would.
    if isinstance(value, int | float) and not isinstance(value, bool) and abs(value) < 1e9:
        return timedelta(seconds=value)
    return value


def _call_id(session: Session) -> str | None:
    return session.add_tool_call("lookup", {"q": "x"}).call_id


OPERATIONS: dict[str, Operation] = {
    "create_session.user_id": lambda e, s, v: e.create_session(v, "agent"),
    "create_session.agent_id": lambda e, s, v: e.create_session("u1", v),
    "create_session.session_id": lambda e, s, v: e.create_session("u1", "agent", session_id=v),
    "create_session.state": lambda e, s, v: e.create_session("u1", "agent", state=v),
    "create_session.ttl": lambda e, s, v: e.create_session("u1", "agent", ttl=_ttl(v)),
    "create_session.config": lambda e, s, v: e.create_session("u1", "agent", config=v),
    "create_session.metadata": lambda e, s, v: e.create_session("u1", "agent", metadata=v),
    "get_session.session_id": lambda e, s, v: e.get_session(v, "u1"),
    "get_session.user_id": lambda e, s, v: e.get_session(s.id, v),
    "list_sessions.user_id": lambda e, s, v: e.list_sessions(v),
    "list_sessions.limit": lambda e, s, v: e.list_sessions("u1", limit=v),
    "add_message.text": lambda e, s, v: s.add_message("user", v),
    "add_message.role": lambda e, s, v: s.add_message(v, "hello"),
    "add_message.metadata": lambda e, s, v: s.add_message("user", "hi", metadata=v),
    "add_message.author": lambda e, s, v: s.add_message("user", "hi", author=v),
    "add_message.model": lambda e, s, v: s.add_message("assistant", "hi", model=v),
    "add_message.idempotency_key": lambda e, s, v: s.add_message("user", "hi", idempotency_key=v),
    "add_message.event_id": lambda e, s, v: s.add_message("user", "hi", event_id=v),
    "add_message.ts": lambda e, s, v: s.add_message("user", "hi", ts=v),
    "add_message.images": lambda e, s, v: s.add_message("user", "look", images=[v]),
    "add_tool_call.name": lambda e, s, v: s.add_tool_call(v, {}),
    "add_tool_call.arguments": lambda e, s, v: s.add_tool_call("lookup", v),
    "add_tool_call.metadata": lambda e, s, v: s.add_tool_call("lookup", {}, metadata=v),
    "add_tool_call.call_id": lambda e, s, v: s.add_tool_call("lookup", {}, call_id=v),
    "add_tool_result.call_id": lambda e, s, v: s.add_tool_result(v, content="ok"),
    "add_tool_result.content": lambda e, s, v: s.add_tool_result(_call_id(s), content=v),
    "add_tool_result.data": lambda e, s, v: s.add_tool_result(_call_id(s), data=v),
    "add_tool_result.duration_ms": lambda e, s, v: s.add_tool_result(
        _call_id(s), content="ok", duration_ms=v
    ),
    "add_event.type": lambda e, s, v: s.add_event(v, "note"),
    "add_event.payload": lambda e, s, v: s.add_event("note", "note", payload=v),
    "add_event.status": lambda e, s, v: s.add_event("note", "note", status=v),
    "update_state.changes": lambda e, s, v: s.update_state(v),
    "update_state.expected_version": lambda e, s, v: s.update_state({"a": 1}, expected_version=v),
    "build_context.query": lambda e, s, v: s.build_context(v),
    "build_context.budget": lambda e, s, v: s.build_context("x", v),
    "build_context.strategy": lambda e, s, v: s.build_context("x", 500, strategy=v),
    "build_context.budget_split": lambda e, s, v: s.build_context("x", 500, budget_split=v),
    "build_context.config": lambda e, s, v: s.build_context("x", 500, config=v),
    "events.start_seq": lambda e, s, v: s.events(start_seq=v),
    "events.limit": lambda e, s, v: s.events(limit=v),
    "events.last": lambda e, s, v: s.events(last=v),
    "events.turn_id": lambda e, s, v: s.events(turn_id=v),
    "events.types": lambda e, s, v: s.events(types=[v]),
    "begin_turn.author": lambda e, s, v: s.begin_turn(author=v).end(),
    "begin_turn.request_id": lambda e, s, v: s.begin_turn(request_id=v).end(),
    "open_turn": lambda e, s, v: s.open_turn(v),
    "import_messages": lambda e, s, v: s.import_messages(v),
    "import_messages.message": lambda e, s, v: s.import_messages([{"role": "user", "content": v}]),
    "read_offloaded": lambda e, s, v: s.read_offloaded(v),
    "read_offloaded.offset": lambda e, s, v: s.read_offloaded("out_x", offset=v),
    "restore_image": lambda e, s, v: s.restore_image(v),
    "get_blob": lambda e, s, v: e.get_blob(v, "u1"),
    "memory.add": lambda e, s, v: e.memory.add("u1", v),
    "memory.add.user_id": lambda e, s, v: e.memory.add(v, "likes tea"),
    "memory.add.data": lambda e, s, v: e.memory.add("u1", "likes tea", data=v),
    "memory.add.confidence": lambda e, s, v: e.memory.add("u1", "likes tea", confidence=v),
    "memory.add.kind": lambda e, s, v: e.memory.add("u1", "likes tea", kind=v),
    "memory.get": lambda e, s, v: e.memory.get("u1", v),
    "memory.list.limit": lambda e, s, v: e.memory.list("u1", limit=v),
    "memory.list.kinds": lambda e, s, v: e.memory.list("u1", kinds=v),
    "memory.search": lambda e, s, v: e.memory.search("u1", v),
    "memory.search.limit": lambda e, s, v: e.memory.search("u1", "tea", limit=v),
    "memory.search.filters": lambda e, s, v: e.memory.search("u1", "tea", filters=v),
    "memory.update": lambda e, s, v: e.memory.update(
        "u1", e.memory.add("u1", "likes coffee").memory_id, content=v
    ),
    "memory.history": lambda e, s, v: e.memory.history("u1", v),
    "memory.delete": lambda e, s, v: e.memory.delete("u1", v),
    "delete_user_data": lambda e, s, v: e.delete_user_data(v) if v != "u1" else None,
}


@pytest.fixture
def seeded(engine: ContextEngine) -> tuple[ContextEngine, Session]:
    session = engine.create_session("u1", "agent", session_id="s-fixed")
    with session.turn() as turn:
        turn.add_message("user", "book a flight to Oslo")
        call = turn.add_tool_call("search_flights", {"to": "OSL"})
        turn.add_tool_result(call.call_id, content="3 flights", images=[make_png()])
    engine.memory.add("u1", "u1 likes green tea")
    return engine, session


@settings(
    max_examples=int(os.environ.get("BOUNDARY_EXAMPLES", "250")),
    deadline=None,
    derandomize=not os.environ.get("BOUNDARY_EXAMPLES"),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(operation=st.sampled_from(sorted(OPERATIONS)), value=_VALUE)
def test_any_input_raises_only_agentctx_errors_and_keeps_the_log(
    seeded: tuple[ContextEngine, Session], operation: str, value: Any
) -> None:
    engine, session = seeded
    before = session.events()
    with contextlib.suppress(AgentCtxError):
        OPERATIONS[operation](engine, session, value)
    reopened = engine.get_session(session.id, "u1")
    after = reopened.events()
    assert after[: len(before)] == before, operation
    assert reopened.verify().ok, operation
    assert engine.memory.search("u1", "green tea"), operation


# The inputs that escaped before, one by one --------------------------------------------


@pytest.mark.parametrize(
    "text", ["a\ud800", "\udfff tail", "nul \x00 inside"], ids=["surrogate", "low", "nul"]
)
def test_text_that_cannot_be_stored_is_refused_alike(engine: ContextEngine, text: str) -> None:
    session = engine.create_session("u1", "agent")
    with pytest.raises(InvalidEvent):
        session.add_message("user", text)
    with pytest.raises(InvalidEvent):
        session.add_tool_call("lookup", {text: 1})
    with pytest.raises(InvalidEvent):
        session.add_message("user", "hi", author=text)
    with pytest.raises(InvalidInput):
        session.update_state({"k": text})
    with pytest.raises(InvalidInput):
        engine.memory.add("u1", text)
    with pytest.raises(InvalidInput):
        engine.memory.search("u1", text)
    with pytest.raises(InvalidInput):
        engine.get_session(text, "u1")
    with pytest.raises(InvalidInput):
        session.events(types=[text])
    assert session.events() == []
    assert session.verify().ok


def test_helpers_refuse_wrong_types_as_invalid_event(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "agent")
    with pytest.raises(InvalidEvent, match="metadata"):
        session.add_tool_call("lookup", {}, metadata=[1])  # type: ignore[arg-type]
    with pytest.raises(InvalidEvent):
        session.add_message("user", 123)  # type: ignore[arg-type]
    with pytest.raises(InvalidEvent, match="JSON object"):
        session.add_tool_call("lookup", "notadict")  # type: ignore[arg-type]
    call = session.add_tool_call("lookup", {})
    with pytest.raises(InvalidEvent, match="duration_ms"):
        session.add_tool_result(call.call_id, content="ok", duration_ms=float("nan"))
    with pytest.raises(InvalidEvent, match="duration_ms"):
        session.add_tool_result(call.call_id, content="ok", duration_ms=-5)
    with pytest.raises(InvalidInput, match="state"):
        session.update_state(None)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="query"):
        session.build_context(123)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput, match="limit"):
        session.events(limit=-1)
    assert [e.type for e in session.events()] == ["tool_call"]


def test_values_are_left_out_of_error_messages(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "agent")
    secret = "alice.wong@example.com"
    with pytest.raises(AgentCtxError) as caught:
        session.add_message("user", "hi", metadata={"contact": secret + "\x00"})
    assert secret not in str(caught.value)
    with pytest.raises(AgentCtxError) as caught:
        engine.get_session(secret + "\x00", "u1")
    assert secret not in str(caught.value)
    with pytest.raises(AgentCtxError) as caught:
        session.add_message("user", 42, author=secret)  # type: ignore[arg-type]
    assert secret not in str(caught.value)


def test_ttl_must_be_positive_and_bounded(engine: ContextEngine) -> None:
    with pytest.raises(InvalidInput, match="ttl"):
        engine.create_session("u1", "agent", ttl=timedelta(seconds=-1))
    with pytest.raises(InvalidInput, match="ttl"):
        engine.create_session("u1", "agent", ttl=timedelta(days=10**6))
    session = engine.create_session("u1", "agent", ttl=timedelta(hours=1))
    assert session.info.expires_at is not None
    assert session.info.expires_at > datetime.now(UTC)


def test_nan_in_a_context_configuration_is_refused(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "agent")
    split = {"system": float("nan"), "recent": 1.0}
    with pytest.raises(InvalidInput, match="budget_split"):
        session.build_context("x", 1000, budget_split=split)
    # The same shares from a configuration file or an agent's settings.
    with pytest.raises(ConfigError, match="budget_split"):
        parse_context_config({"budget_split": split})
    with pytest.raises(ConfigError, match="low_water"):
        parse_context_config({"adaptive": {"low_water": float("nan")}})


def test_a_memory_without_an_indexable_word_is_stored_and_searchable(
    engine: ContextEngine,
) -> None:
    for content in ("!!!", "😀😀", "—"):
        memory = engine.memory.add("u1", content)
        assert engine.memory.get("u1", memory.memory_id).content == content
    engine.memory.add("u1", "u1 flies to Oslo on Fridays")
    hits = engine.memory.search("u1", "Oslo")
    assert [hit.memory.content for hit in hits][:1] == ["u1 flies to Oslo on Fridays"]


def _png_header_only(width: int, height: int) -> bytes:
    """A PNG that declares ``width`` x ``height`` pixels but holds one row of data: a
    decompression bomb's header, a few hundred bytes."""

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    header = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    pixels = zlib.compress(b"\x00" * (width + 1))
    return (
        b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", pixels) + chunk(b"IEND", b"")
    )


def test_images_are_measured_before_they_are_decoded(db_url: str, tmp_path: Path) -> None:
    with ContextEngine(db_url, home=tmp_path / "home", max_image_pixels=100 * 100) as engine:
        session = engine.create_session("u1", "agent")
        with pytest.raises(ImageTooLarge, match="max_image_pixels"):
            session.add_message("user", "look", images=[make_png(120, 100)])
        with pytest.raises(ImageTooLarge):
            session.add_message("user", "bomb", images=[_png_header_only(50_000, 50_000)])
        stored = session.add_message("user", "fits", images=[make_png(100, 100)])
        assert stored.images[0].width == 100
        assert [e.seq for e in session.events()] == [stored.seq]


def test_the_default_pixel_limit_refuses_a_bomb_quickly(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "agent")
    with pytest.raises(ImageTooLarge):
        session.add_message("user", "bomb", images=[_png_header_only(13_000, 13_000)])
    assert session.events() == []


@pytest.mark.parametrize("number", [1e16, -0.0, 1.2345678901234568e17, -4e18, 1e300, 0.1])
def test_numbers_read_back_as_written_so_the_chain_verifies(
    engine: ContextEngine, number: float
) -> None:
    # PostgreSQL's JSONB reads 1e16 back as an integer and -0.0 as 0.0.
    session = engine.create_session("u1", "agent", state={"n": number})
    event = session.add_event("note", "n", payload={"n": number}, metadata={"n": number})
    session.add_tool_result(session.add_tool_call("t", {"n": number}).call_id, data=[number])
    assert session.verify().ok
    stored = engine.get_session(session.id, "u1").events(start_seq=event.seq)[0]
    assert stored.payload["n"] == number
    assert stored.hash == event.hash


def test_a_sessions_own_ttl_is_kept_by_its_writes(engine: ContextEngine) -> None:
    # A write renews the expiry by the session's own TTL, not the engine's 30 days.
    session = engine.create_session("u1", "agent", ttl=timedelta(hours=1))
    default = engine.create_session("u1", "agent")
    for _ in range(3):
        session.add_message("user", "hi")
        default.add_message("user", "hi")
    own = engine.get_session(session.id, "u1").info.expires_at
    engines = engine.get_session(default.id, "u1").info.expires_at
    now = datetime.now(UTC)
    assert own is not None and engines is not None
    assert timedelta(minutes=59) < own - now <= timedelta(hours=1)
    assert engines - now > timedelta(days=29)
