"""The English fact-timeline cases of the memory benchmark follow their format.

Every file under ``tests/data/memory_timelines/{dev,heldout}/*_en.yaml`` is read with
``yaml.safe_load`` and checked field by field; a case that breaks the format would make
the benchmark score the wrong thing (a fact the chat never states, a question about a
day outside the chat), so each rule is checked here on the data itself.
"""

from __future__ import annotations

from collections import Counter
from datetime import date
from pathlib import Path
from typing import Any

import pytest
import yaml

from agentctx.bench.memory_facts_cases import CATEGORIES, ROLES

ROOT = Path(__file__).resolve().parents[1] / "data" / "memory_timelines"
HALVES = ("dev", "heldout")
TURN_KINDS = set(ROLES)
CASE_KEYS = {
    "id",
    "lang",
    "category",
    "user_id",
    "sessions",
    "facts",
    "questions",
    "distractors",
    "procedure",
}
# Each half covers every category with at least this many English cases.
MIN_PER_CATEGORY = 3
MIN_PROCEDURAL = 4
MIN_AS_OF_CASES = 12


def _load(path: Path) -> list[dict[str, Any]]:
    cases = yaml.safe_load(path.read_text(encoding="utf-8"))
    assert isinstance(cases, list), f"{path}: a file is a YAML list of cases"
    for case in cases:
        assert isinstance(case, dict), f"{path}: a case is a mapping"
    return cases


def _english_files() -> list[Path]:
    return sorted(p for half in HALVES for p in (ROOT / half).glob("*_en.yaml"))


def _all_files() -> list[Path]:
    return sorted(p for half in HALVES for p in (ROOT / half).glob("*.yaml"))


ENGLISH_FILES = _english_files()


def _where(path: Path, case: dict[str, Any]) -> str:
    return f"{path.parent.name}/{path.name}:{case.get('id')}"


def _turn_text(turn: dict[str, Any]) -> str:
    """The text a turn shows: a chat line, or a tool call's arguments / result output."""
    (kind, body) = next(iter(turn.items()))
    if kind in {"user", "assistant"}:
        return str(body)
    return str(body.get("args", "")) + " " + str(body.get("output", ""))


def _user_lines(session: dict[str, Any]) -> list[str]:
    return [str(t["user"]).lower() for t in session["turns"] if "user" in t]


def _check_sessions(where: str, sessions: Any) -> None:
    assert isinstance(sessions, list), f"{where}: sessions is a list"
    assert 1 <= len(sessions) <= 5, f"{where}: 1-5 sessions, got {len(sessions)}"
    previous: date | None = None
    for n, session in enumerate(sessions):
        day = session.get("date")
        assert isinstance(day, date), f"{where}: session {n} date {day!r} is not a date"
        assert day.year == 2026, f"{where}: session {n} is dated {day}, not in 2026"
        assert previous is None or day > previous, f"{where}: session {n} is not after {previous}"
        previous = day
        turns = session.get("turns")
        assert isinstance(turns, list), f"{where}: session {n} turns is a list"
        assert 2 <= len(turns) <= 8, f"{where}: session {n} has {len(turns)} turns, not 2-8"
        assert any("user" in t for t in turns), f"{where}: session {n} has no user line"
        for turn in turns:
            assert isinstance(turn, dict), f"{where}: session {n} turn {turn!r} is a mapping"
            assert len(turn) == 1, f"{where}: session {n} turn {turn!r} has one kind"
            kind = next(iter(turn))
            assert kind in TURN_KINDS, f"{where}: session {n} unknown turn kind {kind!r}"
            if kind in {"user", "assistant"}:
                assert isinstance(turn[kind], str), f"{where}: session {n} {kind} text"
                assert turn[kind].strip(), f"{where}: session {n} empty {kind} line"


