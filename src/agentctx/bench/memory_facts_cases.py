"""Fact-timeline cases for the memory benchmark, read from YAML.

A case file (``tests/data/memory_timelines/{dev,heldout}/<category>_<lang>.yaml``) is a
YAML list of cases. A case is one user's sessions in time order, each a date and its
turns (``user``, ``assistant``, ``tool_call``, ``tool_result``), the facts the user
states (category, value, the sessions stating it, and whether the statement retracts
it), the questions asked after the last session, and for procedural cases the tool
statistics expected. :func:`load_cases` reads a file or every ``*.yaml`` of a folder,
validated, sorted by id; a malformed case raises ``InvalidInput`` naming the file, the
case and the field.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import date, datetime
from pathlib import Path
from typing import Any

import yaml

from agentctx.errors import InvalidInput

LANGUAGES = ("en", "zh")
CATEGORIES = (
    "name",
    "occupation",
    "employer",
    "residence",
    "language",
    "skill",
    "family",
    "health",
    "diet",
    "plan",
    "project",
    "preference",
    "procedural",
)
ROLES = ("user", "assistant", "tool_call", "tool_result")
_USER, _ASSISTANT = "user", "assistant"


@dataclass(frozen=True)
class Turn:
    """One line of a session: who says it, and for tool lines the tool's name and data."""

    role: str  # one of ROLES
    text: str = ""  # the message, or a tool result's output
    tool: str | None = None
    args: Mapping[str, Any] = field(default_factory=dict)
    ok: bool = True


@dataclass(frozen=True)
class Session:
    """A day's conversation."""

    date: date
    turns: tuple[Turn, ...]


@dataclass(frozen=True)
class Fact:
    """A fact the user states: its value, the sessions stating it, and whether those
    statements retract it."""

    category: str
    value: str
    sessions: tuple[int, ...]
    retracts: bool = False


@dataclass(frozen=True)
class Question:
    """A question asked after the last session (as of a date, when given)."""

    q: str
    answer: tuple[str, ...]
    stale: tuple[str, ...] = ()
    as_of: date | None = None
    expect_none: bool = False


@dataclass(frozen=True)
class Procedure:
    """The tool statistics procedural memory must hold after the last session."""

    tools: tuple[str, ...]
    successes: int
    failures: int


@dataclass(frozen=True)
class Case:
    """One user's timeline."""

    id: str
    lang: str
    category: str
    user_id: str
    sessions: tuple[Session, ...]
    facts: tuple[Fact, ...] = ()
    questions: tuple[Question, ...] = ()
    distractors: tuple[str, ...] = ()
    procedure: Procedure | None = None
    source: str = ""


# ---------------------------------------------------------------- loading


def load_cases(path: Path | str) -> list[Case]:
    """The cases of a YAML file, or of every ``*.yaml`` file under a folder, sorted by id.

    Raises ``InvalidInput`` for an unreadable file, a malformed case (the message names
    the file, the case and the field) or an id used twice.
    """
    root = Path(path)
    files = sorted(root.rglob("*.yaml")) if root.is_dir() else [root]
    if not files:
        raise InvalidInput(f"{root}: no *.yaml case files")
    cases: dict[str, Case] = {}
    for file in files:
        for case in _load_file(file):
            if case.id in cases:
                raise InvalidInput(f"{file}: case id {case.id!r} also in {cases[case.id].source}")
            cases[case.id] = case
    return [cases[key] for key in sorted(cases)]


def _load_file(file: Path) -> list[Case]:
    try:
        raw = yaml.safe_load(file.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError) as exc:
        raise InvalidInput(f"cannot read {file}: {exc}") from exc
    if not isinstance(raw, list):
        raise InvalidInput(f"{file}: expected a YAML list of cases")
    return [_case(item, f"{file}: case {index}", str(file)) for index, item in enumerate(raw)]


def _case(raw: Any, where: str, source: str) -> Case:
    item = _mapping(raw, where)
    case_id = _text(item, "id", where)
    where = f"{source}: case {case_id!r}"
    lang = _choice(item, "lang", LANGUAGES, where)
    category = _choice(item, "category", CATEGORIES, where)
    sessions = tuple(
        _session(s, f"{where}: sessions[{i}]") for i, s in enumerate(_list(item, "sessions", where))
    )
    if not sessions:
        raise InvalidInput(f"{where}: 'sessions' is empty")
    facts = tuple(
        _fact(f, f"{where}: facts[{i}]", len(sessions))
        for i, f in enumerate(_list(item, "facts", where, required=False))
    )
    questions = tuple(
        _question(q, f"{where}: questions[{i}]")
        for i, q in enumerate(_list(item, "questions", where, required=False))
    )
    procedure = _procedure(item["procedure"], where) if item.get("procedure") is not None else None
    if category == "procedural" and procedure is None:
        raise InvalidInput(f"{where}: a procedural case needs 'procedure'")
    return Case(
        id=case_id,
        lang=lang,
        category=category,
        user_id=str(item.get("user_id") or case_id),
        sessions=sessions,
        facts=facts,
        questions=questions,
        distractors=_strings(item, "distractors", where),
        procedure=procedure,
        source=source,
    )


