"""Participants: the names a query gives, first-person rewriting, and the search using them."""

# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

from datetime import timedelta

import pytest

from agentctx import ContextEngine, Session
from agentctx.events import EventDraft, EventType, Role, TextPart
from agentctx.llm import HashingEmbedder
from agentctx.retrieval import RetrievalConfig, SearchIndex
from agentctx.retrieval.participants import (
    ParticipantCache,
    as_asked_by,
    first_person,
    may_name_someone,
    name_parts,
    named_participants,
    named_with_someone_else,
)
from conftest import CHAT_START, append_chat

AUTHORS = ["Fahim Khan", "Muhhamed", "elise", "Emi", "王小明"]


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("What are Fahim's hobbies?", ["Fahim Khan"]),
        ("When does Muhammad plan to file a report?", ["Muhhamed"]),  # spelled differently
        ("What is Elise's favorite type of vacation?", ["elise"]),  # author in lower case
        ("Which destinations are on Emi`s travel list?", ["Emi"]),  # a grave as apostrophe
        ("What games do Fahim and Muhammad play together?", ["Fahim Khan", "Muhhamed"]),
        ("王小明最喜欢什么运动？", ["王小明"]),
        ("What did the team decide about the release?", []),
        ("what are fahim's hobbies?", []),  # names are capitalised; lower case is a word
        ("Did Emily call?", []),  # a longer, different name
    ],
)
def test_named_participants(query: str, expected: list[str]) -> None:
    assert named_participants(query, AUTHORS) == expected


def test_name_parts_skip_short_words_and_keep_cjk_whole() -> None:
    assert name_parts("Jo de la Cruz") == ("cruz",)
    assert name_parts("王小明") == ("王小明",)
    assert name_parts("") == ()


@pytest.mark.parametrize(
    ("query", "author", "expected"),
    [
        ("What are Fahim's hobbies?", "Fahim Khan", "What are my hobbies?"),
        (
            "When does Muhammad plan to file a report against his boss?",
            "Muhhamed",
            "When do I plan to file a report against my boss?",
        ),
        ("How is Emi feeling?", "Emi", "How am I feeling?"),
        ("Has Paola been to Peru?", "Paola", "Have I been to Peru?"),
        ("What did Paola say about herself?", "Paola", "What did I say about myself?"),
        ("What did the team decide?", "Paola", "What did the team decide?"),  # not named
        ("王小明最喜欢什么运动？", "王小明", "王小明最喜欢什么运动？"),  # only English
    ],
)
def test_first_person(query: str, author: str, expected: str) -> None:
    assert first_person(query, author) == expected


PAIR = ["Fahim Khan", "Muhhamed"]


@pytest.mark.parametrize(
    ("query", "authors", "expected"),
    [
        (
            "What games do Fahim Khan and Muhammad play together?",
            PAIR,
            "What games do we play together?",
        ),
        (
            "How did Fahim and Muhammad's walks affect their health?",
            PAIR,
            "How did our walks affect their health?",
        ),
        ("Does Muhhamed read more than Fahim?", PAIR, "Do we read more than us?"),
        (
            "What did Fahim tell Muhammad about the trip?",
            PAIR,
            "What did we tell us about the trip?",
        ),
        ("Is Fahim, Muhhamed and Emi's club open?", [*PAIR, "Emi"], "Is our club open?"),
        ("What are Fahim's hobbies?", ["Fahim Khan"], "What are my hobbies?"),  # one: "I"
        ("What did the team decide?", PAIR, "What did the team decide?"),  # not named
        ("What did the team decide?", [], "What did the team decide?"),
        ("王小明和李雷喜欢什么？", ["王小明", "李雷"], "王小明和李雷喜欢什么？"),  # only English
    ],
)
def test_as_asked_by(query: str, authors: list[str], expected: str) -> None:
    assert as_asked_by(query, authors) == expected


