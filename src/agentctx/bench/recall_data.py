"""Conversations and questions for ``agentctx bench recall``, read from LoCoMo-style files.

Two layouts are read (see ``load_dataset``):

* **LoCoMo**: the file is a list of conversations ``{sample_id, conversation, qa, …}``;
  ``conversation`` holds ``speaker_a``, ``speaker_b``, ``session_N`` (turns with
  ``speaker``, ``dia_id``, ``text``) and ``session_N_date_time`` such as
  ``1:56 pm on 8 May, 2023``; every turn of a session gets its session's date.
* **REALTALK**: one conversation per file, at the top level: ``name.speaker_1/2``,
  ``session_N`` turns with ``clean_text`` and their own ``date_time`` such as
  ``29.12.2023, 00:51:12``.

Dates carry no time zone in either layout; they are read as UTC.

Evidence ids are cleaned the same way for both: every ``D<session>:<turn>`` token of an
entry is taken (so ``"D8:6; D9:17"``, ``"D13:4. D14:4"`` and ``"D13:45:D20:19"`` give two
ids each), ranges ``D12:3-D12:5`` (or ``D12:3-5``) are expanded, and ids that name no turn
of the conversation (``"D:11:26"``, removed turns) are dropped. A question left without
evidence is skipped, as are LoCoMo's adversarial questions (category 5), which have no
answer in the conversation.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from agentctx.errors import InvalidInput
from agentctx.retrieval.dates import MONTHS

Layout = Literal["locomo", "realtalk"]

ADVERSARIAL_CATEGORY = 5
# LoCoMo's evaluation code numbers the kinds this way; REALTALK uses 1-3 alike.
CATEGORY_NAMES: dict[int, str] = {
    1: "multi-hop",
    2: "temporal",
    3: "commonsense",
    4: "single-hop",
    5: "adversarial",
}

_SESSION_KEY = re.compile(r"session_(\d+)")
_DIA_ID = re.compile(r"D(\d+):(\d+)")
# A range's end may repeat the session ("D12:3-D12:5") or not ("D12:3-5").
_EVIDENCE = re.compile(r"D(\d+):(\d+)(?:\s*-\s*(?:D(\d+):)?(\d+))?")
_LOCOMO_DATE = re.compile(
    r"(\d{1,2}):(\d{2})\s*([ap])\.?m\.?\s+on\s+(\d{1,2})\s+([A-Za-z]+)\.?,?\s+(\d{4})",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class Turn:
    """One dialogue turn: its id (``D3:14``), speaker, text, date and chat session."""

    dia_id: str
    speaker: str
    text: str
    ts: datetime
    index: int  # position in the conversation, from 0
    session: int  # the N of the file's session_N


@dataclass(frozen=True)
class Question:
    """A question with the turns its answer rests on (valid ids only, in given order)."""

    question: str
    answer: str
    category: int
    evidence: tuple[str, ...]


@dataclass
class LoadStats:
    """What was left out while reading, for the report's notes."""

    questions: int = 0  # questions in the file
    adversarial: int = 0  # skipped: LoCoMo category 5
    no_evidence: int = 0  # skipped: no evidence id names a turn
    dropped_ids: int = 0  # evidence ids naming no turn (across kept and skipped questions)

    def add(self, other: LoadStats) -> None:
        """Add ``other``'s counts to these."""
        self.questions += other.questions
        self.adversarial += other.adversarial
        self.no_evidence += other.no_evidence
        self.dropped_ids += other.dropped_ids


@dataclass
class Conversation:
    """A two-speaker conversation with its questions."""

    sample_id: str
    speaker_1: str
    speaker_2: str
    turns: list[Turn]
    questions: list[Question]
    stats: LoadStats = field(default_factory=LoadStats)

    def turn(self, dia_id: str) -> Turn:
        """The turn with id ``dia_id`` (KeyError when there is none)."""
        return self._by_id()[dia_id]

    def _by_id(self) -> dict[str, Turn]:
        cached: dict[str, Turn] | None = self.__dict__.get("_index")
        if cached is None:
            cached = {t.dia_id: t for t in self.turns}
            self.__dict__["_index"] = cached
        return cached


@dataclass
class Dataset:
    """The conversations of one file."""

    path: Path
    layout: Layout
    conversations: list[Conversation]

    @property
    def stats(self) -> LoadStats:
        """The load counts of every conversation, added up."""
        total = LoadStats()
        for conversation in self.conversations:
            total.add(conversation.stats)
        return total


# ---------------------------------------------------------------- dates


