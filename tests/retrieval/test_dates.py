"""Calendar days a query names, and the search that ranks their events on their own."""

from __future__ import annotations

from datetime import UTC, date, datetime

import pytest

from agentctx import ContextEngine
from agentctx.events import EventDraft, EventType, Role, TextPart
from agentctx.llm import HashingEmbedder
from agentctx.retrieval import RetrievalConfig, SearchIndex
from agentctx.retrieval.dates import (
    NamedDay,
    QueryDays,
    RelativeDay,
    named_days,
    on_named_day,
    query_days,
    relative_days,
    restrict_to_days,
)


@pytest.mark.parametrize(
    ("query", "days"),
    [
        ("What class did Kevin have on 21.01.2024?", [(2024, 1, 21)]),
        ("What did Elise play 5 Jan 2024?", [(2024, 1, 5)]),
        ("What did he watch on the 31 of December 2023?", [(2023, 12, 31)]),
        ("Where is she going on the 10th of February 2024?", [(2024, 2, 10)]),
        ("How many naps on January 6 2024?", [(2024, 1, 6)]),
        ("What happened on Jan 6th, 2024?", [(2024, 1, 6)]),
        ("Logs of 2024-01-21 and 2024/01/22", [(2024, 1, 21), (2024, 1, 22)]),
        ("2024年1月21日做了什么?", [(2024, 1, 21)]),
        ("1月21号去了哪里?", [(None, 1, 21)]),
        ("What did we plan on May 3?", [(None, 5, 3)]),
        # Slashes: both readings when both are dates, the valid one otherwise.
        ("on 01/02/2024", [(2024, 2, 1), (2024, 1, 2)]),
        ("on 01/21/2024", [(2024, 1, 21)]),
        ("on 21/01/2024", [(2024, 1, 21)]),
        # Not days: a bound, a two-digit year, an impossible date, a month alone, a verb.
        ("Did she compete before January 1st, 2024?", []),
        ("What changed since 01.01.2024?", []),
        ("1月21日之前发生了什么?", []),
        ('When did he start reading "11/22/63"?', []),
        ("on 31.02.2024", []),
        ("Plans for March 2024?", []),
        ("Which 3 may come?", []),
    ],
)
def test_named_days(query: str, days: list[tuple[int | None, int, int]]) -> None:
    assert named_days(query) == tuple(NamedDay(*day) for day in days)


@pytest.mark.parametrize(
    ("query", "days"),
    [
        ("What did I do yesterday?", [RelativeDay(1)]),
        ("Where were we last night?", [RelativeDay(1)]),
        ("What did we say the day before yesterday?", [RelativeDay(2)]),
        ("Today's plan, and yesterday's", [RelativeDay(0), RelativeDay(1)]),
        ("What did we discuss this morning?", [RelativeDay(0)]),
        ("the meeting 3 days ago", [RelativeDay(3)]),
        ("the meeting three days ago", [RelativeDay(3)]),
        ("What happened on Friday?", [RelativeDay(weekday=4)]),
        ("我昨天做了什么?", [RelativeDay(1)]),
        ("前天和3天前", [RelativeDay(2), RelativeDay(3)]),
        ("yesterday, or today?", [RelativeDay(1), RelativeDay(0)]),
        # A habit, a day ahead, a bound: no day.
        ("What do I play on Fridays?", []),
        ("Plans for next Friday?", []),
        ("What changed since yesterday?", []),
    ],
)
def test_relative_days(query: str, days: list[RelativeDay]) -> None:
    assert relative_days(query) == tuple(days)


def test_relative_days_resolve_against_the_present() -> None:
    wednesday = date(2026, 11, 25)
    assert RelativeDay(1).resolve(wednesday) == NamedDay(2026, 11, 24)
    assert RelativeDay(3).resolve(wednesday) == NamedDay(2026, 11, 22)
    assert RelativeDay(weekday=4).resolve(wednesday) == NamedDay(2026, 11, 20)  # Friday
    assert RelativeDay(weekday=1).resolve(wednesday) == NamedDay(2026, 11, 24)  # Tuesday
    assert RelativeDay(weekday=2).resolve(wednesday) == NamedDay(2026, 11, 18)  # a week ago


def test_query_days_take_relative_days_only_from_a_query_with_no_date() -> None:
    assert query_days("What did I eat?") is None
    assert query_days("on 21.01.2024") == QueryDays((NamedDay(2024, 1, 21),), ())
    assert query_days("yesterday") == QueryDays((), (RelativeDay(1),))
    # The Friday of "on Friday before 10.01.2024" is that date's, which is a bound.
    assert query_days("What did she make on Friday before 10.01.2024?") is None
    both = QueryDays((NamedDay(2024, 1, 21),), (RelativeDay(1),))
    assert both.resolve(date(2024, 3, 2)) == (NamedDay(2024, 1, 21), NamedDay(2024, 3, 1))
    assert both.resolve(None) == (NamedDay(2024, 1, 21),)


