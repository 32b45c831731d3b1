"""What a build reuses must not carry one stage's changes into another: an atom rendered
twice in a build (a history placed again once it slid), a compact block kept between
builds (a digest between two slides) and an atom's block lines kept between builds (older
events measured for the same query) come back as they were made, and an erasure drops
the blocks and lines (they hold users' text)."""

from __future__ import annotations

import gc
import json

from agentctx import ContextEngine
from agentctx.cache.bounded import Lru
from agentctx.context.config import ContextConfig
from agentctx.context.images import RenderedImageCache
from agentctx.context.lines import compact_block, lines_of
from agentctx.context.pricing import Pricer
from agentctx.context.units import atoms_of
from agentctx.context.window_images import ImageAccess
from agentctx.events import Event
from agentctx.tokens import EstimateCounter


def _events(quick_engine: ContextEngine) -> list[Event]:
    session = quick_engine.create_session("u1", "desk")
    with session.turn() as turn:
        turn.add_message("user", "Find order ORD-7731 and the parcel it shipped in.")
        call = turn.add_tool_call("get_order", {"order_id": "ORD-7731"}, call_id="c1")
        record = {"order_id": "ORD-7731", "parcel": "PCL-0042", "notes": "fragile " * 300}
        turn.add_tool_result(call.call_id, content=json.dumps(record))
        turn.add_message("assistant", "It shipped in parcel PCL-0042.")
    return session.events()


def _pricer(blocks: Lru | None = None, lines: Lru | None = None) -> Pricer:  # type: ignore[type-arg]
    return Pricer(
        EstimateCounter(),
        config=ContextConfig(),
        user_id="u1",
        session_id="s",
        budget=4000,
        images=ImageAccess(None, None, RenderedImageCache()),
        tool_output=None,
        blocks=blocks,
        lines=lines,
    )


def test_an_atom_cut_by_one_stage_renders_whole_for_the_next(quick_engine: ContextEngine) -> None:
    pricer = _pricer()
    atom = next(a for a in atoms_of(_events(quick_engine)) if len(a.events) == 2)  # call + result
    first = pricer.piece(atom)
    whole = [dict(m) for m in first.messages]
    assert pricer.cut(first, first.tokens // 2)  # a stage shortens what it was given
    again = pricer.piece(atom)
    assert again.messages == whole
    assert again.tokens > first.tokens
    assert again.messages is not first.messages


def test_a_kept_block_comes_back_as_made_until_an_erasure(quick_engine: ContextEngine) -> None:
    blocks: Lru = Lru(8)  # type: ignore[type-arg]
    atoms = atoms_of(_events(quick_engine))
    made = compact_block(_pricer(blocks), "Earlier:", atoms, 120, ledger_share=0.5)
    assert made.message is not None and "ORD-7731" in made.message["content"]
    made.message["content"] = "changed by a stage"  # the caller's copy only
    again = compact_block(_pricer(blocks), "Earlier:", atoms, 120, ledger_share=0.5)
    fresh = compact_block(_pricer(), "Earlier:", atoms, 120, ledger_share=0.5)
    assert again.message == fresh.message and again.tokens == fresh.tokens
    assert again.shown == fresh.shown
    other_room = compact_block(_pricer(blocks), "Earlier:", atoms, 60, ledger_share=0.5)
    assert other_room.tokens <= 60


def _fields(line: object) -> tuple[object, ...]:
    return tuple(getattr(line, name) for name in line.__slots__)  # type: ignore[attr-defined]


def test_kept_lines_are_those_made_for_the_same_terms_and_limit(
    quick_engine: ContextEngine,
) -> None:
    lines: Lru = Lru(8)  # type: ignore[type-arg]
    long_text = (
        "The parcel left the depot on Monday. The weather was mild all week. "
        "Your refund for order ORD-7731 was approved today. " * 6
    )
    session = quick_engine.create_session("u1", "desk")
    event = session.add_message("assistant", long_text)
    (atom,) = atoms_of([event])
    refund, weather = frozenset({"refund"}), frozenset({"weather"})
    made = lines_of(atom, refund, _pricer(lines=lines), 40)
    again = lines_of(atom, refund, _pricer(lines=lines), 40)
    fresh = lines_of(atom, refund, _pricer(), 40)
    assert [_fields(x) for x in again] == [_fields(x) for x in fresh] == [_fields(x) for x in made]
    assert all(a is not b for a, b in zip(again, made, strict=True))  # told apart by identity
    # Other terms keep other sentences; another limit, another length.
    (about_weather,) = lines_of(atom, weather, _pricer(lines=lines), 40)
    assert "weather" in about_weather.text and "refund" in made[0].text
    (longer,) = lines_of(atom, refund, _pricer(lines=lines), 120)
    assert longer.text_tokens > made[0].text_tokens
    assert len(lines) == 3


def test_an_erasure_drops_the_blocks_windows_kept(quick_engine: ContextEngine) -> None:
    session = quick_engine.create_session("u1", "desk")
    for k in range(30):
        with session.turn() as turn:
            turn.add_message("user", f"Look up order ORD-{k:04d} please.")
            call = turn.add_tool_call("get_order", {"order_id": f"ORD-{k:04d}"}, call_id=f"c{k}")
            payload = {"order_id": f"ORD-{k:04d}", "notes": "x " * 400}
            turn.add_tool_result(call.call_id, content=json.dumps(payload))
            turn.add_message("assistant", f"Order ORD-{k:04d} is on its way.")
    window = session.build_context(query="order status", budget=2000)
    summary = next(s for s in window.report.sections if s.name == "summary")
    assert summary.event_ids  # the history slid: a digest was made and kept
    kept = quick_engine.context_builder._known_blocks
    measured = quick_engine.context_builder._known_lines
    assert any(len(blocks) for blocks in kept.values())
    assert any(len(lines) for lines in measured.values())  # older events measured
    quick_engine.delete_user_data("u1")
    assert not any(len(blocks) for blocks in kept.values())
    assert not any(len(lines) for lines in measured.values())


def test_kept_lines_are_not_tracked_by_the_garbage_collector(quick_engine: ContextEngine) -> None:
    lines: Lru = Lru(8)  # type: ignore[type-arg]
    made = lines_of(atoms_of(_events(quick_engine))[0], frozenset(), _pricer(lines=lines), 40)
    assert made
    gc.collect()
    (key,) = lines.keys()
    kept = lines.get(key)
    assert kept is not None and not any(gc.is_tracked(fields) for fields in kept)