@pytest.mark.parametrize(
    ("query", "author", "expected"),
    [
        ("What do Elise and Kate have in common?", "elise", True),
        ("Which cities have both, Kate and Elise, been to?", "elise", True),
        ("What color are both Kate and Elise's hair?", "elise", True),
        ("How do Faheem and Mohammed use music?", "Muhhamed", True),  # "Faheem": misspelt
        ("What did Elise cook?", "elise", False),
        ("What do Nebraas and her boyfriend do together?", "Nebraas", False),
        ("When did Paola try Chicken and Waffles?", "Paola", False),  # not joined to her
        ("Did Paola and Paola's sister bake?", "Paola", False),  # the same person twice
    ],
)
def test_named_with_someone_else(query: str, author: str, expected: bool) -> None:
    assert named_with_someone_else(query, author) is expected


def test_participant_cache_merges_and_only_moves_forward() -> None:
    cache = ParticipantCache(max_sessions=2)
    key = ("u", "s")
    assert cache.get(key) is None
    assert cache.put(key, 5, ["Ann"]) == frozenset({"Ann"})
    assert cache.put(key, 9, ["Bob"]) == frozenset({"Ann", "Bob"})
    assert cache.put(key, 3, ["Cid"]) == frozenset({"Ann", "Bob", "Cid"})
    assert cache.get(key) == (9, frozenset({"Ann", "Bob"}))  # an older read does not win
    cache.put(("u", "t"), 1, ["Dee"])
    cache.put(("u", "v"), 1, ["Eve"])  # over the bound: the oldest session is forgotten
    assert cache.get(key) is None
    cache.put(("w", "x"), 1, ["Fay"])
    assert cache.get(("u", "v")) == (1, frozenset({"Eve"}))
    cache.drop_user("u")  # their data was deleted: only the other user's session stays
    assert cache.get(("u", "v")) is None and cache.get(("w", "x")) == (1, frozenset({"Fay"}))


# Two people, each talking about their own evenings, in the first person.
CHAT = [
    ("Paola", "I finally tried the new yoga studio downtown, my back feels great"),
    ("Kevin", "I spent the evening debugging the payment service again"),
    ("Paola", "Tonight I am baking sourdough bread with my sister"),
    ("Kevin", "I think I will go running along the river tomorrow"),
    ("Paola", "Reading a novel about the Inca empire before bed"),
    ("Kevin", "I watched a documentary about the Inca empire last night"),
    ("Paola", "How was your weekend? Mine was quiet and relaxing"),
    ("Kevin", "Mostly coding, plus a long bike ride on Sunday afternoon"),
]


def chat_session(engine: ContextEngine, chat: list[tuple[str, str]] = CHAT) -> Session:
    session = engine.create_session(user_id="u1")
    append_chat(session, chat, user="Paola")
    return session


def test_a_named_participants_events_rank_first(engine: ContextEngine) -> None:
    session = chat_session(engine)
    index = SearchIndex(engine.db, HashingEmbedder())
    hits = index.search("u1", session.id, "What does Kevin know about the Inca empire?", limit=4)
    assert hits[0].author == "Kevin" and "Inca" in CHAT[hits[0].seq - 1][1]
    hits = index.search("u1", session.id, "What does Paola know about the Inca empire?", limit=4)
    assert hits[0].author == "Paola" and "Inca" in CHAT[hits[0].seq - 1][1]
    # With the participant rankings off, the two Inca turns are ranked on their text
    # alone: the question's name no longer decides which comes first.
    plain = SearchIndex(engine.db, HashingEmbedder(), config=RetrievalConfig(participant_weight=0))
    first = {
        plain.search("u1", session.id, f"What does {who} know about the Inca empire?", limit=1)[
            0
        ].author
        for who in ("Kevin", "Paola")
    }
    assert len(first) == 1


def test_a_query_naming_both_participants_is_embedded_as_they_would_ask_it(
    engine: ContextEngine,
) -> None:
    greetings_and_plans = [
        ("Paola", "Hi Kevin! Paola here"),
        ("Kevin", "Hey Paola, good to hear from you Paola"),
        ("Paola", "We both love hiking in the mountains, don't we?"),
        ("Kevin", "Yes we do, and we both love the sea"),
    ]
    session = chat_session(engine, greetings_and_plans)
    query = "What do Kevin and Paola both love?"

    def dense_order(config: RetrievalConfig) -> list[int]:
        index = SearchIndex(engine.db, HashingEmbedder(), config=config)
        return [h.seq for h in index.search("u1", session.id, query, limit=4, lexical=False)]

    # Asked as "What do we both love?": the two events saying what they love lead, and
    # the greetings, which only share the names, are not near enough to be hits.
    assert dense_order(RetrievalConfig()) == [4, 3]
    # Without the participant rewriting the names in the query pull the greeting first.
    assert dense_order(RetrievalConfig(participant_weight=0))[0] == 1


