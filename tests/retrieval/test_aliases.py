"""Aliases: the other names participants go by, learned from the log, and the search
that uses them."""

from __future__ import annotations

import pytest

from agentctx import ContextEngine
from agentctx.llm import HashingEmbedder
from agentctx.retrieval import RetrievalConfig, SearchIndex
from agentctx.retrieval.aliases import addresses, alias_owner, introduces
from agentctx.retrieval.lexical import SessionStats, search_session
from agentctx.retrieval.participants import (
    as_asked_by,
    first_person,
    named_participants,
    named_with_someone_else,
    unnamed_words,
)
from agentctx.retrieval.sync import read_state
from conftest import append_chat


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Hey Kate! How was your day?", True),
        ("hello Kate, long time no see", True),
        ("Thank you Kate, I really appreciate it!", True),
        ("What about you Kate?", True),
        ("That looks amazing, Kate!", True),
        ("Nice to meet you, Kate.", True),
        ("Kate said she would come later", False),  # a mention, not an address
        ("I went to see Kate's new flat", False),
        ("See you Monday!", False),  # a day is no one's name
        ("Thanks Kate's mum for the cake", False),  # a possessive is not an address
    ],
)
def test_addresses(text: str, expected: bool) -> None:
    word = "Monday" if "Monday" in text else "Kate"
    assert addresses(text, word) is expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Haha, totally forgot to introduce myself, I'm Kate. What's your name?", True),
        ("my name is Kate and I teach maths", True),
        ("Please call me Kate", True),
        ("I\u2019m Kate by the way", True),  # a curly apostrophe
        ("I'm Kate's sister", False),
        ("I am Kateland's biggest fan", False),
    ],
)
def test_introduces(text: str, expected: bool) -> None:
    assert introduces(text, "Kate") is expected


AUTHORS = frozenset({"Emi", "elise"})


def test_an_alias_needs_enough_evidence_and_an_address() -> None:
    address = ("elise", "Hey Kate!")
    introduction = ("Emi", "I'm Kate.")
    assert alias_owner("Kate", [address, address], AUTHORS) is None  # two: not enough
    assert alias_owner("Kate", [address] * 3, AUTHORS) == "Emi"  # addressed: the other one
    assert alias_owner("Kate", [introduction, address], AUTHORS) == "Emi"  # 2 + 1
    # Introducing oneself twice with no one using the name: an adjective, perhaps.
    assert alias_owner("Italian", [("Emi", "I'm Italian.")] * 2, AUTHORS) is None


def test_an_alias_with_split_evidence_or_an_unclear_addressee_is_not_learned() -> None:
    # Both call someone "Sam": the evidence points to both participants.
    split = [("elise", "Thanks Sam!")] * 3 + [("Emi", "Thanks Sam!")] * 2
    assert alias_owner("Sam", split, AUTHORS) is None
    # With three authors, whom an address is to is unclear: it counts for no one.
    three = AUTHORS | {"Kevin"}
    assert alias_owner("Kate", [("elise", "Hey Kate!")] * 5, three) is None
    # An event with no author (an assistant's reply) addresses the one author there is.
    assert alias_owner("Kate", [(None, "Hi Kate!")] * 3, frozenset({"user"})) == "user"


def test_the_participant_functions_take_aliases_as_names() -> None:
    aliases = {"kate": "Emi"}
    query = "What are Kate's hobbies?"
    assert named_participants(query, AUTHORS) == []
    assert named_participants(query, AUTHORS, aliases) == ["Emi"]
    assert unnamed_words(query, AUTHORS) == ["What", "Kate"]
    assert first_person(query, "Emi", aliases) == "What are my hobbies?"
    assert as_asked_by("What do Kate and Elise both like?", ["Emi", "elise"], aliases) == (
        "What do we both like?"
    )
    assert named_with_someone_else("Where did Kate and Anna go?", "Emi", aliases)
    assert not named_with_someone_else("Where did Kate go?", "Emi", aliases)


