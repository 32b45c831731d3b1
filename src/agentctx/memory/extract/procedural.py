"""Procedural extraction: which tool paths worked for which task, counted from the log.

:func:`extract_procedural` replays a session's ``tool_call`` → ``tool_result``
sequences turn by turn (seed 003 A.1.2, procedural memory). For each turn with at
least one tool call:

* ``scenario``: a short normalized label of the turn's task, the top keywords of the
  user's message that opened it (``book flight``), or the first tool's name when the
  turn has no user message;
* ``tools``: the tool names called, in order (a tool called twice in a row counts once
  in the path, so a retried call does not make a new path);
* the turn succeeded when its last tool result is not an error and no ``error`` event
  was recorded in it; a failure's reason is the error's type or the first words of the
  failed result (``timeout``, ``no seats available``), normalized;
* ``best_iterations``: the number of tool calls of the cheapest successful turn.

Turns with the same scenario and tool path are one candidate whose statistics add up
(``successes``, ``failures``, ``failure_reasons``), citing every turn's tool events.
Only stored (redacted) text is read: an error's reason comes from the redacted
result text or the error event's payload.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from agentctx.events import Event, EventType
from agentctx.memory.extract.rules import has_secret, is_user_message, keywords_of, provenance
from agentctx.memory.extract.statements import words
from agentctx.memory.models import MemoryCandidate, MemoryKind, ProceduralData, Provenance
from agentctx.retrieval.terms import STOPWORDS

PROCEDURAL_VERSION = "procedural-1"
"""The procedural extractor's version, recorded in every candidate's provenance."""

_SCENARIO_WORDS = 2
_WORD = re.compile(r"[A-Za-z][A-Za-z'-]+")
_FILLER = words(
    "please can could would you help me want need like let's lets hi hello hey ok okay "
    "thanks thank also just now again some any"
)
_WEEKDAYS = words("monday tuesday wednesday thursday friday saturday sunday today tomorrow tonight")
_REASON_WORDS = 5
_REASON_CHARS = 60
_ERROR_PREFIX = re.compile(r"^\s*(error|failed|failure|exception)\s*[:\-]\s*", re.IGNORECASE)
_NOISE = re.compile(r"[\d#]+|[^\w\s\[\]-]")


@dataclass
class _Turn:
    """One turn's tool activity."""

    key: str
    user_text: str = ""
    calls: list[Event] = field(default_factory=list)
    results: list[Event] = field(default_factory=list)
    errors: list[Event] = field(default_factory=list)
    sources: list[Event] = field(default_factory=list)

    @property
    def tools(self) -> tuple[str, ...]:
        names = [_tool_name(call) for call in self.calls]
        return tuple(name for i, name in enumerate(names) if i == 0 or names[i - 1] != name)

    @property
    def succeeded(self) -> bool:
        return bool(self.results) and not _is_error(self.results[-1]) and not self.errors

    def failure_reason(self) -> str:
        if self.errors:
            return _error_reason(self.errors[-1])
        failed = [result for result in self.results if _is_error(result)]
        if failed:
            return _result_reason(failed[-1])
        return "no result"


def _tool_name(call: Event) -> str:
    name = call.meta.tool_name or call.payload.get("name") or "tool"
    return str(name)


def _is_error(result: Event) -> bool:
    return result.meta.status == "error" or result.payload.get("is_error") is True


def _normalize_reason(text: str) -> str:
    if has_secret(text):
        return "error"
    text = _ERROR_PREFIX.sub("", text.strip().splitlines()[0] if text.strip() else "")
    words = _NOISE.sub(" ", text.lower()).split()[:_REASON_WORDS]
    return " ".join(words)[:_REASON_CHARS] or "error"


def _result_reason(result: Event) -> str:
    return _normalize_reason(result.text)


def _error_reason(error: Event) -> str:
    kind = error.payload.get("error_type")
    if isinstance(kind, str) and kind:
        return _normalize_reason(re.sub(r"(?<=[a-z])(?=[A-Z])", " ", kind))
    message = error.payload.get("message")
    return _normalize_reason(message if isinstance(message, str) else error.text)


