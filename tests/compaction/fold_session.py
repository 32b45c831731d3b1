"""A long tool-using session, written through the engine's public API, for fold tests."""

from __future__ import annotations

from typing import Any

from agentctx import ContextEngine
from agentctx.compaction.fold import EventFolder, FoldConfig, FoldSummary
from agentctx.events import Event, EventType
from agentctx.llm.chat import LLM
from agentctx.sessions.session import Session

THINKING = (
    "Turn {i}: I compared the fares for route R{i} across three carriers, checked the "
    "baggage rules and the refund policy, and noticed that the evening flight on day {i} "
    "is cheaper by {i}4 dollars but lands after the last train. The user prefers trains "
    "over taxis, so I will weigh the connection time before recommending anything. "
)


def flights(i: int, n: int = 6) -> dict[str, Any]:
    """A tool's JSON answer: a list of flights."""
    return {
        "route": f"R{i}",
        "flights": [
            {"id": f"F{i}-{k}", "price": 100 + i * 7 + k, "departs": f"0{k}:{i % 60:02d}"}
            for k in range(n)
        ],
    }


def tool_turn(
    session: Session,
    i: int,
    *,
    fail: bool = False,
    parallel: bool = False,
    hitl: bool = False,
    thinking: int = 2,
) -> None:
    """One turn: the user asks, the agent thinks, calls tools, answers (or hits an error)."""
    with session.turn() as turn:
        turn.add_message("user", f"Find me the cheapest flight for route R{i}.")
        turn.add_message("assistant", THINKING.format(i=i) * thinking)
        first = turn.add_tool_call("search_flights", {"route": f"R{i}", "max_stops": i % 3})
        second = turn.add_tool_call("rail_times", {"station": f"S{i}"}) if parallel else None
        if fail:
            turn.add_tool_result(first.call_id, content=f"timeout after {i} s", is_error=True)
            turn.add_event("error", f"search_flights failed on route R{i}")
        else:
            turn.add_tool_result(first.call_id, data=flights(i))
        if second is not None:
            turn.add_tool_result(second.call_id, data={"trains": [f"T{i}", f"T{i + 1}"]})
        if hitl:
            turn.add_event("hitl", f"User confirmed route R{i}.")
        turn.add_event("final", f"The cheapest flight on R{i} is F{i}-0.")


def long_session(engine: ContextEngine, turns: int, user: str = "u1", **kw: Any) -> Session:
    session = engine.create_session(user_id=user)
    for i in range(turns):
        tool_turn(session, i, fail=i % 7 == 3, parallel=i % 5 == 2, hitl=i % 11 == 5, **kw)
    return session


def folder(
    engine: ContextEngine,
    llm: LLM | None = None,
    **config: Any,
) -> EventFolder:
    """A folder over ``engine``'s store, the way the engine wires one."""
    config.setdefault("enabled", True)

    return EventFolder(
        engine.db,
        engine._service.events,  # what the engine wires: the session service's reader
        engine.token_counter(),
        llm,
        config=FoldConfig(**config),
    )


def coverage(item: Event | FoldSummary) -> list[int]:
    """The seqs a view item stands for."""
    if isinstance(item, Event):
        return [item.seq]
    return [s for a, b in item.seq_ranges for s in range(a, b + 1)]


def covered_types(fold: FoldSummary, events: list[Event]) -> set[EventType]:
    seqs = set(coverage(fold))
    return {e.type for e in events if e.seq in seqs}
