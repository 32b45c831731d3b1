"""The Chinese fact-timeline cases (tests/data/memory_timelines/*/*_zh.yaml) are well formed.

The memory benchmark scores extraction and recall against these cases, so a case that
contradicts itself (a fact value no user line says, a question dated outside its own
timeline, tool statistics that do not match the tool calls) would score the engine against
a wrong key. These checks read the YAML only; they do not run the engine.
"""

from __future__ import annotations

from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentctx.bench.memory_facts_cases import CATEGORIES, ROLES

DATA = Path(__file__).resolve().parents[1] / "data" / "memory_timelines"
HALVES = ("dev", "heldout")
MAX_SESSIONS = 5
TURNS_PER_SESSION = (2, 8)
QUESTIONS_PER_CASE = (1, 3)
YEAR = 2026
TURN_KINDS = set(ROLES)


def load(path: Path) -> list[dict[str, Any]]:
    cases = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(cases, list), f"{path}: a file is a YAML list of cases"
    return cases


def zh_files() -> list[Path]:
    return sorted(p for half in HALVES for p in (DATA / half).glob("*_zh.yaml"))


def zh_cases() -> list[Any]:
    return [
        pytest.param(path, case, id=str(case.get("id", f"{path.name}#{i}")))
        for path in zh_files()
        for i, case in enumerate(load(path))
    ]


def user_lines(session: dict[str, Any]) -> list[str]:
    return [turn["user"] for turn in session["turns"] if "user" in turn]


def chat_text(case: dict[str, Any]) -> str:
    """Every user and assistant line of a case, for values that must occur somewhere."""
    lines = [
        str(turn.get("user", turn.get("assistant", "")))
        for session in case["sessions"]
        for turn in session["turns"]
    ]
    return "\n".join(lines)


def test_every_half_covers_every_category_in_chinese() -> None:
    for half in HALVES:
        counts = Counter(
            case["category"] for p in (DATA / half).glob("*_zh.yaml") for case in load(p)
        )
        thin = {c: counts.get(c, 0) for c in CATEGORIES if counts.get(c, 0) < 2}
        assert not thin, f"{half}: fewer than two Chinese cases in {thin}"


def test_ids_are_unique_across_every_file_of_both_languages() -> None:
    ids = Counter(
        case["id"] for half in HALVES for p in (DATA / half).glob("*.yaml") for case in load(p)
    )
    assert ids, "no timeline cases found"
    repeated = sorted(i for i, n in ids.items() if n > 1)
    assert not repeated, f"ids used more than once: {repeated}"


def test_as_of_questions_are_asked_in_enough_cases() -> None:
    dated = [
        case["id"]
        for p in zh_files()
        for case in load(p)
        if any("as_of" in q for q in case.get("questions", []))
    ]
    assert len(dated) >= 10, dated


@pytest.mark.parametrize(("path", "case"), zh_cases())
def test_case_header_and_sessions(path: Path, case: dict[str, Any]) -> None:
    category = path.name.removesuffix("_zh.yaml")
    assert category in CATEGORIES, f"{path.name}: unknown category"
    assert case["lang"] == "zh"
    assert case["category"] == category, "a case sits in the file of its category"
    assert path.parent.name in HALVES

    sessions = case["sessions"]
    assert 1 <= len(sessions) <= MAX_SESSIONS
    dates = [s["date"] for s in sessions]
    assert all(isinstance(d, date) and d.year == YEAR for d in dates), dates
    assert dates == sorted(dates) and len(set(dates)) == len(dates), "dates strictly ascend"
    for session in sessions:
        turns = session["turns"]
        assert TURNS_PER_SESSION[0] <= len(turns) <= TURNS_PER_SESSION[1]
        for turn in turns:
            assert len(turn) == 1 and set(turn) <= TURN_KINDS, turn
        assert user_lines(session), "every session has a user line"


def check_facts(case: dict[str, Any]) -> None:
    sessions = case["sessions"]
    facts = case["facts"]
    assert facts, "a declarative case states at least one fact"
    stated = {f["value"] for f in facts if not f.get("retracts")}
    for fact in facts:
        assert fact["category"] in CATEGORIES[:-1]
        value = fact["value"]
        assert isinstance(value, str) and value.strip()
        indexes = fact["sessions"]
        assert indexes and all(0 <= i < len(sessions) for i in indexes), fact
        assert indexes == sorted(set(indexes))
        if fact.get("retracts"):
            # The retraction names a value the user stated earlier and withdraws later.
            assert value in stated, f"retracts a value never stated: {value}"
            first_said = min(
                i
                for f in facts
                if f["value"] == value and not f.get("retracts")
                for i in f["sessions"]
            )
            assert min(indexes) >= first_said, fact
            continue
        for i in indexes:
            assert any(value in line for line in user_lines(sessions[i])), (
                f"fact {value!r} is not in a user line of session {i}"
            )


def check_questions(case: dict[str, Any]) -> None:
    sessions = case["sessions"]
    first, last = sessions[0]["date"], sessions[-1]["date"]
    text = chat_text(case)
    values = {f["value"] for f in case["facts"]}
    questions = case["questions"]
    assert QUESTIONS_PER_CASE[0] <= len(questions) <= QUESTIONS_PER_CASE[1]
    for question in questions:
        answers = question.get("answer", [])
        assert answers or question.get("expect_none") is True, question
        assert not (answers and question.get("expect_none")), question
        assert set(answers) <= values, f"answers that are no fact: {set(answers) - values}"
        assert not any(a in question["q"] for a in answers), "a question gives its answer away"
        assert not set(answers) & set(question.get("stale", [])), question
        for stale in question.get("stale", []):
            assert stale in text, f"stale value {stale!r} never occurs in the chat"
        if "as_of" in question:
            as_of = question["as_of"]
            assert isinstance(as_of, date) and first < as_of < last, question
            for answer in answers:
                said = [
                    sessions[i]["date"]
                    for f in case["facts"]
                    if f["value"] == answer and not f.get("retracts")
                    for i in f["sessions"]
                ]
                assert min(said) <= as_of, f"{answer!r} was not yet said on {as_of}"


def check_procedure(case: dict[str, Any]) -> None:
    calls: list[str] = []
    outcomes = Counter[bool]()
    for session in case["sessions"]:
        pending: list[str] = []
        for turn in session["turns"]:
            if "tool_call" in turn:
                call = turn["tool_call"]
                assert isinstance(call["args"], dict)
                pending.append(call["name"])
                calls.append(call["name"])
            elif "tool_result" in turn:
                result = turn["tool_result"]
                assert pending and result["name"] == pending.pop(0), "a result follows its call"
                assert isinstance(result["ok"], bool) and result["output"]
                outcomes[result["ok"]] += 1
        assert not pending, "every tool call gets its result in the same session"
    procedure = case["procedure"]
    assert procedure["tools"] == list(dict.fromkeys(calls))
    assert procedure["successes"] == outcomes[True]
    assert procedure["failures"] == outcomes[False]


@pytest.mark.parametrize(("path", "case"), zh_cases())
def test_case_facts_questions_and_procedures(path: Path, case: dict[str, Any]) -> None:
    if case["category"] == "procedural":
        check_procedure(case)
        return
    check_facts(case)
    check_questions(case)
    distractors = case.get("distractors", [])
    text = chat_text(case)
    for distractor in distractors:
        assert distractor in text, f"distractor {distractor!r} never occurs in the chat"
        assert distractor not in {f["value"] for f in case["facts"]}
