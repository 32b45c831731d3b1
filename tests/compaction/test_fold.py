"""Hybrid compaction of the event log: thresholds, key events, call/result pairs, exact
coverage, recursive summaries and the folded view."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from pydantic import ValidationError
from sqlalchemy import select

from agentctx import ContextEngine
from agentctx.compaction.fold import DEFAULT_KEY_TYPES, EventFolder, FoldConfig, FoldSummary
from agentctx.compaction.fold.plan import top_level
from agentctx.events import Event, EventType
from agentctx.jobs import Job
from agentctx.storage.schema import summaries
from compaction.fold_session import (
    coverage,
    covered_types,
    folder,
    long_session,
    tool_turn,
)

SMALL = {"low_tokens": 600, "high_tokens": 1200, "summary_tokens": 60}
"""Thresholds that a few dozen turns pass several times over."""

NOT_TOOL_RESULTS = frozenset(DEFAULT_KEY_TYPES - {EventType.TOOL_RESULT})


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(
        url=db_url, home=home, jobs="manual", embeddings={"provider": "hashing"}
    ) as eng:
        yield eng


def assert_exact_view(fold: EventFolder, session_id: str, events: list[Event]) -> None:
    """Every event stands in the view exactly once: verbatim, or in one top-level fold."""
    view = fold.view("u1", session_id)
    seqs = [seq for item in view for seq in coverage(item)]
    assert Counter(seqs) == Counter(e.seq for e in events)
    assert [item.seq for item in view] == sorted(item.seq for item in view)


def assert_pairs_whole(folds: list[FoldSummary], events: list[Event]) -> None:
    """No fold separates a tool call from its results."""
    by_call: dict[str, list[int]] = {}
    for event in events:
        if event.call_id and event.type in (EventType.TOOL_CALL, EventType.TOOL_RESULT):
            by_call.setdefault(event.call_id, []).append(event.seq)
    for fold in folds:
        covered = set(coverage(fold))
        for seqs in by_call.values():
            inside = [s in covered for s in seqs]
            assert all(inside) or not any(inside), (fold.seq_ranges, seqs)


# Configuration -------------------------------------------------------------------------


def test_config_defaults_and_validation() -> None:
    config = FoldConfig()
    assert (config.enabled, config.low_tokens, config.high_tokens) == (False, 4000, 8000)
    assert config.key_types == {"user_input", "tool_result", "final", "error", "hitl"}
    assert config.summaries_budget == 2000
    with pytest.raises(ValidationError, match="below high_tokens"):
        FoldConfig(low_tokens=8000, high_tokens=8000)
    with pytest.raises(ValidationError):
        FoldConfig(thresholds=3)  # type: ignore[call-arg]
    assert FoldConfig(key_types=["user_input"]).key_types == {EventType.USER_INPUT}


# Thresholds ----------------------------------------------------------------------------


def test_default_thresholds_fold_from_above_8000_down_to_4000(engine: ContextEngine) -> None:
    fold = folder(engine)
    session = engine.create_session(user_id="u1")
    for i in range(40):
        tool_turn(session, i, thinking=3)
        if fold.live_tokens("u1", session.id) > 8000:
            break
    before = fold.live_tokens("u1", session.id)
    assert before > 8000
    written = fold.maybe_fold("u1", session.id)
    assert written and all(f.level == 0 and f.method == "offline" for f in written)
    after = fold.live_tokens("u1", session.id)
    # Down to low_tokens, or as far as folding can go: what is left is key events (and
    # the calls that go with their results), which are never folded.
    assert 2000 < after < before
    assert after <= 4000 or fold.plan("u1", session.id, continuing=True) is None
    assert all(f.token_count <= 400 for f in written)
    # The raw log is untouched.
    events = session.events()
    assert session.verify().ok and events[-1].seq == len(events)


def test_nothing_folds_below_high_and_the_gap_holds_the_view_still(
    engine: ContextEngine,
) -> None:
    fold = folder(engine, key_types=NOT_TOOL_RESULTS, **SMALL)
    session = engine.create_session(user_id="u1")
    i = 0
    while fold.live_tokens("u1", session.id) <= 1200:
        assert fold.maybe_fold("u1", session.id) == []
        tool_turn(session, i)
        i += 1
    assert fold.maybe_fold("u1", session.id)
    assert fold.live_tokens("u1", session.id) <= 600
    view = fold.view("u1", session.id)
    # Live tokens between low and high: no new fold, the view stays as it was.
    tool_turn(session, i)
    assert 600 < fold.live_tokens("u1", session.id) <= 1200
    assert fold.maybe_fold("u1", session.id) == []
    assert fold.view("u1", session.id)[: len(view)] == view


def test_disabled_folds_nothing(engine: ContextEngine) -> None:
    session = long_session(engine, 12)
    fold = folder(engine, enabled=False, **SMALL)
    assert fold.plan("u1", session.id) is None and fold.maybe_fold("u1", session.id) == []
    assert fold.view("u1", session.id) == session.events()


# Key events, pairs, the newest turn, exact coverage -----------------------------------


def test_key_events_stay_verbatim_and_calls_stay_with_their_results(
    engine: ContextEngine,
) -> None:
    session = long_session(engine, 24)
    fold = folder(engine, **SMALL)
    written = fold.maybe_fold("u1", session.id)
    events = session.events()
    assert written
    key = {e.seq for e in events if e.type in DEFAULT_KEY_TYPES}
    for f in fold.folds("u1", session.id):
        assert not key & set(coverage(f))
        # Tool results are key, so their calls stay too: only the agent's own words fold.
        assert covered_types(f, events) == {EventType.AGENT_RESPONSE}
        assert f.source_event_count == len(coverage(f))
    view = fold.view("u1", session.id)
    kept = {item.seq for item in view if isinstance(item, Event)}
    assert key <= kept
    assert {e.seq for e in events if e.type == EventType.TOOL_CALL} <= kept
    assert_exact_view(fold, session.id, events)


def test_with_results_not_key_calls_and_results_fold_together(engine: ContextEngine) -> None:
    session = long_session(engine, 24)
    # A call that never got its result, in an older turn: never folded.
    with session.turn() as turn:
        turn.add_message("assistant", "Checking the seat map first.")
        waiting = turn.add_tool_call("seat_map", {"flight": "F1-0"})
    tool_turn(session, 99)
    fold = folder(engine, key_types=NOT_TOOL_RESULTS, **SMALL)
    assert fold.maybe_fold("u1", session.id)
    events = session.events()
    folds = fold.folds("u1", session.id)
    assert_pairs_whole(folds, events)
    folded_types = set().union(*(covered_types(f, events) for f in folds))
    assert {EventType.TOOL_CALL, EventType.TOOL_RESULT} <= folded_types
    assert not folded_types & NOT_TOOL_RESULTS
    assert not any(f.covers(waiting.seq) for f in folds)
    # The newest turn is never folded, however much it weighs.
    newest = {e.seq for e in events if e.turn_id == events[-1].turn_id}
    assert not any(f.covers(seq) for f in folds for seq in newest)
    assert_exact_view(fold, session.id, events)


def test_seq_ranges_are_stored_exactly(engine: ContextEngine) -> None:
    session = long_session(engine, 20)
    fold = folder(engine, key_types=frozenset({EventType.FINAL}), **SMALL)
    written = fold.maybe_fold("u1", session.id)
    assert written
    with engine.db.read() as conn:
        rows = {
            r["summary_id"]: r
            for r in conn.execute(select(summaries).where(summaries.c.kind == "fold")).mappings()
        }
    for f in written:
        row = rows[f.summary_id]
        assert (row["first_seq"], row["last_seq"]) == (f.seq_ranges[0][0], f.seq_ranges[-1][1])
        if len(f.seq_ranges) == 1:
            assert row["seq_ranges"] is None  # the whole first..last range
        else:
            assert [tuple(r) for r in row["seq_ranges"]] == list(f.seq_ranges)
        assert row["source_event_count"] == sum(b - a + 1 for a, b in f.seq_ranges)
        assert FoldSummary.from_row(row) == f
    # Finals are the only key events: folds cover the runs between them, oldest first.
    finals = {e.seq for e in session.events() if e.type == EventType.FINAL}
    first = written[0]
    assert first.first_seq == 1 and len(first.seq_ranges) > 1
    for (_, end), (start, _) in zip(first.seq_ranges, first.seq_ranges[1:], strict=False):
        assert set(range(end + 1, start)) <= finals


# Recursion ----------------------------------------------------------------------------


@pytest.mark.slow
def test_a_very_long_session_folds_recursively_and_the_view_stays_under_high(
    engine: ContextEngine,
) -> None:
    config = {**SMALL, "fanout": 2, "max_events_per_fold": 12, "keep_key_events": 12}
    fold = folder(engine, **config)
    session = engine.create_session(user_id="u1")
    peaks = []
    for i in range(45):
        tool_turn(session, i, fail=i % 7 == 3, parallel=i % 5 == 2)
        fold.maybe_fold("u1", session.id)  # what the turn-end job does
        peaks.append(fold.live_tokens("u1", session.id))
    assert max(peaks) <= 1200
    events = session.events()
    folds = fold.folds("u1", session.id)
    tops = top_level(folds)
    assert max(f.level for f in folds) >= 2
    assert len(tops) < len(folds)
    # A higher fold covers exactly the union of the folds it supersedes.
    for f in folds:
        holders = [t for t in tops if set(coverage(f)) <= set(coverage(t))]
        assert len(holders) == 1
        assert f in tops or holders[0].level > f.level
    for high in (f for f in folds if f.level > 0):
        parts = [f for f in folds if f.level < high.level and f.covers(high.first_seq)]
        assert parts and high.source_event_count == len(coverage(high))
    # The view never shows a superseded fold next to the one that covers it.
    view = fold.view("u1", session.id)
    shown = [item for item in view if isinstance(item, FoldSummary)]
    assert shown == tops
    assert_exact_view(fold, session.id, events)
    assert_pairs_whole(folds, events)
    # Only the newest 12 key events are sure to be verbatim; they are.
    key = [e.seq for e in events if e.type in DEFAULT_KEY_TYPES][-12:]
    assert not any(f.covers(seq) for f in folds for seq in key)
    assert session.verify().ok and len(session.events()) == len(events)


def test_top_level_summaries_over_their_budget_fold_higher(engine: ContextEngine) -> None:
    config = {**SMALL, "key_types": NOT_TOOL_RESULTS, "max_events_per_fold": 6}
    fold = folder(engine, **config, summaries_tokens=100, fanout=8)
    session = long_session(engine, 30)
    fold.maybe_fold("u1", session.id)
    tops = fold.top_folds("u1", session.id)
    assert any(t.level > 0 for t in tops)
    # Each merge brings the total down; it stops once within budget or down to one.
    assert sum(t.token_count for t in tops) <= 100 or len(tops) == 1


# The turn-end job and catch-up ----------------------------------------------------------


def job(user_id: str, session_id: str) -> Job:
    return Job(1, "turn_end:fold", user_id, session_id, None, {}, 1)


def test_the_turn_end_job_folds_and_ignores_deleted_sessions(engine: ContextEngine) -> None:
    session = long_session(engine, 16)
    fold = folder(engine, key_types=NOT_TOOL_RESULTS, **SMALL)
    fold.on_turn_end(job("u1", session.id))
    written = fold.folds("u1", session.id)
    assert written and fold.live_tokens("u1", session.id) <= 1200
    session.delete()
    fold.on_turn_end(job("u1", session.id))  # nothing to do, no error
    fold.on_turn_end(job("u1", "no-such-session"))
    assert fold.folds("u1", session.id) == []


def test_catch_up_folds_when_the_view_is_read(engine: ContextEngine) -> None:
    session = long_session(engine, 16)
    lazy = folder(engine, **SMALL)
    eager = EventFolder(lazy.db, lazy._load, lazy.counter, config=lazy.config, catch_up=True)
    assert lazy.view("u1", session.id) == session.events()  # nothing folded yet
    view = eager.view("u1", session.id)
    assert any(isinstance(item, FoldSummary) for item in view)
    assert lazy.view("u1", session.id) == view
    items = lazy.summaries("u1", session.id)
    tops = [item for item in view if isinstance(item, FoldSummary)]
    assert [(i.summary_id, i.kind, i.seq_ranges) for i in items] == [
        (t.summary_id, "fold", t.seq_ranges) for t in tops
    ]
    # Another user's view of the same session id does not exist.
    other = engine.create_session(user_id="u2")
    assert lazy.folds("u2", session.id) == [] and lazy.view("u2", other.id) == []