def _session(raw: Any, where: str) -> Session:
    item = _mapping(raw, where)
    day = item.get("date")
    if isinstance(day, datetime):
        day = day.date()
    elif isinstance(day, str):
        try:
            day = date.fromisoformat(day)
        except ValueError as exc:
            raise InvalidInput(f"{where}: 'date' {day!r} is not YYYY-MM-DD") from exc
    if not isinstance(day, date):
        raise InvalidInput(f"{where}: 'date' is missing or not YYYY-MM-DD")
    turns = tuple(
        _turn(t, f"{where}: turns[{i}]") for i, t in enumerate(_list(item, "turns", where))
    )
    return Session(date=day, turns=turns)


def _turn(raw: Any, where: str) -> Turn:
    item = _mapping(raw, where)
    if len(item) != 1 or next(iter(item)) not in ROLES:
        raise InvalidInput(f"{where}: a turn is one of {', '.join(ROLES)} (got {sorted(item)})")
    role, value = next(iter(item.items()))
    if role in (_USER, _ASSISTANT):
        if not isinstance(value, str) or not value.strip():
            raise InvalidInput(f"{where}: {role!r} needs a text")
        return Turn(role=role, text=value)
    tool = _mapping(value, f"{where}: {role}")
    name = _text(tool, "name", f"{where}: {role}")
    if role == "tool_call":
        args = tool.get("args") or {}
        if not isinstance(args, dict):
            raise InvalidInput(f"{where}: tool_call 'args' must be a mapping")
        return Turn(role=role, tool=name, args=args)
    ok = tool.get("ok", True)
    if not isinstance(ok, bool):
        raise InvalidInput(f"{where}: tool_result 'ok' must be true or false")
    return Turn(role=role, tool=name, text=str(tool.get("output", "")), ok=ok)


def _fact(raw: Any, where: str, sessions: int) -> Fact:
    item = _mapping(raw, where)
    indexes = item.get("sessions")
    if (
        not isinstance(indexes, list)
        or not indexes
        or not all(isinstance(i, int) and 0 <= i < sessions for i in indexes)
    ):
        raise InvalidInput(f"{where}: 'sessions' must list session indexes below {sessions}")
    retracts = item.get("retracts", False)
    return Fact(
        category=_choice(item, "category", CATEGORIES, where),
        value=_text(item, "value", where),
        sessions=tuple(indexes),
        # `retracts: true` or `retracts: <the value retracted>`
        retracts=bool(retracts),
    )


def _question(raw: Any, where: str) -> Question:
    item = _mapping(raw, where)
    as_of = item.get("as_of")
    if isinstance(as_of, str):
        try:
            as_of = date.fromisoformat(as_of)
        except ValueError as exc:
            raise InvalidInput(f"{where}: 'as_of' {as_of!r} is not YYYY-MM-DD") from exc
    if as_of is not None and not isinstance(as_of, date):
        raise InvalidInput(f"{where}: 'as_of' must be YYYY-MM-DD")
    answer = _strings(item, "answer", where)
    expect_none = bool(item.get("expect_none", False))
    if not answer and not expect_none:
        raise InvalidInput(f"{where}: 'answer' is empty without 'expect_none: true'")
    return Question(
        q=_text(item, "q", where),
        answer=answer,
        stale=_strings(item, "stale", where),
        as_of=as_of,
        expect_none=expect_none,
    )


def _procedure(raw: Any, where: str) -> Procedure:
    item = _mapping(raw, f"{where}: procedure")
    counts = {k: item.get(k) for k in ("successes", "failures")}
    if not all(isinstance(v, int) and v >= 0 for v in counts.values()):
        raise InvalidInput(f"{where}: procedure 'successes' and 'failures' must be counts")
    tools = _strings(item, "tools", f"{where}: procedure")
    if not tools:
        raise InvalidInput(f"{where}: procedure 'tools' is empty")
    return Procedure(
        tools=tools, successes=int(counts["successes"] or 0), failures=int(counts["failures"] or 0)
    )


def _mapping(raw: Any, where: str) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise InvalidInput(f"{where}: expected a mapping, got {type(raw).__name__}")
    return raw


def _list(item: Mapping[str, Any], key: str, where: str, *, required: bool = True) -> list[Any]:
    value = item.get(key)
    if value is None and not required:
        return []
    if not isinstance(value, list):
        raise InvalidInput(f"{where}: {key!r} must be a list")
    return value


def _text(item: Mapping[str, Any], key: str, where: str) -> str:
    value = item.get(key)
    if isinstance(value, int | float) and not isinstance(value, bool):
        value = str(value)  # YAML reads `value: 2024` as a number
    if not isinstance(value, str) or not value.strip():
        raise InvalidInput(f"{where}: {key!r} is missing or empty")
    return value.strip()


def _choice(item: Mapping[str, Any], key: str, allowed: Sequence[str], where: str) -> str:
    value = _text(item, key, where)
    if value not in allowed:
        raise InvalidInput(f"{where}: {key!r} is {value!r}, not one of {', '.join(allowed)}")
    return value


def _strings(item: Mapping[str, Any], key: str, where: str) -> tuple[str, ...]:
    values = item.get(key) or []
    if not isinstance(values, list) or not all(
        isinstance(v, str | int | float) and str(v).strip() for v in values
    ):
        raise InvalidInput(f"{where}: {key!r} must be a list of non-empty strings")
    return tuple(str(v).strip() for v in values)
