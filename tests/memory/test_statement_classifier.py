"""The classifier's reading of first-person clauses, with the packaged local model: the
attribute a clause states, and what an engine learns from statements the rules do not
read (on SQLite and PostgreSQL)."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, time
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.bench.memory_facts_data import extract_case, ingest_case, load_cases
from agentctx.llm import LocalEmbedder
from agentctx.llm.hashing import HashingEmbedder
from agentctx.llm.local import PACKAGED_NAME
from agentctx.memory.extract import classifier_for
from agentctx.memory.extract.clauses import first_person_clauses

pytestmark = pytest.mark.slow  # loads torch and the model (once per test process)


@pytest.fixture(scope="module")
def embedder(tmp_path_factory: pytest.TempPathFactory) -> LocalEmbedder:
    return LocalEmbedder(models_dir=tmp_path_factory.mktemp("models"))


def read(embedder: LocalEmbedder, sentence: str) -> list[tuple[str, str]]:
    """(attribute, text) of each statement the classifier reads in ``sentence``."""
    classifier = classifier_for(embedder)
    assert classifier is not None
    clauses = first_person_clauses(sentence)
    return [
        (str(found.data["category"]), found.content)
        for findings in classifier.findings(clauses)
        for found in findings
    ]


@pytest.mark.parametrize(
    ("sentence", "attribute"),
    [
        # Written for this test, in words none of the example statements use.
        ("I've been teaching kindergarten for nine years", "occupation"),
        ("I ended up taking a position as a data analyst", "occupation"),
        ("I recently relocated my family to Porto", "residence"),
        ("I get terrible hay fever every spring", "health"),
        ("I'm pretty handy with a soldering iron", "skill"),
        ("I'm fixing up an old sailboat", "project"),
        ("I'm heading to Rome in July", "plan"),
        ("我最近在学吉他", "skill"),
        ("我搬到青岛了", "residence"),
        ("我对海鲜过敏", "health"),
        # Chinese constructions rather than attribute words: 做X的, V得很熟, a practice
        # with its duration, 在X生活了, 运营.
        ("我是开出租的", "occupation"),
        ("Excel我用得很熟", "skill"),
        ("钢琴弹了十年了", "skill"),
        ("我在成都生活了五年", "residence"),
        ("我在运营一个读书博客", "project"),
    ],
)
def test_a_statement_is_read_as_the_attribute_it_states(
    embedder: LocalEmbedder, sentence: str, attribute: str
) -> None:
    assert [category for category, _ in read(embedder, sentence)] == [attribute]


@pytest.mark.parametrize(
    "sentence",
    [
        "I'm tired of this weather",
        "I watched a great film last night",
        "I drive to the office every day",
        "I'm in the middle of a call",
        "my brother is vegan",  # his diet, not the user's
        "我今天好累",
    ],
)
def test_first_person_talk_that_states_no_lasting_fact_is_not_read(
    embedder: LocalEmbedder, sentence: str
) -> None:
    assert read(embedder, sentence) == []


def test_a_name_given_to_someone_else_is_no_name_of_the_users(embedder: LocalEmbedder) -> None:
    """A clause that names him, her or them ("we called him Kai") was read as the user's
    name, which has one value: it would have superseded the name the user gave. It says
    who is in the family."""
    assert [category for category, _ in read(embedder, "we called him Kai")] == ["family"]
    assert [category for category, _ in read(embedder, "I'm Dana")] == ["name"]
    # With the name withheld by the redaction gate it states nothing to keep ("User and
    # others called him [PERSON]" was stored, and injected).
    assert read(embedder, "we called him [PERSON]") == []


def test_working_somewhere_as_something_states_both_employer_and_job(
    embedder: LocalEmbedder,
) -> None:
    assert [c for c, _ in read(embedder, "我在一家医院当护士")] == ["employer", "occupation"]


def test_only_a_model_the_thresholds_were_measured_for_gets_a_classifier(
    embedder: LocalEmbedder,
) -> None:
    assert embedder.name == PACKAGED_NAME and classifier_for(embedder) is not None
    assert classifier_for(HashingEmbedder()) is None
    assert classifier_for(None) is None


CASES = """
- id: job-change
  lang: en
  category: occupation
  sessions:
    - date: 2026-01-10
      turns:
        - user: "I've been teaching kindergarten for nine years, any rainy-day activity ideas?"
        - assistant: "Try an indoor treasure hunt."
    - date: 2026-03-02
      turns:
        - user: "big news, I ended up taking a position as a data analyst at a bank"
        - assistant: "Congratulations!"
  facts:
    - {category: occupation, value: kindergarten, sessions: [0]}
    - {category: occupation, value: data analyst, sessions: [1]}
"""


@pytest.fixture
def model_engine(db_url: str, home: Path, embedder: LocalEmbedder) -> Iterator[ContextEngine]:
    with ContextEngine(
        url=db_url,
        home=home,
        jobs="manual",
        memory={"enabled": True},
        embeddings={
            "provider": "local",
            "model_path": str(embedder.model_path),
            "model": PACKAGED_NAME,
        },
    ) as engine:
        yield engine


def test_a_changed_job_in_words_the_rules_do_not_read_supersedes_the_old_one(
    model_engine: ContextEngine, tmp_path: Path
) -> None:
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASES, encoding="utf-8")
    (case,) = load_cases(cases)
    extract_case(model_engine, case, ingest_case(model_engine, case))

    def top(question: str, day: str | None = None) -> str:
        as_of = (
            datetime.combine(datetime.fromisoformat(day).date(), time(23, 59), tzinfo=UTC)
            if day
            else None
        )
        hits = model_engine.memory.search(case.user_id, question, limit=5, as_of=as_of)
        return hits[0].memory.content if hits else ""

    assert "data analyst" in top("what do I do for work?")
    assert "kindergarten" in top("what did I do for work?", "2026-02-01")
    injected = model_engine.memory.verified(case.user_id, None, "what is my job?", limit=10)
    assert not any("kindergarten" in h.memory.content for h in injected)


def test_the_rules_alone_do_not_read_these_words(tmp_path: Path) -> None:
    """The case above needs the classifier: with the hashing embedder (no classifier)
    nothing of it is learned."""
    cases = tmp_path / "cases.yaml"
    cases.write_text(CASES, encoding="utf-8")
    (case,) = load_cases(cases)
    with ContextEngine(
        url=f"sqlite:///{tmp_path / 'rules.db'}",
        home=tmp_path / "home",
        jobs="manual",
        memory={"enabled": True},
        embeddings={"provider": "hashing"},
    ) as engine:
        extract_case(engine, case, ingest_case(engine, case))
        texts = [m.content for m in engine.memory.list(case.user_id, status=None)]
    assert not any("data analyst" in t or "kindergarten" in t for t in texts)