def _check_facts(where: str, case: dict[str, Any]) -> set[str]:
    """Checks the facts; returns the (lower-cased) values the user states."""
    sessions = case["sessions"]
    facts = case.get("facts")
    assert isinstance(facts, list), f"{where}: facts is a list"
    assert facts, f"{where}: a fact case states at least one fact"
    stated: set[str] = set()
    retractions: list[dict[str, Any]] = []
    for fact in facts:
        assert set(fact) <= {"category", "value", "sessions", "retracts"}, f"{where}: {fact}"
        assert fact.get("category") in CATEGORIES[:-1], f"{where}: fact category {fact}"
        value = fact.get("value")
        assert isinstance(value, str), f"{where}: fact value {value!r} is a string"
        assert value.strip(), f"{where}: empty fact value"
        indexes = fact.get("sessions")
        assert isinstance(indexes, list), f"{where}: fact {value!r} sessions is a list"
        assert indexes, f"{where}: fact {value!r} names its sessions"
        assert indexes == sorted(set(indexes)), f"{where}: fact {value!r} sessions in order"
        for i in indexes:
            assert isinstance(i, int), f"{where}: fact {value!r} session {i!r}"
            assert 0 <= i < len(sessions), f"{where}: fact {value!r} session {i} out of range"
        if fact.get("retracts"):
            assert fact["retracts"] is True, f"{where}: retracts is true or absent"
            retractions.append(fact)
            continue
        needle = value.lower()
        assert any(needle in line for i in indexes for line in _user_lines(sessions[i])), (
            f"{where}: fact {value!r} is in no user line of sessions {indexes}"
        )
        stated.add(needle)
    for fact in retractions:
        value = fact["value"].lower()
        assert value in stated, f"{where}: retraction of {value!r}, which is never stated"
        first_stated = min(
            f["sessions"][0] for f in facts if not f.get("retracts") and f["value"].lower() == value
        )
        assert fact["sessions"][0] >= first_stated, f"{where}: {value!r} retracted before stated"
    return stated


def _check_questions(where: str, case: dict[str, Any], stated: set[str]) -> int:
    """Checks the questions; returns how many ask ``as_of`` a date."""
    sessions = case["sessions"]
    first, last = sessions[0]["date"], sessions[-1]["date"]
    all_text = " ".join(_turn_text(t) for s in sessions for t in s["turns"]).lower()
    user_text = " ".join(line for s in sessions for line in _user_lines(s))
    questions = case.get("questions")
    assert isinstance(questions, list), f"{where}: questions is a list"
    assert 1 <= len(questions) <= 3, f"{where}: 1-3 questions, got {len(questions)}"
    as_of_count = 0
    for question in questions:
        keys = set(question)
        assert keys <= {"q", "answer", "stale", "as_of", "expect_none"}, f"{where}: {question}"
        q = question.get("q")
        assert isinstance(q, str), f"{where}: question text {q!r}"
        assert q.strip().endswith("?"), f"{where}: {q!r} is asked as a question"
        assert "answer" in question, f"{where}: {q!r} has no answer"
        answer = question["answer"]
        assert isinstance(answer, list), f"{where}: {q!r} answer is a list"
        if not answer:
            assert question.get("expect_none") is True, f"{where}: {q!r} empty answer, no none"
            assert question.get("stale"), f"{where}: {q!r} a retraction names what is stale"
        else:
            assert not question.get("expect_none"), f"{where}: {q!r} both answer and none"
        for value in answer:
            assert isinstance(value, str), f"{where}: {q!r} answer {value!r}"
            assert value.strip(), f"{where}: {q!r} empty answer value"
            assert value.lower() in user_text, f"{where}: {q!r} answer {value!r} never said"
            assert any(value.lower() in s or s in value.lower() for s in stated), (
                f"{where}: {q!r} answer {value!r} is not one of the facts"
            )
        stale = question.get("stale", [])
        assert isinstance(stale, list), f"{where}: {q!r} stale is a list"
        for value in stale:
            assert isinstance(value, str), f"{where}: {q!r} stale {value!r}"
            assert value.lower() in all_text, f"{where}: {q!r} stale {value!r} never said"
            assert value.lower() not in {a.lower() for a in answer}, f"{where}: {q!r} {value!r}"
        if "as_of" in question:
            day = question["as_of"]
            assert isinstance(day, date), f"{where}: {q!r} as_of {day!r} is not a date"
            assert first <= day <= last, f"{where}: {q!r} as_of {day} outside {first}..{last}"
            as_of_count += 1
    return as_of_count