def test_a_participant_named_with_someone_else_is_not_the_focus(engine: ContextEngine) -> None:
    session = chat_session(engine)
    index = SearchIndex(engine.db, HashingEmbedder())
    plain = SearchIndex(engine.db, HashingEmbedder(), config=RetrievalConfig(participant_weight=0))
    pair = "What did Kate and Kevin learn about the Inca empire?"
    # Kevin alone would put his own Inca turn first (see the test above); asked about
    # with Kate, who is no author here, the turns are ranked on their text alone.
    alone = index.search("u1", session.id, "What did Kevin learn about the Inca empire?", limit=4)
    assert alone[0].author == "Kevin"
    ranked = [h.seq for h in index.search("u1", session.id, pair, limit=4)]
    assert ranked == [h.seq for h in plain.search("u1", session.id, pair, limit=4)]


@pytest.mark.parametrize(
    ("query", "subject"),
    [
        ("What does Kevin know about the Inca empire?", "Kevin"),
        ("Where did paola go? Ask Paola", "Paola"),
        ("What do Kevin and Paola know about the Inca empire?", None),  # both: no one subject
        ("What did Kate and Kevin learn about the Inca empire?", None),  # Kevin and another
        ("Who went running or cycling?", None),  # nobody named
    ],
)
@pytest.mark.parametrize("participant_weight", [2.0, 0.0])
def test_the_retrieval_names_whom_the_query_is_about(
    engine: ContextEngine, query: str, subject: str | None, participant_weight: float
) -> None:
    """The subject is what the query says, whether or not the participant's own events
    are ranked on their own (``participant_weight``)."""
    session = chat_session(engine)
    config = RetrievalConfig(participant_weight=participant_weight)
    index = SearchIndex(engine.db, HashingEmbedder(), config=config)
    retrieval = index.retrieve("u1", session.id, query, limit=4, before_seq=None)
    assert retrieval.subject == subject
    assert retrieval.hits  # every query above matches something
    # A session with nothing indexed yet still says whom the query is about.
    empty = engine.create_session(user_id="u1")
    assert index.retrieve("u1", empty.id, query, limit=4, before_seq=None).hits == ()


def test_new_authors_are_seen_after_the_first_search(engine: ContextEngine) -> None:
    session = chat_session(engine)
    index = SearchIndex(engine.db, HashingEmbedder())
    assert index.search("u1", session.id, "Where did Vanessa travel?", limit=3)
    session.append(
        EventDraft(
            type=EventType.USER_INPUT,
            role=Role.USER,
            author="Vanessa",
            parts=(TextPart(text="I just came back from a trip to Lisbon"),),
            ts=CHAT_START + timedelta(hours=2),
        )
    )
    hits = index.search("u1", session.id, "Where did Vanessa travel?", limit=3)
    assert hits[0].author == "Vanessa"


def test_only_a_query_that_may_name_someone_needs_the_authors() -> None:
    assert may_name_someone("What does Kevin know?")
    assert may_name_someone("王小明最喜欢什么？")
    assert not may_name_someone("what did we decide about the release?")
    assert not may_name_someone("")


@pytest.mark.parametrize(
    "query",
    [
        "What does Kevin know about the Inca empire?",  # names a participant
        "Who went running or cycling?",
        "bread",
    ],
)
def test_the_builders_retrieval_is_the_search_it_stands_for(
    engine: ContextEngine, query: str
) -> None:
    session = chat_session(engine)
    index = SearchIndex(engine.db, HashingEmbedder())
    for limit, before in ((8, None), (3, None), (5, 7)):
        found = index.search("u1", session.id, query, limit=limit, exclude_from_seq=before)
        retrieved = index.retrieve("u1", session.id, query, limit=limit, before_seq=before).hits
        assert [(h.seq, h.score, h.tokens) for h in retrieved] == [
            (h.seq, h.score, h.token_estimate) for h in found
        ]
        assert retrieved and all(h.tokens and h.tokens > 0 for h in retrieved)