# Emi goes by Kate: elise calls her that, and her own name never comes up.
CHAT = [
    ("Emi", "Hello! Lovely to chat with you"),
    ("elise", "Hey Kate! What are your hobbies these days?"),
    ("Emi", "My hobbies are skiing on weekends and pottery in the evenings"),
    ("elise", "My hobbies are hiking and reading about technology"),
    ("elise", "Thank you Kate, that sounds like fun!"),
    ("Emi", "It really is, the pottery studio is so calm"),
]
THIRD_ADDRESS = ("elise", "What about you Kate?")


def test_a_participant_asked_about_by_an_alias_is_found_once_it_is_learned(
    engine: ContextEngine,
) -> None:
    session = engine.create_session(user_id="u1")
    append_chat(session, CHAT, user="Emi")
    index = SearchIndex(engine.db, HashingEmbedder())
    # Aliases are learned from what the index holds when a query arrives: index first,
    # as the turn-end job does.
    index.sync("u1", session.id)
    query = "What are Kate's hobbies?"
    emi_hobbies = 3
    # Two addresses are not enough evidence: "Kate" is a word like any other, and the
    # question that shares it ranks first.
    assert index.search("u1", session.id, query, limit=3)[0].seq == 2
    assert index.retrieve("u1", session.id, query, limit=3, before_seq=None).subject is None
    append_chat(session, [THIRD_ADDRESS], user="Emi", start=len(CHAT))
    index.sync("u1", session.id)
    # The index grew, so what was known of "Kate" is read again: three addresses by
    # elise make it Emi's name, and the question is asked of Emi's own events.
    hits = index.search("u1", session.id, query, limit=3)
    assert hits[0].seq == emi_hobbies and hits[0].author == "Emi"
    # ... and the window learns that the question is about Emi.
    assert index.retrieve("u1", session.id, query, limit=3, before_seq=None).subject == "Emi"
    # Learning aliases off, the same log ranks the shared words first again.
    plain = SearchIndex(engine.db, HashingEmbedder(), config=RetrievalConfig(aliases=False))
    assert plain.search("u1", session.id, query, limit=3)[0].seq == 2


def test_the_lexical_search_after_a_seq_reads_only_later_events(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    append_chat(session, [*CHAT, THIRD_ADDRESS], user="Emi")
    index = SearchIndex(engine.db, HashingEmbedder())
    index.sync("u1", session.id)
    with engine.db.read() as conn:
        state = read_state(conn, "u1", session.id, None)
        assert state is not None and state.sid is not None
        stats = SessionStats(state.sid, state.doc_count, state.term_count)

        def seqs(after: int | None) -> list[int]:
            hits = search_session(
                conn, stats, ["kate"], limit=10, before_seq=None, after_seq=after, max_postings=100
            )
            return sorted(h.seq for h in hits)

        # "Kate" is in events 2, 5 and 7: the incremental read of what is new since
        # seq 5 is the last one alone, and nothing is new after the last event.
        assert seqs(None) == [2, 5, 7]
        assert seqs(5) == [7]
        assert seqs(7) == []


def test_forgetting_a_user_drops_the_evidence_read_from_their_sessions(
    engine: ContextEngine,
) -> None:
    session = engine.create_session(user_id="u1")
    append_chat(session, [*CHAT, THIRD_ADDRESS], user="Emi")
    index = SearchIndex(engine.db, HashingEmbedder())
    index.sync("u1", session.id)
    assert index.search("u1", session.id, "What are Kate's hobbies?", limit=1)[0].author == "Emi"
    assert len(index._reader._aliases) == 1  # the evidence for "Kate" ("What" is no name)
    index.forget_user("u2")
    assert len(index._reader._aliases) == 1
    index.forget_user("u1")
    assert len(index._reader._aliases) == 0