def _check_procedure(where: str, case: dict[str, Any]) -> None:
    procedure = case.get("procedure")
    assert isinstance(procedure, dict), f"{where}: a procedural case has a procedure"
    assert set(procedure) == {"tools", "successes", "failures"}, f"{where}: {procedure}"
    called: list[str] = []
    successes = failures = 0
    for n, session in enumerate(case["sessions"]):
        pending: list[str] = []
        for turn in session["turns"]:
            if "tool_call" in turn:
                call = turn["tool_call"]
                assert set(call) == {"name", "args"}, f"{where}: session {n} call {call}"
                assert isinstance(call["args"], dict), f"{where}: session {n} call args"
                pending.append(call["name"])
                if call["name"] not in called:
                    called.append(call["name"])
            elif "tool_result" in turn:
                result = turn["tool_result"]
                assert set(result) == {"name", "ok", "output"}, f"{where}: session {n} {result}"
                assert isinstance(result["ok"], bool), f"{where}: session {n} ok is a bool"
                assert isinstance(result["output"], str), f"{where}: session {n} output"
                assert result["name"] in pending, (
                    f"{where}: session {n} result of {result['name']!r} without its call"
                )
                pending.remove(result["name"])
                successes += result["ok"]
                failures += not result["ok"]
        assert not pending, f"{where}: session {n} calls {pending} have no result"
    assert called, f"{where}: a procedural case calls tools"
    assert procedure["tools"] == called, f"{where}: tools {procedure['tools']} != {called}"
    assert procedure["successes"] == successes, f"{where}: {successes} successes"
    assert procedure["failures"] == failures, f"{where}: {failures} failures"


def _check_case(path: Path, case: dict[str, Any]) -> int:
    """Checks one English case; returns how many of its questions ask ``as_of`` a date."""
    where = _where(path, case)
    assert set(case) <= CASE_KEYS, f"{where}: unknown keys {set(case) - CASE_KEYS}"
    assert isinstance(case.get("id"), str), f"{where}: id is a string"
    assert case.get("lang") == "en", f"{where}: lang {case.get('lang')!r} in an _en file"
    category = path.name.removesuffix("_en.yaml")
    assert case.get("category") == category, f"{where}: category differs from its file's"
    if "user_id" in case:
        assert isinstance(case["user_id"], str), f"{where}: user_id is a string"
    _check_sessions(where, case.get("sessions"))
    if category == "procedural":
        assert "facts" not in case, f"{where}: a procedural case has no facts"
        _check_procedure(where, case)
        return 0
    stated = _check_facts(where, case)
    all_text = " ".join(_turn_text(t) for s in case["sessions"] for t in s["turns"]).lower()
    for value in case.get("distractors", []):
        assert isinstance(value, str), f"{where}: distractor {value!r}"
        assert value.lower() in all_text, f"{where}: distractor {value!r} is not in the chat"
        assert value.lower() not in stated, f"{where}: distractor {value!r} is also a fact"
    return _check_questions(where, case, stated)


def test_english_files_exist_in_both_halves() -> None:
    for half in HALVES:
        names = {p.name for p in ENGLISH_FILES if p.parent.name == half}
        assert names == {f"{c}_en.yaml" for c in CATEGORIES}, f"{half}: {sorted(names)}"


@pytest.mark.parametrize("path", ENGLISH_FILES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_english_file_follows_the_format(path: Path) -> None:
    for case in _load(path):
        _check_case(path, case)


def test_ids_are_unique_across_all_files() -> None:
    ids = Counter(case.get("id") for path in _all_files() for case in _load(path))
    repeated = sorted(str(i) for i, n in ids.items() if n > 1)
    assert not repeated, f"ids used more than once: {repeated}"


def test_each_half_covers_every_category() -> None:
    for half in HALVES:
        counts = Counter(
            case["category"]
            for path in ENGLISH_FILES
            if path.parent.name == half
            for case in _load(path)
        )
        for category in CATEGORIES:
            least = MIN_PROCEDURAL if category == "procedural" else MIN_PER_CATEGORY
            assert counts[category] >= least, f"{half}: {counts[category]} {category} cases"


def test_enough_cases_ask_as_of_a_date() -> None:
    with_as_of = sum(
        1 for path in ENGLISH_FILES for case in _load(path) if _check_case(path, case) > 0
    )
    assert with_as_of >= MIN_AS_OF_CASES, f"only {with_as_of} English cases ask as_of a date"


def test_the_check_rejects_a_fact_no_user_line_states(tmp_path: Path) -> None:
    """The checks above can fail: a fact only the assistant says is caught."""
    path = tmp_path / "dev" / "diet_en.yaml"
    path.parent.mkdir()
    case = {
        "id": "diet-en-bad",
        "lang": "en",
        "category": "diet",
        "sessions": [
            {
                "date": date(2026, 1, 2),
                "turns": [{"user": "What should I cook?"}, {"assistant": "Try a vegan curry."}],
            }
        ],
        "facts": [{"category": "diet", "value": "vegan", "sessions": [0]}],
        "questions": [{"q": "What's my diet?", "answer": ["vegan"]}],
    }
    with pytest.raises(AssertionError, match="is in no user line"):
        _check_case(path, case)
