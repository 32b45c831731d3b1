"""Fact-timeline cases: loading with clear errors, ingestion as dated sessions with tool
events, and the extraction score (recall per category, precision against distractors)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.bench.memory_facts_data import (
    extraction_report,
    ingest_case,
    load_cases,
    score_extraction,
)
from agentctx.errors import InvalidInput
from agentctx.events import EventType

CASES = """
- id: b-diet
  lang: en
  category: diet
  sessions:
    - date: 2026-01-05
      turns:
        - user: "I'm vegetarian, any ideas for dinner?"
        - assistant: "Try a lentil curry. Or are you vegan?"
        - user: "my brother is vegan, not me"
    - date: 2026-02-10
      turns:
        - user: "I'm no longer vegetarian btw."
  facts:
    - {category: diet, value: vegetarian, sessions: [0]}
    - {category: diet, value: vegetarian, retracts: true, sessions: [1]}
  distractors: [vegan]
  questions:
    - {q: "what do I eat?", answer: [], expect_none: true, stale: [vegetarian]}
- id: a-refund
  lang: en
  category: procedural
  user_id: u-refund
  sessions:
    - date: 2026-03-01
      turns:
        - user: "Please refund order 1234."
        - tool_call: {name: lookup_order, args: {order_id: "1234"}}
        - tool_result: {name: lookup_order, ok: true, output: "order 1234: paid"}
        - tool_call: {name: issue_refund, args: {order_id: "1234"}}
        - tool_result: {name: issue_refund, ok: false, output: "error: window closed"}
        - assistant: "Sorry, the refund window is closed."
  procedure: {tools: [lookup_order, issue_refund], successes: 0, failures: 1}
- id: c-job
  lang: en
  category: occupation
  sessions:
    - date: 2026-01-05
      turns:
        - user: "I'm a nurse, nights mostly."
        - user: "my friend is a pilot."
        - user: "I love my garden."
  facts:
    - {category: occupation, value: nurse, sessions: [0]}
    - {category: occupation, value: paramedic, sessions: [0]}
  distractors: [pilot]
