"""First-person clauses: what may state something about the user, in the user's words,
in the third person (no model needed)."""

# ruff: noqa: RUF001 - Chinese punctuation on purpose

from __future__ import annotations

import pytest

from agentctx import ContextEngine
from agentctx.memory.extract import extract_declarative
from agentctx.memory.extract.categories import clause_key, statement_of, subject_of
from agentctx.memory.extract.clauses import Clause, first_person_clauses


def rewritten(sentence: str) -> list[str]:
    return [c.third_person for c in first_person_clauses(sentence)]


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("I work for a local bakery chain", ["User works for a local bakery chain"]),
        ("I teach piano to kids", ["User teaches piano to kids"]),
        ("I do yoga twice a week", ["User does yoga twice a week"]),
        ("I mostly cook at home", ["User mostly cooks at home"]),
        ("I broke my wrist skiing", ["User broke their wrist skiing"]),
        ("we're moving to Leeds in May", ["User and others are moving to Leeds in May"]),
        (
            "my daughter Chloe starts school in September",
            ["User's daughter Chloe starts school in September"],
        ),
        ("started as a UX designer at an agency", ["User started as a UX designer at an agency"]),
        # Two statements in one sentence, and filler before them.
        (
            "ok so I live in Lisbon, and I speak Portuguese now",
            ["User lives in Lisbon", "User speaks Portuguese now"],
        ),
        ("我对花生过敏", ["用户对花生过敏"]),
        ("我女儿今年九月上小学", ["用户女儿今年九月上小学"]),
        ("女儿九月上小学", ["用户的女儿九月上小学"]),
        ("跳槽了，下周一去美团报到", ["用户跳槽了", "用户下周一去美团报到"]),
    ],
)
def test_a_statement_is_kept_in_the_users_words_in_the_third_person(
    sentence: str, expected: list[str]
) -> None:
    assert rewritten(sentence) == expected


@pytest.mark.parametrize(
    "sentence",
    [
        "what should I cook tonight?",  # a question
        "can you help me plan a trip",  # a request
        "I need a recipe for soup",
        "if I were a pilot I'd fly to Iceland",  # a hypothetical
        "I think I might become a nurse",  # a hedge
        "my friend is a plumber",  # someone else's fact
        "my boss lives in Leeds",
        "he speaks French",
        "thanks, that helps a lot",
        "I love it",  # nothing but a pronoun to hold
        "I booked it last night",
        "帮我写一封邮件",  # Chinese: a request, a question, someone else, a wish
        "我周末去哪儿玩好？",
        "我同事是医生",
        "如果我是老师就好了",
        "我想当飞行员",
    ],
)
def test_questions_requests_hypotheticals_and_other_peoples_facts_state_nothing(
    sentence: str,
) -> None:
    assert first_person_clauses(sentence) == []


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        # "no" is no verb to agree with the user ("User noes longer…" before).
        ("I no longer eat meat", ["User no longer eats meat"]),
        # "it" far into a clause is a new thought's subject, not a missing referent.
        (
            "I've been vegan since last summer so it's just january for me",
            ["User has been vegan since last summer so it's just january for them"],
        ),
        # An irregular past and an -ing verb leave the speaker out as -ed does.
        ("gave up on Spanish tbh", ["User gave up on Spanish"]),
        ("swam 25m freestyle today", ["User swam 25m freestyle today"]),
        (
            "next up: building a treehouse for the kids",
            ["User is building a treehouse for the kids"],
        ),
        # An emoji ends a thought; "thank you cards" are no thanks.
        (
            "got married last saturday \U0001f48d now I have to write thank you cards",
            ["User got married last saturday", "Now user has to write thank you cards"],
        ),
        # What a thing is called stays with it.
        (
            "I'm writing a discord bot, calling it Gremlin",
            ["User is writing a discord bot, calling it Gremlin"],
        ),
        # "and have to…" is another thought than where one works.
        (
            "I work at Barclays on the fraud team and have to explain chargebacks",
            ["User works at Barclays on the fraud team"],
        ),
        # Chinese: a practice with its duration, the speaker left out.
        ("韩语学了三个月了", ["用户韩语学了三个月了"]),
        ("下个月15号搬家", ["用户下个月15号搬家"]),
        ("体检查出来甲亢", ["用户体检查出来甲亢"]),
    ],
)
def test_statements_said_the_way_chat_says_them_are_kept(
    sentence: str, expected: list[str]
) -> None:
    assert rewritten(sentence) == expected


