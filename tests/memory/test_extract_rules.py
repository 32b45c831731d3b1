"""Rule-based declarative extraction on events a real engine stored (SQLite and PostgreSQL)."""
# ruff: noqa: RUF001 - Chinese text uses full-width punctuation on purpose

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.events import Event
from agentctx.memory.extract import RULES_VERSION, extract_declarative, has_secret
from agentctx.memory.models import MemoryCandidate, MemoryKind

DAY = datetime(2024, 5, 10, 9, 30, tzinfo=UTC)
API_KEY = "sk-proj-AbCdEf1234567890abcdefGHIJKL"


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """An engine that keeps names: these tests read what the rules make of "my name is …",
    which the default redaction replaces before anything is stored."""
    with ContextEngine(url=db_url, home=home, redaction={"names": False}) as eng:
        yield eng


def by_content(candidates: list[MemoryCandidate]) -> dict[str, MemoryCandidate]:
    return {c.content: c for c in candidates}


def ids(candidate: MemoryCandidate) -> list[str]:
    return [source.event_id for source in candidate.sources]


def test_english_self_statements_become_profile_preference_fact_and_episodes(
    engine: ContextEngine,
) -> None:
    session = engine.create_session(user_id="u1")
    intro = session.add_message("user", "Hi! My name is Jane. I work as a nurse.", ts=DAY)
    home = session.add_message("user", "I live in Lisbon, and I love green tea.", ts=DAY)
    session.add_message("assistant", "I love helping you. I live in the cloud.", ts=DAY)
    drink = session.add_message("user", "My favourite drink is espresso.", ts=DAY)
    session.add_message("user", "Do you think I'm a good cook?", ts=DAY)
    decided = session.add_message(
        "user", "We decided to use PostgreSQL for the project database.", ts=DAY
    )
    hike = session.add_message("user", "Yesterday I went hiking in Sintra with my sister.", ts=DAY)
    dog = session.add_message("user", "I have a dog named Biscuit.", ts=DAY)
    again = session.add_message("user", "Like I said, I live in Lisbon.", ts=DAY)

    found = by_content(extract_declarative(session.events()))

    expected = {
        "User's name is Jane": (MemoryKind.PROFILE, "name", [intro]),
        "User works as a nurse": (MemoryKind.PROFILE, "occupation", [intro]),
        "User lives in Lisbon": (MemoryKind.PROFILE, "residence", [home, again]),
        "User loves green tea": (MemoryKind.PREFERENCE, "preference: green tea", [home]),
        "User's favourite drink is espresso": (
            MemoryKind.PREFERENCE,
            "favourite drink",
            [drink],
        ),
        "Decided to use PostgreSQL for the project database": (
            MemoryKind.PROJECT,
            None,
            [decided],
        ),
        "On 2024-05-09: Yesterday user went hiking in Sintra with their sister.": (
            MemoryKind.EPISODIC,
            None,
            [hike],
        ),
        "User has a dog named Biscuit": (MemoryKind.FACT, None, [dog]),
    }
    assert set(found) == set(expected)
    for content, (kind, subject, events) in expected.items():
        candidate = found[content]
        assert (candidate.kind, candidate.subject) == (kind, subject), content
        assert ids(candidate) == [e.event_id for e in events], content
        assert [s.seq for s in candidate.sources] == [e.seq for e in events]
        assert all(
            s.extractor_version == RULES_VERSION and s.model is None for s in candidate.sources
        )
        assert all(s.session_id == session.id for s in candidate.sources)
        assert 0.0 < candidate.confidence <= 1.0 and candidate.keywords
    assert found["On 2024-05-09: Yesterday user went hiking in Sintra with their sister."].ts == DAY
    # Explicit statements are trusted more than loose ones.
    assert (
        found["User's name is Jane"].confidence > found["User has a dog named Biscuit"].confidence
    )