"""


@pytest.fixture
def cases_file(tmp_path: Path) -> Path:
    path = tmp_path / "cases" / "mixed_en.yaml"
    path.parent.mkdir()
    path.write_text(CASES, encoding="utf-8")
    return path


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(
        url=db_url, home=home, memory={"enabled": True}, redaction={"enabled": False}
    ) as eng:
        yield eng


def test_cases_load_sorted_from_a_file_or_a_folder(cases_file: Path) -> None:
    cases = load_cases(cases_file.parent)
    assert [c.id for c in cases] == ["a-refund", "b-diet", "c-job"]
    assert cases == load_cases(cases_file)
    refund, diet, _ = cases
    assert refund.user_id == "u-refund" and diet.user_id == "b-diet"
    assert [t.role for t in refund.sessions[0].turns] == [
        "user",
        "tool_call",
        "tool_result",
        "tool_call",
        "tool_result",
        "assistant",
    ]
    assert refund.sessions[0].turns[4].ok is False
    assert diet.facts[1].retracts and not diet.facts[0].retracts
    assert diet.questions[0].expect_none and diet.questions[0].stale == ("vegetarian",)
    assert str(diet.sessions[1].date) == "2026-02-10"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{id: x}", "expected a YAML list of cases"),
        ("- {id: x, lang: fr, category: diet, sessions: []}", "'lang' is 'fr'"),
        ("- {id: x, lang: en, category: diet, sessions: []}", "'sessions' is empty"),
        (
            "- {id: x, lang: en, category: diet, sessions: [{date: 5 May, turns: []}]}",
            "case 'x': sessions[0]: 'date'",
        ),
        (
            "- {id: x, lang: en, category: diet, sessions: [{date: 2026-01-01, turns: "
            "[{robot: hi}]}]}",
            "sessions[0]: turns[0]: a turn is one of",
        ),
        (
            "- {id: x, lang: en, category: diet, sessions: [{date: 2026-01-01, turns: []}], "
            "facts: [{category: diet, value: vegan, sessions: [3]}]}",
            "facts[0]: 'sessions' must list session indexes below 1",
        ),
        (
            "- {id: x, lang: en, category: procedural, sessions: [{date: 2026-01-01, turns: []}]}",
            "a procedural case needs 'procedure'",
        ),
    ],
)
def test_malformed_cases_name_the_file_case_and_field(
    tmp_path: Path, text: str, message: str
) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(InvalidInput, match=r"bad\.yaml") as raised:
        load_cases(path)
    assert message in str(raised.value)


def test_an_id_used_twice_is_refused(tmp_path: Path) -> None:
    case = "- {id: x, lang: en, category: diet, sessions: [{date: 2026-01-01, turns: []}]}"
    (tmp_path / "a.yaml").write_text(case, encoding="utf-8")
    (tmp_path / "b.yaml").write_text(case, encoding="utf-8")
    with pytest.raises(InvalidInput, match="'x' also in"):
        load_cases(tmp_path)


def test_sessions_are_dated_and_tool_lines_are_tool_events(
    engine: ContextEngine, cases_file: Path
) -> None:
    refund, diet, _ = load_cases(cases_file)
    ids = ingest_case(engine, diet)
    assert len(ids) == 2
    first, second = (engine.get_session(i, user_id="b-diet").events() for i in ids)
    assert {e.ts.date().isoformat() for e in first} == {"2026-01-05"}
    assert {e.ts.date().isoformat() for e in second} == {"2026-02-10"}
    assert [e.ts for e in first] == sorted(e.ts for e in first)
    assert [e.type for e in first] == [
        EventType.USER_INPUT,
        EventType.AGENT_RESPONSE,
        EventType.USER_INPUT,
    ]
    (session_id,) = ingest_case(engine, refund)
    events = engine.get_session(session_id, user_id="u-refund").events()
    calls = [e for e in events if e.type is EventType.TOOL_CALL]
    results = [e for e in events if e.type is EventType.TOOL_RESULT]
    assert [c.meta.tool_name for c in calls] == ["lookup_order", "issue_refund"]
    assert [r.call_id for r in results] == [c.call_id for c in calls]
    assert [r.meta.status for r in results] == ["ok", "error"]
    assert len({e.turn_id for e in events}) == 1  # the user's request and its tool path


def test_extraction_is_scored_per_category(engine: ContextEngine, cases_file: Path) -> None:
    refund, diet, job = load_cases(cases_file)
    score = score_extraction(engine, diet)
    figures = score.categories["diet"]
    # Both statements learned (the fact and its retraction), the brother's diet not.
    assert (figures.stated, figures.learned, figures.memories, figures.wrong) == (2, 2, 2, 0)
    assert figures.recall == figures.precision == 1.0

    job_figures = score_extraction(engine, job).categories["occupation"]
    # "paramedic" is never said: a miss; "I love my garden" states no fact of the case.
    assert (job_figures.stated, job_figures.learned) == (2, 1)
    assert job_figures.missed == ["c-job: paramedic"]
    assert job_figures.false == ["c-job: User loves their garden"]
    assert job_figures.precision == 0.5

    procedural = score_extraction(engine, refund).categories["procedural"]
    assert (procedural.stated, procedural.learned) == (1, 1)


def test_the_report_gives_recall_and_precision_per_category(cases_file: Path) -> None:
    report = extraction_report(cases_file, lang="en")
    assert sorted(report) == ["diet", "occupation", "procedural"]
    assert (report["diet"].recall, report["diet"].precision) == (1.0, 1.0)
    assert report["occupation"].recall == 0.5
    assert report["occupation"].false == ("c-job: User loves their garden",)
    assert extraction_report(cases_file, lang="zh") == {}
