"""The English fact rules on events a real engine stored: what users state most, with the
subjects consolidation relies on, retractions, corrections, and what states nothing."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.memory.extract import RULES_VERSION, extract_declarative
from agentctx.memory.extract.rules_en_people import family_member
from agentctx.memory.extract.rules_zh_profile import zh_family_member
from agentctx.memory.models import MemoryCandidate, MemoryKind
from agentctx.memory.vocabulary import subject_words

DAY = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """An engine that keeps names as written (these tests read "my daughter Chloe")."""
    with ContextEngine(url=db_url, home=home, redaction={"names": False}) as eng:
        yield eng


def learned(engine: ContextEngine, *texts: str, role: str = "user") -> list[MemoryCandidate]:
    session = engine.create_session(user_id="u1")
    for minute, text in enumerate(texts):
        session.add_message(role, text, ts=DAY + timedelta(minutes=minute))
    return extract_declarative(session.events())


def facts(engine: ContextEngine, *texts: str) -> list[tuple[str | None, str]]:
    return [(c.subject, c.content) for c in learned(engine, *texts)]


def test_the_statements_that_learned_nothing_before(engine: ContextEngine) -> None:
    assert facts(
        engine,
        "I'm allergic to peanuts.",
        "my daughter Chloe starts school in September",
        "I'm building a project called Apollo.",
        "I know Rust, so skip the basics.",
    ) == [
        ("allergy: peanut", "User is allergic to peanuts"),
        ("family: daughter: chloe", "User's daughter is named Chloe"),
        ("plan: school chloe", "User's daughter Chloe starts school in September"),
        ("project: apollo", "User is building a project called Apollo"),
        ("skill: rust", "User knows Rust"),
    ]
    plan = learned(engine, "my daughter Chloe starts school in September")[1]
    assert plan.kind is MemoryKind.EPISODIC
    assert plan.data["when"] == "in September"
    assert all(s.extractor_version == RULES_VERSION == "rules-2" for s in plan.sources)


def test_profile_facts_each_have_their_subject(engine: ContextEngine) -> None:
    assert facts(
        engine,
        "hi! I'm Priya, first time using this thing",
        "work as a barista so I'm up at 5am",
        "I work for a local bakery chain, Crumb & Co, should I ask for a raise?",
        "I'm based in Austin so it's a short hop",
        "I speak French, Spanish and a bit of German.",
        "I play piano actually, grade 8.",
        "my wife Amara is 7 months pregnant",
    ) == [
        ("name", "User's name is Priya"),
        ("occupation", "User works as a barista"),
        ("employer", "User works at Crumb & Co"),
        ("residence", "User lives in Austin"),
        ("language: french", "User speaks French"),
        ("language: spanish", "User speaks Spanish"),
        ("language: german", "User speaks German"),
        ("skill: piano", "User plays piano"),
        ("family: partner: amara", "User's wife is named Amara"),
    ]


def test_a_job_names_its_employer_and_children_are_named_in_a_list(
    engine: ContextEngine,
) -> None:
    assert facts(
        engine,
        "I just got a job as a data analyst at Spotify!",
        "I've been a nurse for ten years",
        "I have two kids, Leo and Mia.",
        "I have a daughter.",
        "I grew up in Ohio but live in Denver now",
    ) == [
        ("occupation", "User works as a data analyst"),
        ("employer", "User works at Spotify"),
        ("occupation", "User is a nurse"),
        ("family: child: leo", "User's kid is named Leo"),
        ("family: child: mia", "User's kid is named Mia"),
        ("family: daughter", "User has a daughter"),
        ("residence", "User lives in Denver"),
        ("home town", "User is from Ohio"),
    ]


def test_health_diet_plans_and_answer_style(engine: ContextEngine) -> None:
    found = learned(
        engine,
        "I have asthma, any tips for cold-air running?",
        "I've been vegetarian for five years.",
        "I don't eat pork.",
        "we're going to Japan in May!!",
        "please keep your answers short, I read them on my phone",
        "Answer in French from now on.",
    )
    assert [(c.kind, c.subject, c.content) for c in found] == [
        (MemoryKind.FACT, "health: asthma", "User has asthma"),
        (MemoryKind.PREFERENCE, "diet", "User is vegetarian"),
        (MemoryKind.PREFERENCE, "diet: pork", "User doesn't eat pork"),
        (MemoryKind.EPISODIC, "plan: trip japan", "User plans a trip to Japan in May"),
        (MemoryKind.PREFERENCE, "answer style: length", "User wants short answers"),
        (MemoryKind.PREFERENCE, "answer style: language", "User wants answers in French"),
    ]
    assert found[3].data == {"when": "in May", "value": "japan"}
    # The value is a keyword; the words a question uses that the content may not ("what
    # am I allergic to?") are indexed with every memory of the subject.
    allergy = learned(engine, "I'm allergic to penicillin.")[0]
    assert "penicillin" in allergy.keywords and allergy.data["value"] == "penicillin"
    assert {"allergy", "allergic"} <= set(subject_words(allergy.subject).split())


def test_dated_events_projects_by_name_and_injuries(engine: ContextEngine) -> None:
    found = learned(
        engine,
        "I have a job interview on Friday",
        "I'm getting married in June!",
        "I've been building Orbit, my side project, for months",
        "I quit the Orbit project",
        "I broke my leg skiing",
        "I keep kosher",
    )
    assert [(c.subject, c.content, c.data.get("retracted", False)) for c in found] == [
        ("plan: job interview", "User has a job interview on Friday", False),
        ("plan: wedding", "User is getting married in June", False),
        ("project: orbit", "User is working on a project called Orbit", False),
        ("project: orbit", "User stopped working on Orbit", True),
        ("health: broken leg", "User has a broken leg", False),
        ("diet: kosher", "User eats kosher only", False),
    ]
    # A plan's value is its date: the same plan moved to another date supersedes it.
    assert [c.data.get("when") for c in found[:2]] == ["on Friday", "in June"]
    assert found[0].data["value"] == "on friday"
    # A retraction names what it takes back, as its statement did.
    assert found[3].data.get("value") == found[2].data.get("value")
    assert learned(engine, "I quit smoking", "I'm going to bed") == []


def test_a_retraction_states_the_retracted_subject(engine: ContextEngine) -> None:
    stated = learned(
        engine,
        "I'm vegetarian.",
        "I'm allergic to shellfish.",
        "we're going to Japan in May",
        "I speak some Korean.",
    )
    retracted = learned(
        engine,
        "I'm no longer vegetarian btw, started eating meat again.",
        "I'm not allergic to shellfish anymore.",
        "sad news, the Japan trip is cancelled.",
        "honestly I can't speak Korean anymore",
    )
    assert [c.subject for c in retracted] == [c.subject for c in stated]
    assert all(c.data.get("retracted") is True for c in retracted)
    # A retraction names the value it takes back, as the statement did.
    assert [c.data.get("value") for c in retracted] == [c.data.get("value") for c in stated]
    assert [c.content for c in retracted] == [
        "User is no longer vegetarian",
        "User is no longer allergic to shellfish",
        "User's trip to Japan is cancelled",
        "User can no longer speak Korean",
    ]


def test_a_diet_named_as_what_one_no_longer_eats_ends_that_diet(engine: ContextEngine) -> None:
    """A diet named as the thing one no longer eats ends it: before, "I no longer eat
    vegan" became "User doesn't eat vegan", a food avoided, of another subject than the
    diet it was meant to end."""
    (stated,) = learned(engine, "I've been vegan since last summer.")
    (ended,) = learned(engine, "I no longer eat vegan, the doctor said so.")
    assert (ended.subject, ended.content) == (stated.subject, "User is no longer vegan")
    assert ended.data.get("retracted") is True
    assert ended.data.get("value") == stated.data.get("value") == "vegan"
    (again,) = learned(engine, "I've started eating vegan again")
    assert (again.subject, again.content, again.data.get("retracted")) == (
        "diet",
        "User is vegan",
        None,
    )


def test_a_correction_within_a_message_replaces_what_it_corrects(engine: ContextEngine) -> None:
    assert facts(
        engine,
        "I speak Mandarin - well no, Cantonese really. Mandarin I can barely follow",
        "I'm a pharmacist - well, a pharmacy technician technically",
        "Hi, I'm Aleksandr. sorry, my phone autocorrected that, it's Oleksandr",
        "I get cluster headaches - no wait, migraines.",
    ) == [
        ("language: cantonese", "User speaks Cantonese"),
        ("occupation", "User is a pharmacy technician"),
        ("name", "User's name is Oleksandr"),
        ("health: migraines", "User has migraines"),
    ]


def test_a_change_later_in_the_session_comes_later_with_a_later_time(
    engine: ContextEngine,
) -> None:
    found = learned(engine, "I live in Manchester.", "moved down to London for the new job")
    assert [(c.subject, c.content) for c in found] == [
        ("residence", "User lives in Manchester"),
        ("residence", "User moved to London"),
    ]
    assert found[0].ts is not None and found[1].ts is not None
    assert found[0].ts < found[1].ts
    # Changed back: the value said last is the last candidate, with its time.
    back = learned(engine, "I'm a nurse.", "I work as a paramedic now.", "I'm a nurse again.")
    assert [c.content for c in back][-1] == "User is a nurse"
    assert back[-1].ts == max(c.ts for c in back if c.ts is not None)


@pytest.mark.parametrize(
    "text",
    [
        "my buddy is a plumber and keeps saying I should switch",
        "my friend has diabetes and is doing a half marathon with me.",
        "my colleague is allergic to latex",
        "my roommate works at Amazon and makes way more than me.",
        "if I lived in Seattle I'd melt from the rain",
        "should I become a firefighter instead?",
        "I'm thinking about becoming a pilot.",
        "Are you allergic to anything?",
        "I'm visiting a friend in Chicago this weekend.",
        "I'm going to Costco later",
        "I'm at Starbucks",
        "I'm Ready",
        "I like that idea",
        "I know Tom from school",
    ],
)
def test_others_hypotheticals_and_questions_state_nothing(engine: ContextEngine, text: str) -> None:
    assert learned(engine, text) == []


def test_the_assistant_states_nothing_about_the_user(engine: ContextEngine) -> None:
    assert (
        learned(
            engine,
            "I'm allergic to peanuts. I speak French. My daughter Chloe starts school soon.",
            role="assistant",
        )
        == []
    )


def test_a_name_the_gate_removed_is_no_statement_of_a_name(db_url: str, home: Path) -> None:
    """With names redacted (the default), "my name is Dana" is stored as "my name is
    [PERSON]": no memory "User's name is [PERSON]" is made of it (it names nobody, and was
    injected into windows as if it did), and a family member whose name was removed is
    still learned, without the name."""
    with ContextEngine(url=db_url, home=home) as engine:
        session = engine.create_session(user_id="u1")
        session.add_message("user", "hi, my name is Dana Whitfield", ts=DAY)
        session.add_message("user", "我叫王小明", ts=DAY + timedelta(minutes=1))
        session.add_message("user", "I'm a nurse", ts=DAY + timedelta(minutes=2))
        stored = " ".join(e.text for e in session.events())
        assert "Dana" not in stored and "王小明" not in stored  # what the gate did
        found = extract_declarative(session.events())
        assert [(c.subject, c.content) for c in found] == [("occupation", "User is a nurse")]


def test_a_family_member_whose_name_was_removed_is_learned_without_it() -> None:
    assert (family_member("son", "[PERSON]").content, family_member("son", "****").subject) == (
        "User has a son",
        "family: son",
    )
    assert zh_family_member("女儿", "[姓名_已脱敏]").content == "用户有女儿"
    # A keyed hash still tells names apart: it is kept as the name.
    assert (
        family_member("son", "[PERSON:3f9a0c1b2d]").content
        == "User's son is named [PERSON:3f9a0c1b2d]"
    )


def test_the_placeholder_where_a_family_name_stood_is_read_as_no_name(
    engine: ContextEngine,
) -> None:
    # "我闺女叫朵朵" is stored as "我闺女叫[PERSON]": a daughter, not "用户的闺女叫[PERSON]".
    assert facts(engine, "我闺女叫[PERSON]") == [("family: daughter", "用户有闺女")]