def test_a_day_covers_its_events_and_those_of_the_day_after() -> None:
    day = (NamedDay(2024, 1, 21),)
    assert on_named_day(datetime(2024, 1, 21, 0, 0, tzinfo=UTC), day)
    assert on_named_day(datetime(2024, 1, 22, 23, 59, tzinfo=UTC), day)  # told the next day
    assert not on_named_day(datetime(2024, 1, 20, 23, 59, tzinfo=UTC), day)
    assert not on_named_day(datetime(2024, 1, 23, 0, 0, tzinfo=UTC), day)
    assert not on_named_day(datetime(2023, 1, 21, 12, 0, tzinfo=UTC), day)  # another year
    any_year = (NamedDay(None, 1, 21),)
    assert on_named_day(datetime(2023, 1, 21, 12, 0, tzinfo=UTC), any_year)
    assert on_named_day(datetime(2025, 1, 22, 12, 0, tzinfo=UTC), any_year)


def test_restricting_rankings_keeps_their_order_and_scales_their_weights() -> None:
    written = {
        1: datetime(2024, 1, 20, 12, tzinfo=UTC),
        2: datetime(2024, 1, 21, 12, tzinfo=UTC),
        3: datetime(2024, 1, 22, 3, tzinfo=UTC),
    }
    days = (NamedDay(2024, 1, 21),)
    rankings = [([3, 1, 2, 9], 1.0), ([1], 0.5)]  # 9: not read, so on no day
    assert restrict_to_days(rankings, written, days, 2.0) == [([3, 2], 2.0)]


CLASS_DAYS = [
    # (when, text): the day asked about has one class, mentioned once; the other days'
    # classes are mentioned twice, so they rank first on their words alone.
    (datetime(2024, 1, 19, 15, tzinfo=UTC), "My chemistry class ran late, the class was hard."),
    (datetime(2024, 1, 20, 15, tzinfo=UTC), "Biology class today, and a lab class after it."),
    (datetime(2024, 1, 21, 20, tzinfo=UTC), "Just back from school."),
    (datetime(2024, 1, 22, 1, tzinfo=UTC), "The economics class was about fiscal policy."),
    (datetime(2024, 1, 23, 15, tzinfo=UTC), "History class, then a second history class."),
    (datetime(2024, 1, 24, 15, tzinfo=UTC), "No class at all, I slept in."),
]


def _class_week(engine: ContextEngine) -> str:
    return _append_dated(engine, CLASS_DAYS)


def test_a_query_naming_a_day_ranks_that_days_events_first(engine: ContextEngine) -> None:
    session_id = _class_week(engine)
    index = SearchIndex(engine.db, HashingEmbedder())
    plain = SearchIndex(engine.db, HashingEmbedder(), config=RetrievalConfig(date_weight=0))
    query = "What class did Kevin have on 21.01.2024?"
    # Told just after midnight UTC, the economics class still belongs to the 21st.
    assert index.search("u1", session_id, query, limit=3)[0].seq == 4
    assert plain.search("u1", session_id, query, limit=3)[0].seq != 4
    # A day the query only bounds ranks nothing on its own.
    bound = "What class did Kevin have before 21.01.2024?"
    assert [h.seq for h in index.search("u1", session_id, bound, limit=6)] == [
        h.seq for h in plain.search("u1", session_id, bound, limit=6)
    ]


def _append_dated(engine: ContextEngine, chat: list[tuple[datetime, str]]) -> str:
    session = engine.create_session(user_id="u1")
    for when, text in chat:
        session.append(
            EventDraft(
                type=EventType.USER_INPUT,
                role=Role.USER,
                author="Kevin",
                parts=(TextPart(text=text),),
                ts=when,
            )
        )
    return session.id


def test_yesterday_counts_from_the_newest_event(engine: ContextEngine) -> None:
    session_id = _append_dated(
        engine,
        [
            (datetime(2024, 1, 19, 15, tzinfo=UTC), "Economics class ran late, class was dull."),
            (datetime(2024, 1, 20, 15, tzinfo=UTC), "Biology class today, then a lab class."),
            (datetime(2024, 1, 22, 15, tzinfo=UTC), "A short class in the morning."),
            (datetime(2024, 1, 23, 15, tzinfo=UTC), "Hello again, how are you?"),  # the present
        ],
    )
    index = SearchIndex(engine.db, HashingEmbedder())
    plain = SearchIndex(engine.db, HashingEmbedder(), config=RetrievalConfig(date_weight=0))
    for query in ("Which class did I have yesterday?", "Which class did I have on Monday?"):
        assert index.search("u1", session_id, query, limit=3)[0].seq == 3, query
        assert plain.search("u1", session_id, query, limit=3)[0].seq != 3, query
