"""What a build reads and counts: each newest event read once, each text counted once.

A window is built before every model call, so its cost is paid all the time: the
recent tail is read in growing steps without reading any event twice, and a build
remembers what it counted (role names, authors, lines, the final messages are asked
for several times over). Both must leave the window exactly as it was.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agentctx import ContextEngine, EventDraft, EventType, TextPart
from agentctx.context import counting, ledger
from agentctx.context.builder import ContextBuilder
from agentctx.context.counting import KNOWN_TEXT_CHARS, RememberingCounter
from agentctx.context.sources import LogHead
from agentctx.events import Event
from agentctx.sessions.session import Session
from agentctx.tokens import EstimateCounter, messages_tokens

T0 = datetime(2024, 3, 1, 9, 0, tzinfo=UTC)
TOPICS = ["the harbour ferry", "a broken kettle", "the spring marathon", "grandma's recipe"]


class RecordingCounter(EstimateCounter):
    """The estimate counter, recording every text it is asked to count."""

    def __init__(self) -> None:
        super().__init__()
        self.seen: Counter[str] = Counter()

    def count(self, text: str) -> int:
        self.seen[text] += 1
        return super().count(text)


class RecordingLoader:
    """Reads events through the session's public API; records every seq it returns."""

    def __init__(self, session: Session) -> None:
        self.session = session
        self.returned: list[int] = []

    def __call__(
        self,
        user_id: str,
        session_id: str,
        *,
        start_seq: int | None = None,
        end_seq: int | None = None,
        last: int | None = None,
        seqs: Sequence[int] | None = None,
        types: Sequence[EventType] | None = None,
    ) -> list[Event]:
        assert (user_id, session_id) == (self.session.user_id, self.session.id)
        if types is not None:  # the session's system events (not the log's tail)
            return self.session.events(types=types, last=last)
        if seqs is not None:
            wanted = set(seqs)
            span = self.session.events(start_seq=min(wanted), end_seq=max(wanted))
            events = [e for e in span if e.seq in wanted]
        else:
            events = self.session.events(start_seq=start_seq, end_seq=end_seq, last=last)
        self.returned.extend(e.seq for e in events)
        return events


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    # The hashing embedder keeps indexing a few hundred events fast; the dense lookup is
    # the same code path as with the local model.
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as eng:
        yield eng


def long_chat(engine: ContextEngine, exchanges: int) -> Session:
    session = engine.create_session(user_id="u1", agent_id="helper")
    for i in range(exchanges):
        topic = TOPICS[i % len(TOPICS)]
        session.append(
            EventDraft(
                type=EventType.USER_INPUT,
                author="Mia",
                parts=(TextPart(text=f"Day {i}: what happened with {topic} after step {i}?"),),
                ts=T0 + timedelta(hours=5 * i),
            ),
            EventDraft(
                type=EventType.AGENT_RESPONSE,
                author="Sam",
                parts=(TextPart(text=f"Step {i} of {topic} went fine; next is step {i + 1}."),),
                ts=T0 + timedelta(hours=5 * i, minutes=1),
            ),
        )
    return session


def builder_for(
    engine: ContextEngine, loader: RecordingLoader, counter: EstimateCounter
) -> ContextBuilder:
    return ContextBuilder(
        open_log=lambda _user, _session, _head: loader,
        counter_for=lambda _spec: counter,
        retriever=engine.search_index,
    )


def build(builder: ContextBuilder, engine: ContextEngine, session: Session, **kw: Any) -> Any:
    info = session.refresh()
    return builder.build(
        user_id=session.user_id,
        session_id=session.id,
        agent_id="helper",
        state={},
        config=engine.context_config(None).merged(kw.pop("config", {})),
        system_prompt=None,
        head=LogHead(info.last_seq, info.weight_total),
        **kw,
    )


def test_the_recent_tail_is_read_without_reading_an_event_twice(engine: ContextEngine) -> None:
    session = long_chat(engine, 120)  # 240 events; a 6k window wants more than 64 of them
    loader = RecordingLoader(session)
    window = build(
        builder_for(engine, loader, EstimateCounter()), engine, session, query=None, budget=6_000
    )
    assert len(loader.returned) > 64  # it did read past the first step
    assert len(loader.returned) == len(set(loader.returned))
    # The window is the engine's own for the same inputs, byte for byte.
    same = session.build_context(query=None, budget=6_000)
    assert window.messages == same.messages and window.tokens == same.tokens
    assert window.report.included_event_ids == same.report.included_event_ids
    assert window.report.not_considered == same.report.not_considered