def parse_date(value: str) -> datetime:
    """A LoCoMo (``1:56 pm on 8 May, 2023``) or REALTALK (``29.12.2023, 00:51:12``) date, UTC."""
    text = " ".join(value.split())
    for fmt in ("%d.%m.%Y, %H:%M:%S", "%d.%m.%Y, %H:%M", "%d.%m.%Y %H:%M:%S"):
        try:
            return datetime.strptime(text, fmt).replace(tzinfo=UTC)
        except ValueError:
            pass
    m = _LOCOMO_DATE.fullmatch(text)
    if m is not None:
        hour, minute, half, day, month_name, year = m.groups()
        month = MONTHS.get(month_name.lower())
        hour_12 = int(hour)
        if month is not None and 1 <= hour_12 <= 12:
            hour_24 = hour_12 % 12 + (12 if half.lower() == "p" else 0)
            try:
                return datetime(int(year), month, int(day), hour_24, int(minute), tzinfo=UTC)
            except ValueError:
                pass
    raise InvalidInput(f"unrecognised date {value!r} (expected e.g. '1:56 pm on 8 May, 2023')")


# ---------------------------------------------------------------- evidence


def _dia_key(dia_id: str) -> tuple[int, int] | None:
    m = _DIA_ID.fullmatch(dia_id.strip())
    return (int(m.group(1)), int(m.group(2))) if m else None


def parse_evidence(entries: Iterable[object], turns: Sequence[Turn]) -> tuple[list[str], int]:
    """The valid evidence ids of ``entries`` (see the module docstring) and how many were
    dropped. Ids come back as the turns spell them, in first-mention order, without repeats.
    """
    by_key: dict[tuple[int, int], Turn] = {}
    for turn in turns:
        key = _dia_key(turn.dia_id)
        # A turn with no text cannot be looked for in a window, so it is no evidence.
        if key is not None and turn.text.strip():
            by_key.setdefault(key, turn)
    found: dict[str, None] = {}
    dropped = 0
    for entry in entries:
        if not isinstance(entry, str):
            dropped += 1
            continue
        matches = list(_EVIDENCE.finditer(entry))
        if not matches and entry.strip():
            dropped += 1  # no id in it at all: "D:11:26", "D58", "23:29"
        for m in matches:
            session, start = int(m.group(1)), int(m.group(2))
            if m.group(4) is None:
                hit = by_key.get((session, start))
                if hit is None:
                    dropped += 1
                else:
                    found.setdefault(hit.dia_id)
                continue
            end_session = int(m.group(3)) if m.group(3) is not None else session
            end = int(m.group(4))
            ids, missing = _expand_range(by_key, turns, (session, start), (end_session, end))
            dropped += missing
            for dia_id in ids:
                found.setdefault(dia_id)
    return list(found), dropped


def _expand_range(
    by_key: Mapping[tuple[int, int], Turn],
    turns: Sequence[Turn],
    first: tuple[int, int],
    last: tuple[int, int],
) -> tuple[list[str], int]:
    """The turns of a range, and how many of its ids name no turn."""
    if first[0] == last[0]:
        keys = [(first[0], n) for n in range(first[1], last[1] + 1)]
        present = [by_key[k].dia_id for k in keys if k in by_key]
        return present, len(keys) - len(present)
    # Across sessions: every turn between the two ends, in conversation order.
    start, end = by_key.get(first), by_key.get(last)
    if start is None or end is None or end.index < start.index:
        return [], 2
    return [t.dia_id for t in turns[start.index : end.index + 1] if t.text.strip()], 0


# ---------------------------------------------------------------- layouts


def _sessions(container: Mapping[str, Any]) -> list[tuple[int, list[Any]]]:
    sessions = []
    for key, value in container.items():
        m = _SESSION_KEY.fullmatch(key)
        if m is not None and isinstance(value, list):
            sessions.append((int(m.group(1)), value))
    return sorted(sessions, key=lambda pair: pair[0])


def _field(mapping: Mapping[str, Any], key: str, where: str) -> Any:
    if not isinstance(mapping, Mapping) or key not in mapping:
        raise InvalidInput(f"{where}: missing field {key!r}")
    return mapping[key]


def _turn_text(raw: Mapping[str, Any], key: str) -> str:
    text = raw.get(key)
    text = text if isinstance(text, str) else ""
    caption = raw.get("blip_caption")
    # An image shared without words is a turn of its own; its caption stands for it.
    if not text.strip() and isinstance(caption, str) and caption.strip():
        return f"[image: {caption.strip()}]"
    return text