def test_chinese_self_statements(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    intro = session.add_message("user", "我叫李雷。我是一名软件工程师。", ts=DAY)
    work = session.add_message("user", "我在阿里巴巴工作，我住在杭州。", ts=DAY)
    likes = session.add_message("user", "我喜欢喝龙井茶。我的猫是橘色的。", ts=DAY)
    decided = session.add_message("user", "我们决定用 Redis 做项目的缓存。", ts=DAY)

    found = by_content(extract_declarative(session.events()))

    expected = {
        "用户叫李雷": (MemoryKind.PROFILE, "name", intro),
        "用户是软件工程师": (MemoryKind.PROFILE, "occupation", intro),
        "用户在阿里巴巴工作": (MemoryKind.PROFILE, "employer", work),
        "用户住在杭州": (MemoryKind.PROFILE, "residence", work),
        "用户喜欢喝龙井茶": (MemoryKind.PREFERENCE, "preference: 龙井茶", likes),
        "用户的猫是橘色": (MemoryKind.FACT, "猫", likes),
        "决定用 Redis 做项目的缓存": (MemoryKind.PROJECT, None, decided),
    }
    assert set(found) == set(expected)
    for content, (kind, subject, event) in expected.items():
        assert (found[content].kind, found[content].subject) == (kind, subject), content
        assert ids(found[content]) == [event.event_id]


def test_a_later_statement_of_the_same_subject_gets_the_same_subject(
    engine: ContextEngine,
) -> None:
    """Consolidation detects contradictions by subject: both jobs must name it alike."""
    session = engine.create_session(user_id="u1")
    session.add_message("user", "I'm a teacher at Riverside High.", ts=DAY)
    session.add_message("user", "I work as a software developer now.", ts=DAY)
    session.add_message("user", "I love coffee. Honestly I hate coffee these days.", ts=DAY)
    found = extract_declarative(session.events())
    subjects = [(c.subject, c.content) for c in found]
    assert subjects == [
        ("occupation", "User is a teacher"),
        ("employer", "User works at Riverside High"),
        ("occupation", "User works as a software developer"),
        ("preference: coffee", "User loves coffee"),
        ("preference: coffee", "User hates coffee"),
    ]


def test_secrets_never_reach_a_candidate_and_other_placeholders_stay(
    engine: ContextEngine,
) -> None:
    session = engine.create_session(user_id="u1")
    secret = session.add_message(
        "user",
        f"My api key is {API_KEY} and I work at Acme. My email is jane.doe@example.com. "
        "I'm from Porto.",
    )
    session.add_message("user", f"我的密钥是 {API_KEY}。我住在上海。")
    stored = session.events()
    assert API_KEY not in stored[0].text and "[SECRET]" in stored[0].text  # redacted on write

    found = extract_declarative(stored)

    assert by_content(found).keys() == {
        "User's email is [EMAIL]",
        "User is from Porto",
        "用户住在上海",
    }
    assert ids(by_content(found)["User is from Porto"]) == [secret.event_id]
    for candidate in found:
        text = candidate.model_dump_json()
        assert API_KEY not in text and "sk-proj" not in text and not has_secret(text)


def test_secret_placeholders_in_every_operator_form_are_recognised() -> None:
    for text in (
        "my key is [SECRET]",
        "card [CREDIT_CARD]",
        "token [SECRET:3f2a9c1b7d]",
        "[ENC:SECRET:AbC-_9]",
        "密钥 [密钥_已脱敏]",
        "卡号 [银行卡号_已脱敏]",
    ):
        assert has_secret(text), text
    for text in ("[EMAIL]", "[PHONE]", "[邮箱_已脱敏]", "a [SECRETARY] post"):
        assert not has_secret(text), text


def test_questions_hypotheticals_and_other_speakers_are_not_statements(
    engine: ContextEngine,
) -> None:
    session = engine.create_session(user_id="u1")
    session.add_message("user", "If I lived in Paris, I would love croissants.")
    session.add_message("user", "Are you sure I'm a good fit?")
    session.add_message("user", "I'm a bit tired today. I like that idea!")
    session.add_message("assistant", "My name is Helper and I work at OpenDesk.")
    with session.turn() as turn:
        call = turn.add_tool_call("lookup", {"q": "I live in Rome"})
        turn.add_tool_result(call.call_id, content="I live in Rome. My name is Tool.")
    events: list[Event] = session.events()
    assert extract_declarative(events) == []


def test_being_a_fan_or_into_something_is_a_preference(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1")
    for text in (
        "I'm a huge fan of the Lakers.",
        "I'm a basketball fan!",
        "I'm really into pottery these days.",
        "I'm not really a football fan.",
    ):
        session.add_message("user", text, ts=DAY)
    found = {
        c.content: (c.kind, c.subject, c.confidence) for c in extract_declarative(session.events())
    }
    assert found == {
        "User is a fan of the Lakers": (MemoryKind.PREFERENCE, "preference: lakers", 0.65),
        "User is a basketball fan": (MemoryKind.PREFERENCE, "preference: basketball", 0.65),
        "User is into pottery": (MemoryKind.PREFERENCE, "preference: pottery", 0.6),
    }


def test_every_english_rule_is_reached(engine: ContextEngine) -> None:
    """Messages without a word the rules need are skipped before sentence splitting;
    one statement per rule proves that skip never hides a statement."""
    statements = [
        "Call me Jo.",
        "Im 34 years old.",
        "I work as a designer.",
        "I work at the city library.",
        "I'm a teacher.",
        "I study at the art school.",
        "I've been to Japan twice.",
        "I'm a huge fan of jazz.",
        "I used to swim every morning.",
        "I've been running for two years.",
        "I'm planning to move to Berlin.",
        "I moved to Porto last year.",
        "I'm originally from Lyon.",
        "I was born in Madrid.",
        "My favourite band is Muse.",
        "I really enjoy long walks.",
        "My car is a Tesla.",
        "I have two cats.",
        "Decided to go with the blue one.",
        "Let's go with the second option.",
        "Last weekend we went camping by the lake.",
    ]
    session = engine.create_session(user_id="u1")
    events = [session.add_message("user", text, ts=DAY) for text in statements]
    found = extract_declarative(session.events())
    sourced = {source.event_id for candidate in found for source in candidate.sources}
    assert [
        text
        for text, event in zip(statements, events, strict=True)
        if event.event_id not in sourced
    ] == []