def test_a_retraction_and_a_change_are_marked() -> None:
    (quit_,) = first_person_clauses("I'm no longer vegetarian")
    (forgot,) = first_person_clauses("honestly I can't speak Korean anymore")
    (moved,) = first_person_clauses("we moved the Japan trip to October instead")
    (said,) = first_person_clauses("I speak some Korean")
    assert (quit_.negated, forgot.negated, moved.negated, said.negated) == (
        True,
        True,
        False,
        False,
    )
    assert moved.changes and not said.changes
    (zh_quit,) = first_person_clauses("我现在不吃素了")
    (zh_moved,) = first_person_clauses("雅思我改到八月考了")
    assert zh_quit.negated and zh_moved.changes and not zh_moved.negated


def test_a_retraction_keys_like_the_statement_it_retracts() -> None:
    (said,) = first_person_clauses("I speak some Korean")
    (forgot,) = first_person_clauses("I can't really speak Korean anymore")
    assert clause_key(said) == clause_key(forgot) == "speak korean"
    assert (
        subject_of("language", said) == subject_of("language", forgot) == "language: speak korean"
    )
    (zh_said,) = first_person_clauses("我对花生过敏")
    (zh_gone,) = first_person_clauses("我已经不对花生过敏了")
    assert clause_key(zh_said) == clause_key(zh_gone) == "对花生过敏"


def test_attributes_with_one_value_share_one_subject() -> None:
    (first,) = first_person_clauses("I live in Paris")
    (second,) = first_person_clauses("we relocated to Lyon last month")
    assert subject_of("residence", first) == subject_of("residence", second) == "residence"


@pytest.mark.parametrize(
    ("sentence", "aspect", "text"),
    [
        (
            "please keep your answers short, I read them on my phone",
            "length",
            "User asks: please keep your answers short",
        ),
        ("use metric units please", "units", "User asks: use metric units please"),
        ("from now on answer in Spanish", "language", "User asks: from now on answer in Spanish"),
        ("以后都用中文回答我", "language", "用户希望：以后都用中文回答用户"),
        ("回答简短一点", "length", "用户希望：回答简短一点"),
    ],
)
def test_a_standing_request_of_how_to_answer_is_one_value_per_aspect(
    sentence: str, aspect: str, text: str
) -> None:
    (request,) = first_person_clauses(sentence)
    assert request.request and request.answer_aspect == aspect
    assert request.third_person == text
    assert subject_of("preference", request) == f"answer style: {aspect}"


def test_family_members_are_marked_so_their_facts_are_not_the_users() -> None:
    (brother,) = first_person_clauses("my brother is vegan")
    (me,) = first_person_clauses("I'm vegan")
    (zh_brother,) = first_person_clauses("我哥哥是医生")
    assert brother.family and zh_brother.family and not me.family
    assert isinstance(me, Clause) and me.third_person == "User is vegan"


@pytest.mark.parametrize(
    ("sentence", "category"),
    [
        ("I'm a nurse", "occupation"),
        ("I work at Google", "employer"),
        ("I live in Paris", "residence"),
        ("I'm vegetarian", "diet"),
    ],
)
def test_a_classified_statement_of_one_value_meets_the_rules_one(
    quick_engine: ContextEngine, sentence: str, category: str
) -> None:
    """Consolidation resolves statements of one kind and subject against each other: a
    classifier's statement of a job, a city or a diet must have the kind and subject the
    rules give theirs, or it would never supersede (nor be superseded by) them."""
    session = quick_engine.create_session(user_id="u1")
    session.add_message("user", sentence)
    (rules,) = extract_declarative(session.events())
    (clause,) = first_person_clauses("I ended up somewhere new")
    found = statement_of(clause, category)
    assert (found.kind, found.subject) == (rules.kind, rules.subject) == (rules.kind, category)