def _questions(
    raw_qa: object, turns: Sequence[Turn], where: str, layout: Layout
) -> tuple[list[Question], LoadStats]:
    if not isinstance(raw_qa, list):
        raise InvalidInput(f"{where}: 'qa' must be a list")
    stats = LoadStats(questions=len(raw_qa))
    questions = []
    for i, item in enumerate(raw_qa):
        q_where = f"{where} qa[{i}]"
        question = _field(item, "question", q_where)
        category = item.get("category")
        if not isinstance(question, str) or not isinstance(category, int):
            raise InvalidInput(f"{q_where}: 'question' must be text and 'category' an integer")
        evidence = item.get("evidence") or []
        if not isinstance(evidence, list):
            evidence = [evidence]
        ids, dropped = parse_evidence(evidence, turns)
        stats.dropped_ids += dropped
        if layout == "locomo" and category == ADVERSARIAL_CATEGORY:
            stats.adversarial += 1
            continue
        if not ids:
            stats.no_evidence += 1
            continue
        answer = item.get("answer", "")
        questions.append(Question(question, str(answer), category, tuple(ids)))
    return questions, stats


def _locomo_conversation(raw: Mapping[str, Any], where: str) -> Conversation:
    sample_id = str(raw.get("sample_id", where))
    where = f"{where} ({sample_id})"
    conv = _field(raw, "conversation", where)
    speaker_1 = str(_field(conv, "speaker_a", where))
    speaker_2 = str(_field(conv, "speaker_b", where))
    turns: list[Turn] = []
    for number, raw_turns in _sessions(conv):
        date_key = f"session_{number}_date_time"
        date = parse_date(str(_field(conv, date_key, where)))
        for j, raw_turn in enumerate(raw_turns):
            t_where = f"{where} session_{number}[{j}]"
            turns.append(
                Turn(
                    dia_id=str(_field(raw_turn, "dia_id", t_where)),
                    speaker=str(_field(raw_turn, "speaker", t_where)),
                    text=_turn_text(raw_turn, "text"),
                    ts=date,
                    index=len(turns),
                    session=number,
                )
            )
    questions, stats = _questions(raw.get("qa", []), turns, where, "locomo")
    return Conversation(sample_id, speaker_1, speaker_2, turns, questions, stats)


def _realtalk_conversation(raw: Mapping[str, Any], where: str, sample_id: str) -> Conversation:
    names = _field(raw, "name", where)
    speaker_1 = str(_field(names, "speaker_1", f"{where} name"))
    speaker_2 = str(_field(names, "speaker_2", f"{where} name"))
    turns: list[Turn] = []
    for number, raw_turns in _sessions(raw):
        session_date = raw.get(f"session_{number}_date_time")
        for j, raw_turn in enumerate(raw_turns):
            t_where = f"{where} session_{number}[{j}]"
            stamp = raw_turn.get("date_time") if isinstance(raw_turn, Mapping) else None
            stamp = stamp or session_date
            if not isinstance(stamp, str):
                raise InvalidInput(f"{t_where}: no 'date_time' on the turn or its session")
            turns.append(
                Turn(
                    dia_id=str(_field(raw_turn, "dia_id", t_where)),
                    speaker=str(_field(raw_turn, "speaker", t_where)),
                    text=_turn_text(raw_turn, "clean_text"),
                    ts=parse_date(stamp),
                    index=len(turns),
                    session=number,
                )
            )
    questions, stats = _questions(raw.get("qa", []), turns, where, "realtalk")
    return Conversation(sample_id, speaker_1, speaker_2, turns, questions, stats)


def parse_dataset(data: object, path: Path) -> Dataset:
    """Read already decoded JSON ``data`` in either layout (``path`` names it in errors)."""
    where = path.name
    if isinstance(data, list):
        conversations = [_locomo_conversation(item, f"{where}[{i}]") for i, item in enumerate(data)]
        return Dataset(path, "locomo", conversations)
    if isinstance(data, dict) and "conversation" in data:
        return Dataset(path, "locomo", [_locomo_conversation(data, where)])
    if isinstance(data, dict) and "name" in data:
        return Dataset(path, "realtalk", [_realtalk_conversation(data, where, path.stem)])
    raise InvalidInput(
        f"{where}: neither the LoCoMo layout (a list of {{sample_id, conversation, qa}}) "
        "nor the REALTALK layout ({name, session_N, qa})"
    )


def load_dataset(path: Path) -> Dataset:
    """Read one LoCoMo or REALTALK file."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise InvalidInput(f"cannot read {path}: {exc.strerror or exc}") from exc
    except json.JSONDecodeError as exc:
        raise InvalidInput(f"{path} is not valid JSON: {exc}") from exc
    return parse_dataset(data, path)


def data_files(paths: Iterable[Path]) -> list[Path]:
    """The files named: each file as given, each folder's ``*.json`` files by name."""
    files: list[Path] = []
    for path in paths:
        if path.is_dir():
            found = sorted(p for p in path.glob("*.json") if p.is_file())
            if not found:
                raise InvalidInput(f"{path} holds no .json files")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise InvalidInput(f"{path} does not exist")
    if not files:
        raise InvalidInput("no data files given")
    return files
