"""``full`` and ``compressed`` as seed 004 describes them, and a window's report that
matches the window it reports on."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.sessions.session import Session
from agentctx.tokens import messages_tokens


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as eng:
        yield eng


def chat(session: Session, n: int, words: int = 20) -> None:
    for i in range(n):
        session.add_message("user" if i % 2 == 0 else "assistant", f"note {i}: " + "word " * words)


def test_full_keeps_to_max_tokens_for_the_whole_window(engine: ContextEngine) -> None:
    session = engine.create_session("u1")
    chat(session, 60)
    window = session.build_context(
        budget=4000, strategy="full", config={"full": {"max_tokens": 500}}
    )
    assert window.tokens <= 500
    assert messages_tokens(engine.token_counter(), window.messages) == window.tokens
    assert window.messages[0]["content"].startswith("[Earlier conversation truncated: ")
    assert any("full.max_tokens caps the window at 500" in n for n in window.report.notes)
    assert window.report.budget == 4000  # the caller's budget, as asked
    # max_messages bounds the messages whatever the room.
    few = session.build_context(
        budget=20_000, strategy="full", config={"full": {"max_messages": 4}}
    )
    assert len([m for m in few.messages if m["role"] in ("user", "assistant")]) == 4


def test_compressed_says_what_no_summary_covers(engine: ContextEngine) -> None:
    session = engine.create_session("u1")
    chat(session, 30, words=40)
    window = session.build_context(budget=20_000, strategy="compressed")
    first = window.messages[0]["content"]
    # 5 whole + 10 shortened of 30: the 15 before them are named, not dropped silently.
    assert first == "[Earlier conversation: 15 events not shown, no summary covers them]"
    assert "Earlier conversation: 15 events not shown, no summary covers them" in (
        window.report.notes
    )
    shown = [m["content"] for m in window.messages if m["role"] in ("user", "assistant")]
    assert shown[0].startswith("note 15:") and len(shown) == 15
    assert all("truncated" in c for c in shown[:10])
    assert not any("truncated" in c for c in shown[10:])


def test_compressed_leaves_covered_events_to_their_summary(db_url: str, home: Path) -> None:
    topics = {"enabled": True, "min_archive_messages": 10, "keep_recent_messages": 5}
    with ContextEngine(
        url=db_url, home=home, jobs="manual", topics=topics, embeddings={"provider": "hashing"}
    ) as engine:
        session = engine.create_session("u1")
        chat(session, 40)
        engine.topics.archive("u1", session.id, force=True)
        kept = session.build_context(budget=20_000, strategy="compressed")
        assert any("[Topic summary]" in str(m["content"]) for m in kept.messages)
        dropped = {d.reason for d in kept.report.dropped}
        assert "compacted" in dropped or not kept.report.dropped
        without = session.build_context(
            budget=20_000, strategy="compressed", config={"compressed": {"preserve_topics": False}}
        )
        assert not any("[Topic summary]" in str(m["content"]) for m in without.messages)
        # What the topics stood for is then named in the marker, not silently gone.
        assert "no summary covers them" in str(without.messages[0]["content"])


@pytest.mark.parametrize("strategy", ["adaptive", "semantic", "full", "compressed"])
def test_the_report_matches_the_window(engine: ContextEngine, strategy: str) -> None:
    session = engine.create_session("u1")
    session.add_message("user", "The gate code is 4471. " + "Long story follows. " * 200)
    chat(session, 80, words=30)
    window = session.build_context(query="What is the gate code?", budget=1500, strategy=strategy)
    report = window.report
    counter = engine.token_counter()
    assert sum(s.tokens for s in report.sections) + 3 == window.tokens
    for section in report.sections:
        assert section.allocated >= section.tokens, section
    text = "\n".join(
        str(m.get("content")) for m in window.messages if "conversation truncated" not in str(m)
    )
    if "[shortened]" in text or "truncated" in text:
        assert report.truncated, "shortened messages are reported as truncated"
    included = set(report.included_event_ids)
    assert not included & {d.event_id for d in report.dropped}
    assert messages_tokens(counter, window.messages) == window.tokens
