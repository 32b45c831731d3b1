"""Folds inside the engine: windows show fold summaries in place of the events they
cover, keep key events and tool pairs, and stay within the budget."""

from __future__ import annotations

from pathlib import Path

import pytest

from agentctx import ContextEngine, ContextWindow
from agentctx.context.render import event_text
from agentctx.events import EventType
from compaction.fold_session import long_session, tool_turn

FOLD = {"enabled": True, "low_tokens": 1500, "high_tokens": 3000}


@pytest.mark.parametrize("budget", [2000, 20_000])
def test_windows_show_folds_instead_of_what_they_cover(
    db_url: str, home: Path, budget: int
) -> None:
    with ContextEngine(
        url=db_url, home=home, jobs="manual", fold=FOLD, embeddings={"provider": "hashing"}
    ) as engine:
        session = long_session(engine, 24)
        window = session.build_context(budget=budget)  # catches the folds up first
        folds = engine.folds.top_folds("u1", session.id)
        assert folds, "24 turns pass high_tokens"
        folded = {s for f in folds for a, b in f.seq_ranges for s in range(a, b + 1)}
        summary = next(s for s in window.report.sections if s.name == "summary")
        recent = next(s for s in window.report.sections if s.name == "recent")
        seq_of = {e.event_id: e for e in session.events()}
        # Nothing a shown fold stands for is shown again.
        shown = [seq_of[i] for i in recent.event_ids]
        assert shown and not any(e.seq in folded for e in shown)
        assert window.tokens <= budget
        text = " ".join(str(m.get("content")) for m in window.messages)
        if budget == 20_000:
            # Room for everything: every fold, and every unfolded event.
            assert set(summary.event_ids) == {f.summary_id for f in folds}
            assert "[Earlier conversation, folded]" in text
            unfolded = [e for e in session.events() if e.seq not in folded]
            assert {e.seq for e in shown} == {e.seq for e in unfolded}
            assert any(e.type is EventType.USER_INPUT and e.seq < folds[-1].last_seq for e in shown)
        # A tool call and its result are in the window together or not at all.
        calls = {e.call_id for e in shown if e.type is EventType.TOOL_CALL}
        results = {e.call_id for e in shown if e.type is EventType.TOOL_RESULT}
        assert calls == results
        assert session.verify().ok and len(session.folds()) >= len(folds)


def test_a_settled_session_folds_again_once_it_grows(db_url: str, home: Path) -> None:
    with ContextEngine(
        url=db_url, home=home, jobs="manual", fold=FOLD, embeddings={"provider": "hashing"}
    ) as engine:
        session = long_session(engine, 16)
        session.build_context(budget=4000)
        before = engine.folds.folds("u1", session.id)
        session.build_context(budget=4000)  # nothing new: nothing read, nothing folded
        assert engine.folds.folds("u1", session.id) == before
        for i in range(16, 40):
            tool_turn(session, i)
        session.build_context(budget=4000)
        after = engine.folds.folds("u1", session.id)
        assert len(after) > len(before)
        # The new folds reach into the turns added after the session had settled.
        assert max(f.last_seq for f in after) > max(f.last_seq for f in before)


def test_a_folded_event_inside_the_recent_span_can_still_be_retrieved(
    db_url: str, home: Path
) -> None:
    wide_core = {"strategy": "semantic", "semantic": {"min_recent": 60}}  # a wide recent core
    with ContextEngine(
        url=db_url, home=home, jobs="manual", fold=FOLD, embeddings={"provider": "hashing"}
    ) as engine:
        session = long_session(engine, 24)
        session.build_context(budget=20_000)  # folds caught up
        folded = {
            s
            for f in engine.folds.top_folds("u1", session.id)
            for a, b in f.seq_ranges
            for s in range(a, b + 1)
        }
        seq_of = {e.event_id: e.seq for e in session.events()}

        def recent_start(window: ContextWindow) -> int:
            recent = next(s for s in window.report.sections if s.name == "recent")
            return min(seq_of[i] for i in recent.event_ids)

        start = recent_start(
            session.build_context(query="flights", budget=20_000, config=wide_core)
        )
        # A folded reply inside the recent core's span: only its fold stands for it there.
        thinking = max(
            (e for e in session.events(types=["agent_response"]) if e.seq in folded),
            key=lambda e: e.seq,
        )
        assert thinking.seq > start
        route = str(event_text(thinking)).split("route ")[1].split()[0]  # e.g. "R17"
        window = session.build_context(
            query=f"route {route} evening flight lands after the last train",
            budget=20_000,
            config=wide_core,
        )
        retrieved = next(s for s in window.report.sections if s.name == "retrieved")
        assert recent_start(window) < thinking.seq
        # The search still finds it, and the window shows it verbatim.
        assert thinking.event_id in retrieved.event_ids
        assert window.tokens <= 20_000


def test_a_long_tool_result_counts_as_much_as_a_window_shows_of_it(db_url: str, home: Path) -> None:
    with ContextEngine(
        url=db_url, home=home, jobs="manual", fold=FOLD, embeddings={"provider": "hashing"}
    ) as engine:
        session = engine.create_session(user_id="u1")
        with session.turn() as turn:
            turn.add_message("user", "Fetch the access log.")
            call = turn.add_tool_call("read_log", {"name": "access"})
            turn.add_tool_result(call.call_id, content="GET /index.html 200 " * 3000)
        events = session.events()
        cap = engine.settings.tool_output.compress_over_tokens
        assert events[-1].token_estimate > 10 * cap
        live = engine.folds.live_tokens("u1", session.id)
        assert live == sum(e.token_estimate for e in events[:-1]) + cap
        # Under high_tokens as a window counts it: nothing folds for one large output.
        session.build_context(budget=4000)
        assert engine.folds.folds("u1", session.id) == []