@pytest.mark.parametrize(
    ("budget", "strategy"),
    [(1_000, "semantic"), (4_000, "semantic"), (1_000, "adaptive"), (4_000, "adaptive")],
)
def test_a_build_counts_each_text_once_and_its_total_is_exact(
    engine: ContextEngine, budget: int, strategy: str
) -> None:
    session = long_chat(engine, 80)
    counter = RecordingCounter()
    query = "What happened with the spring marathon after step 37?"
    window = build(
        builder_for(engine, RecordingLoader(session), counter),
        engine,
        session,
        query=query,
        budget=budget,
        config={"strategy": strategy},
    )
    assert counter.seen, "the build counted nothing"
    assert max(counter.seen.values()) == 1, counter.seen.most_common(3)
    # Remembered counts are the counter's own: the total is the window counted afresh.
    assert window.tokens == messages_tokens(EstimateCounter(), window.messages) <= budget
    if strategy == "semantic":
        assert window.report.sections[2].event_ids  # older events were priced as block lines
    same = session.build_context(query=query, budget=budget, strategy=strategy)
    assert window.messages == same.messages
    assert window.report.dropped == same.report.dropped


def test_later_builds_count_nothing_again(engine: ContextEngine) -> None:
    session = long_chat(engine, 80)
    session.add_message("user", "A long note on the harbour ferry. " * 60, author="Mia")
    counter = RecordingCounter()
    builder = builder_for(engine, RecordingLoader(session), counter)
    query = "What happened with the harbour ferry after step 41?"
    first = build(builder, engine, session, query=query, budget=4_000)
    after_first = Counter(counter.seen)
    second = build(builder, engine, session, query=query, budget=4_000)
    assert second.messages == first.messages and second.tokens == first.tokens
    assert second.report.dropped == first.report.dropped
    # Short and long texts alike (a long tool output shown call after call) are known.
    assert any(len(text) > KNOWN_TEXT_CHARS for text in after_first)
    counted_again = counter.seen - after_first
    assert not counted_again, counted_again
    # A builder of its own starts with nothing known, and counts the same.
    fresh = RecordingCounter()
    third = build(
        builder_for(engine, RecordingLoader(session), fresh), engine, session,
        query=query, budget=4_000,
    )  # fmt: skip
    assert third.messages == first.messages
    assert set(fresh.seen) >= set(after_first)


def test_known_counts_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counting, "KNOWN_TEXTS", 8)
    known: dict[str, int] = {}
    counter = RememberingCounter(EstimateCounter(), known)
    for i in range(9):
        counter.count(f"line {i}")
    # The ninth text found the store full: the older half went, the newer half stayed.
    assert list(known) == [f"line {i}" for i in range(4, 9)]
    for i in range(30):
        assert counter.count(f"line {i}") == EstimateCounter().count(f"line {i}")
    assert 0 < len(known) <= 8
    counter.count_many([f"batch {i}" for i in range(30)])
    assert 0 < len(known) <= 8
    counter.count("x" * (KNOWN_TEXT_CHARS + 1))
    assert "x" * (KNOWN_TEXT_CHARS + 1) not in known


def test_long_counts_are_bounded_by_their_characters(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(counting, "KNOWN_LONG_CHARS", 5 * (KNOWN_TEXT_CHARS + 1))
    long_known = counting.long_counts()
    counter = RememberingCounter(EstimateCounter(), {}, long_known)
    texts = [f"{i} " + "y" * KNOWN_TEXT_CHARS for i in range(8)]
    for text in texts:
        assert counter.count(text) == EstimateCounter().count(text)
    assert long_known.weight <= 5 * (KNOWN_TEXT_CHARS + 3)
    assert long_known.get(texts[-1]) is not None and long_known.get(texts[0]) is None


def test_remembered_counts_are_the_counters_own() -> None:
    inner = RecordingCounter()
    counter = RememberingCounter(inner)
    texts = ["user", "Sam: hello there", "user", "数据报告 twice", "Sam: hello there", ""]
    assert counter.count_many(texts) == EstimateCounter().count_many(texts)
    assert [counter.count(t) for t in texts] == [EstimateCounter().count(t) for t in texts]
    assert set(inner.seen.values()) == {1}  # each distinct text counted once, in one batch
    assert counter.name == inner.name == "estimate"
    long_text = "word " * 400
    assert counter.truncate(long_text, 20) == EstimateCounter().truncate(long_text, 20)


def test_a_users_erasure_drops_the_texts_windows_keep(engine: ContextEngine) -> None:
    """Counts and copies kept between builds are keyed by text, not by user: a user's
    erasure drops them all."""
    session = long_chat(engine, 20)
    session.add_message("user", "A long note on the harbour ferry. " * 60, author="Mia")
    session.add_message("user", "My ticket is FERRY_4411, cabin B12.", author="Mia")
    session.build_context(query="harbour ferry", budget=4_000)
    session.build_context(budget=300)  # the ticket leaves the history: a ledger names it
    builder = engine.context_builder
    assert any(len(known) for known in builder._known_counts.values())
    assert any(long_known.weight for long_known in builder._known_long_counts.values())
    assert ledger._KEPT
    engine.delete_user_data(session.user_id)
    assert not any(len(known) for known in builder._known_counts.values())
    assert not any(long_known.weight for long_known in builder._known_long_counts.values())
    assert not ledger._KEPT
