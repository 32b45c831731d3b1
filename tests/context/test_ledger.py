"""The ledger of a compacted block: the ids, codes, dates and names its lines leave out,
each once, so an agent can still pass them to its next tool call. On SQLite and
PostgreSQL."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from agentctx import ContextEngine
from agentctx.context.ledger import LEDGER_LABEL, ledger_line, named_values
from agentctx.sessions.session import Session
from agentctx.tokens import message_tokens


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(
        url=db_url, home=home, embeddings={"provider": "hashing"}, jobs="inline"
    ) as eng:
        yield eng


@pytest.fixture
def plain(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """The same store without ledgers (``ledger_share`` 0)."""
    with ContextEngine(
        url=db_url,
        home=home,
        embeddings={"provider": "hashing"},
        jobs="inline",
        context={"adaptive": {"ledger_share": 0}},
    ) as eng:
        yield eng


def text_of(message: dict[str, Any]) -> str:
    content = message.get("content")
    return content if isinstance(content, str) else ""


def order_turn(session: Session, i: int) -> None:
    """A request whose tool returns a long record: most of it is filler, a few fields are
    the ids the agent will need again."""
    with session.turn() as turn:
        turn.add_message("user", f"My account is acct_{i:03d}_x, please look at my orders.")
        call = turn.add_tool_call("get_orders", {"account": f"acct_{i:03d}_x"}, call_id=f"c{i}")
        record = {
            "account": f"acct_{i:03d}_x",
            "orders": [
                {"order_id": f"ORD{i:03d}{k}", "note": "a long description " * 12} for k in range(3)
            ],
        }
        turn.add_tool_result(call.call_id, content=json.dumps(record))
        turn.add_message("assistant", f"You have three orders, the first is ORD{i:03d}0. " * 3)


def ledger_of(window_messages: list[dict[str, Any]]) -> str:
    for message in window_messages:
        for line in text_of(message).splitlines():
            if line.startswith(LEDGER_LABEL):
                return line
    return ""


def test_ids_the_compacted_lines_leave_out_stay_in_the_window(
    engine: ContextEngine, plain: ContextEngine
) -> None:
    session = engine.create_session("u1", "desk")
    for i in range(12):
        order_turn(session, i)
    window = session.build_context(query="which orders do I have?", budget=2500)
    assert window.tokens <= 2500
    ledger = ledger_of(window.messages)
    assert ledger, "turns left the history: their ids are listed"
    text = "\n".join(text_of(m) for m in window.messages)
    # The accounts and order ids of the turns that left the history, listed by what they
    # are (the key), each once, while the filler text is not.
    assert re.search(r"account=(acct_\d{3}_x, )*acct_\d{3}_x", ledger)
    listed = re.findall(r"ORD\d{4}", ledger)
    assert listed and len(listed) == len(set(listed))
    assert "a long description" not in ledger
    # Without the ledger, fewer of the session's ids are in the window.
    bare = plain.get_session(session.id, "u1").build_context(
        query="which orders do I have?", budget=2500
    )
    assert not ledger_of(bare.messages)
    every_id = {f"ORD{i:03d}{k}" for i in range(12) for k in range(3)}
    bare_text = "\n".join(text_of(m) for m in bare.messages)
    assert sum(v in text for v in every_id) > sum(v in bare_text for v in every_id)


def test_the_ledger_is_the_same_for_the_same_log(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "desk")
    for i in range(12):
        order_turn(session, i)
    first = session.build_context(query="orders", budget=2500)
    second = session.build_context(query="a different question", budget=2500)
    assert ledger_of(first.messages) == ledger_of(second.messages) != ""


def test_ledger_lists_what_is_missing_once_grouped_by_key_within_its_room(
    engine: ContextEngine,
) -> None:
    session = engine.create_session("u1", "desk")
    session.add_message("user", "I'm user mia_li_3668, booking for May 20th, see you at 10.")
    call = session.add_tool_call("get_user", {"user_id": "mia_li_3668"}, call_id="u")
    session.add_tool_result(
        call.call_id,
        content=json.dumps(
            {
                "name": "Mia Li",
                "payment_methods": [{"id": "credit_card_4421486"}, {"id": "gift_card_1"}],
                "bio": "a sentence far too long to be a value anyone passes to a tool call",
                "flags": [True, 3],
            }
        ),
    )
    events = session.events()
    values = named_values(events)
    entries = {(v.key, v.value) for v in values}
    # First named in the user's text, keyed by what a tool call later said it is.
    assert ("user_id", "mia_li_3668") in entries
    assert ("name", "Mia Li") in entries
    assert ("id", "credit_card_4421486") in entries and ("id", "gift_card_1") in entries
    assert not any(v.value.startswith("a sentence") for v in values)  # prose
    assert not any(v.value in ("10", "20th") and v.key for v in values)
    assert [v.value for v in values].count("mia_li_3668") == 1
    counter = engine.token_counter()
    line, tokens = ledger_line(counter, values, shown="Mia Li", room=200)
    assert line is not None and line.startswith(LEDGER_LABEL)
    assert "Mia Li" not in line  # already shown
    assert "id=credit_card_4421486, gift_card_1" in line  # one key, its values together
    assert tokens == counter.count(line) <= 200
    # A short room keeps what the user gave and the agent passed on before what a tool
    # returned.
    room = counter.count(f"{LEDGER_LABEL} user_id=mia_li_3668") + 2
    short, short_tokens = ledger_line(counter, values, shown="", room=room)
    assert short is not None and "user_id=mia_li_3668" in short
    assert "credit_card" not in short and short_tokens <= room
    assert ledger_line(counter, values, shown="", room=2) == (None, 0)
    assert message_tokens(counter, {"role": "system", "content": line}) > tokens


def test_an_older_turn_shortened_at_its_front_lists_what_it_omitted(
    engine: ContextEngine,
) -> None:
    session = engine.create_session("u1", "desk")
    with session.turn() as turn:
        turn.add_message("user", "Check all my parcels please.")
        for k in range(10):
            call = turn.add_tool_call("track", {"parcel": f"PCL{k:04d}"}, call_id=f"t{k}")
            turn.add_tool_result(
                call.call_id,
                content=json.dumps(
                    {
                        "parcel": f"PCL{k:04d}",
                        "depot": f"depot_{k}x",
                        "log": " ".join(f"scan{j}" for j in range(120)),
                    }
                ),
            )
    session.add_message("user", "Thanks. What about the last one?")
    window = session.build_context(query="the last parcel", budget=2000)
    assert window.tokens <= 2000
    texts = [text_of(m) for m in window.messages]
    marker = next(t for t in texts if "events of this turn omitted to fit the budget" in t)
    chat = "\n".join(
        t for m, t in zip(window.messages, texts, strict=True) if m["role"] != "system"
    ) + "".join(
        str(c["function"]["arguments"]) for m in window.messages for c in m.get("tool_calls") or ()
    )
    omitted = [f"PCL{k:04d}" for k in range(10) if f"PCL{k:04d}" not in chat]
    assert omitted, "the turn was shortened"
    assert LEDGER_LABEL in marker
    assert all(value in marker for value in omitted)
    assert window.messages[-1]["content"] == "Thanks. What about the last one?"
    # Listing the values never costs the newest messages their place as chat.
    assert [m.get("tool_call_id") for m in window.messages[-4:-1]] == ["t8", None, "t9"]
    assert window.messages[-3]["tool_calls"][0]["id"] == "t9"


def test_a_compacted_event_longer_than_the_room_shows_shortened(engine: ContextEngine) -> None:
    session = engine.create_session("u1", "desk")
    for i in range(8):
        with session.turn() as turn:
            turn.add_message("user", f"Export report {i}.")
            # Parallel calls: one atom of six lines, together far over the digest's room.
            calls = [
                turn.add_tool_call("export", {"report": f"R{i}", "part": p}, call_id=f"e{i}{p}")
                for p in range(3)
            ]
            for p, call in enumerate(calls):
                rows = [
                    {"row": f"row_{i}_{p}_{k}", "value": f"cell {k * 7919 % 1000}"}
                    for k in range(30)
                ]
                turn.add_tool_result(call.call_id, content=json.dumps(rows))
    window = session.build_context(query="export", budget=3000)
    digest = next(
        t for t in map(text_of, window.messages) if t.startswith("Earlier in this session")
    )
    # The newest atom before the history is far longer than the digest's room: shown
    # shortened (its calls, the start of its rows), not left out with all before it.
    history_start = next(
        int(t.split()[2].rstrip("."))
        for m, t in zip(window.messages, map(text_of, window.messages), strict=True)
        if m["role"] == "user"
    )
    before = history_start - 1
    assert f'called export({{"part":0,"report":"R{before}"}})' in digest
    assert f"row=row_{before}_0_0" in digest


def test_listing_omitted_values_never_costs_the_newest_messages(
    engine: ContextEngine, plain: ContextEngine
) -> None:
    session = engine.create_session("u1", "desk")
    with session.turn() as turn:
        turn.add_message("user", "Track my three parcels.")
        for k in range(3):
            call = turn.add_tool_call("track", {"parcel": f"PCL{k:04d}"}, call_id=f"t{k}")
            log = " ".join(f"scan{j}" for j in range(150))
            turn.add_tool_result(
                call.call_id, content=json.dumps({"parcel": f"PCL{k:04d}", "log": log})
            )
    question = "And the last one?"
    session.add_message("user", question)

    def newest_as_chat(messages: list[dict[str, Any]]) -> list[Any]:
        return [
            m.get("tool_call_id") or [c["id"] for c in m.get("tool_calls") or ()] or m["content"]
            for m in messages
            if m["role"] != "system"
        ][-4:]

    listed = 0
    bare = plain.get_session(session.id, "u1")
    for budget in range(500, 1600, 25):
        window = session.build_context(query=question, budget=budget)
        listed += any(
            "omitted to fit the budget" in text_of(m) and LEDGER_LABEL in text_of(m)
            for m in window.messages
        )
        without = bare.build_context(query=question, budget=budget)
        assert newest_as_chat(window.messages) == newest_as_chat(without.messages), budget
    assert listed
