"""The ledger's values are merged once per run of events and chosen without looking at
values that could not fit: the line must be exactly what a plain choice over every value
gives, and a user's erasure must drop what was kept."""

from __future__ import annotations

import gc
import json
import random
from collections.abc import Sequence

from hypothesis import given, settings
from hypothesis import strategies as st

from agentctx import ContextEngine
from agentctx.context.ledger import (
    CHUNK_SEQS,
    LEDGER_LABEL,
    Named,
    NamedValues,
    _render,
    _values_of,
    ledger_line,
    named_values,
)
from agentctx.events import Event, EventType
from agentctx.tokens import EstimateCounter


def reference_line(
    counter: EstimateCounter, values: Sequence[Named], shown: str, room: int
) -> tuple[str | None, int]:
    """The ledger chosen the plain way: every value not shown, ranked, each counted."""
    missing = [v for v in values if v.value not in shown]
    if not missing:
        return None, 0
    ranked = sorted(missing, key=lambda v: (not v.given, -v.last_seq, v.first_seq))
    label = counter.count(LEDGER_LABEL)
    if label >= room:
        return None, 0
    key_costs = {v.key: counter.count(f"{v.key}=") + 1 for v in ranked if v.key}
    chosen: list[Named] = []
    opened: set[str | None] = set()
    spent = label
    for value in ranked:
        cost = counter.count(value.value) + 1
        extra = 0 if value.key in opened else key_costs.get(value.key or "", 1)
        if spent + cost + extra > room:
            continue
        chosen.append(value)
        opened.add(value.key)
        spent += cost + extra
    while chosen:
        line = _render(chosen)
        if counter.count(line) <= room:
            return line, counter.count(line)
        chosen.pop()
    return None, 0


_VALUE = st.text(alphabet="ABCDEFGHJK0123456789_-xyz", min_size=1, max_size=14)
_NAMED = st.builds(
    Named,
    value=_VALUE,
    key=st.sampled_from([None, "user_id", "flight", "reservation_id", "a_rather_long_key_name"]),
    first_seq=st.integers(1, 50),
    given=st.booleans(),
    last_seq=st.integers(1, 50),
)


@settings(max_examples=300, deadline=None, derandomize=True)
@given(
    values=st.lists(_NAMED, max_size=60, unique_by=lambda v: v.value),
    shown_count=st.integers(0, 20),
    room=st.integers(0, 120),
)
def test_the_line_is_what_a_plain_choice_over_every_value_gives(
    values: list[Named], shown_count: int, room: int
) -> None:
    counter = EstimateCounter()
    shown = " ".join(v.value for v in values[:shown_count])
    expected = reference_line(counter, values, shown, room)
    assert ledger_line(counter, values, shown, room) == expected
    assert ledger_line(counter, NamedValues(values), shown, room) == expected


def test_a_run_of_events_is_merged_once_until_an_erasure(quick_engine: ContextEngine) -> None:
    session = quick_engine.create_session("u1", "desk")
    session.add_message("user", "I am user mia_li_3668, order ORD1234.")
    call = session.add_tool_call("get_order", {"order_id": "ORD1234"}, call_id="c1")
    session.add_tool_result(call.call_id, content='{"order_id": "ORD1234", "carrier": "UPS"}')
    events = session.events()
    first = named_values(events)
    entries = {(v.key, v.value) for v in first}
    assert {(None, "mia_li_3668"), ("order_id", "ORD1234")} <= entries
    assert named_values(session.events()) is first  # the same run, read again: kept
    assert named_values(events[:1]) is not first  # another run: its own values
    quick_engine.delete_user_data("u1")  # an erasure drops what was kept by text
    again = named_values(events)
    assert again is not first
    assert [(v.key, v.value) for v in again] == [(v.key, v.value) for v in first]


def test_kept_values_are_not_tracked_by_the_garbage_collector(
    quick_engine: ContextEngine,
) -> None:
    # A long session's ledgers keep a hundred thousand values between builds; each object
    # the collector tracks lengthens the full collections that pause the agent's calls.
    session = quick_engine.create_session("u1", "desk")
    for k in range(20):
        call = session.add_tool_call("get_order", {"order_id": f"ORD{k:04d}"}, call_id=f"c{k}")
        payload = {"order_id": f"ORD{k:04d}", "carrier": "UPS", "parcel": f"PCL-{k:04d}"}
        session.add_tool_result(call.call_id, content=json.dumps(payload))
    values = named_values(session.events())
    assert len(values) >= 40
    gc.collect()
    kept = values.ranked
    assert not any(gc.is_tracked(entry) for entry in kept)
    assert [v.value for v in values][:2] == ["ORD0000", "UPS"]  # read back as Named


def plain_merge(events: Sequence[Event]) -> list[Named]:
    """Every value the events name, once, folded event by event in seq order: the
    first key named, the first and last seq, given by any."""
    found: dict[str, Named] = {}
    for event in events:
        given = event.type in (EventType.USER_INPUT, EventType.TOOL_CALL)
        for key, value in dict.fromkeys(_values_of(event)):
            seen = found.get(value)
            if seen is None:
                found[value] = Named(value, key, event.seq, given, event.seq)
            else:
                found[value] = Named(
                    value,
                    seen.key or key,
                    seen.first_seq,
                    seen.given or given,
                    max(seen.last_seq, event.seq),
                )
    return list(found.values())


def test_sliding_runs_merge_as_a_plain_fold_over_their_events(
    quick_engine: ContextEngine,
) -> None:
    # A digest's run slides over the session: chunks of it are merged once and reused
    # by the next runs; whatever the run, the values must be those of a plain fold.
    session = quick_engine.create_session("u1", "desk")
    rng = random.Random(7)
    for k in range(60):
        order = f"ORD{rng.randrange(12):04d}"  # orders come back across turns
        session.add_message("user", f"I am user mia_li_3668; where is order {order}?")
        call = session.add_tool_call("get_order", {"order_id": order}, call_id=f"c{k}")
        payload = {"order_id": order, "carrier": rng.choice(["UPS", "DHL"]), "box": f"B{k}"}
        if k % 3 == 0:
            payload["status"] = None  # no string: nothing to name
        session.add_tool_result(call.call_id, content=json.dumps(payload))
        session.add_message("assistant", f"Order {order} ships with {payload['carrier']}.")
    events = session.events()
    assert len(events) > 3 * CHUNK_SEQS
    runs = [(0, len(events)), (1, 2), (CHUNK_SEQS - 1, CHUNK_SEQS + 1)]
    runs += [(start, start + 120) for start in range(0, len(events) - 120, 7)]  # slides
    runs += sorted((rng.randrange(len(events)), rng.randrange(len(events))) for _ in range(40))
    for start, end in runs:
        run = events[start:end]
        assert list(named_values(run)) == plain_merge(run), (start, end)