def _scenario(turn: _Turn) -> str:
    """The task's label: its first content words, parameters (names, numbers) left out.

    "Book a flight to Tokyo for Friday" and "book a flight to Osaka" are one task,
    ``book flight``; a Chinese request falls back to its top keywords.
    """
    text = turn.user_text
    if text.strip() and not has_secret(text):
        words = [
            word.lower()
            for index, word in enumerate(_WORD.findall(text))
            if word.lower() not in STOPWORDS
            and word.lower() not in _FILLER
            and not (index > 0 and word[0].isupper())  # a proper name is a parameter
            and word.lower() not in _WEEKDAYS
        ][:_SCENARIO_WORDS]
        if words:
            return " ".join(words)
        cjk = keywords_of(text, k=_SCENARIO_WORDS)
        if cjk:
            return " ".join(cjk)[:80]
    return turn.tools[0].replace("_", " ") if turn.tools else "task"


def _turns(events: Iterable[Event]) -> list[_Turn]:
    """Events grouped by turn (events without a turn: each user message opens one)."""
    turns: dict[str, _Turn] = {}
    loose = 0
    for event in events:
        if event.turn_id is None and is_user_message(event):
            loose += 1
        key = event.turn_id or f"loose-{loose}"
        turn = turns.setdefault(key, _Turn(key))
        if is_user_message(event):
            if not turn.user_text:
                turn.user_text = event.text
                turn.sources.append(event)
        elif event.type == EventType.TOOL_CALL:
            turn.calls.append(event)
            turn.sources.append(event)
        elif event.type == EventType.TOOL_RESULT:
            turn.results.append(event)
            turn.sources.append(event)
        elif event.type == EventType.ERROR:
            turn.errors.append(event)
            turn.sources.append(event)
    return [turn for turn in turns.values() if turn.calls]


@dataclass
class _Tally:
    scenario: str
    tools: tuple[str, ...]
    successes: int = 0
    failures: int = 0
    reasons: Counter[str] = field(default_factory=Counter)
    best: int | None = None
    sources: list[Provenance] = field(default_factory=list)
    last: Event | None = None


def extract_procedural(
    events: Iterable[Event], *, extractor_version: str = PROCEDURAL_VERSION
) -> list[MemoryCandidate]:
    """Tool-path statistics per (scenario, tool path), from the turns that called tools.

    Candidates come in the order their path was first seen.
    """
    tallies: dict[tuple[str, tuple[str, ...]], _Tally] = {}
    for turn in _turns(events):
        scenario, tools = _scenario(turn), turn.tools
        tally = tallies.setdefault((scenario, tools), _Tally(scenario, tools))
        if turn.succeeded:
            tally.successes += 1
            iterations = len(turn.calls)
            tally.best = iterations if tally.best is None else min(tally.best, iterations)
        else:
            tally.failures += 1
            tally.reasons[turn.failure_reason()] += 1
        tally.sources.extend(provenance(e, extractor_version) for e in turn.sources)
        tally.last = turn.sources[-1]
    return [_candidate(tally) for tally in tallies.values()]


def _candidate(tally: _Tally) -> MemoryCandidate:
    data = ProceduralData(
        scenario=tally.scenario,
        tools=tally.tools,
        successes=tally.successes,
        failures=tally.failures,
        failure_reasons=dict(sorted(tally.reasons.items())),
        best_iterations=tally.best,
    )
    path = " → ".join(tally.tools)
    line = (
        f"For '{tally.scenario}': {path} worked {data.successes}/{data.runs} "
        f"({data.success_rate:.0%})"
    )
    if data.failure_reasons:
        common = max(data.failure_reasons.items(), key=lambda item: (item[1], item[0]))[0]
        line += f"; most common failure: {common}"
    # Confidence grows with the evidence: one run says little, five say a lot.
    confidence = round(min(0.9, 0.4 + 0.1 * data.runs), 2)
    return MemoryCandidate(
        kind=MemoryKind.PROCEDURAL,
        content=line,
        subject=f"{tally.scenario}: {path}"[:256],
        data=data.model_dump(),
        keywords=tuple(dict.fromkeys([*tally.scenario.split(), *tally.tools]))[:10],
        confidence=confidence,
        sources=tuple(dict.fromkeys(tally.sources)),
        ts=tally.last.ts if tally.last is not None else None,
    )
