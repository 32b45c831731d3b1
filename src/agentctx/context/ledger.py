"""The values named by events a window compacts: ids, codes, dates, names, each once.

An agent's next tool call mostly passes on a value it has already seen: the user id
the user gave, a reservation id or an order number a tool returned, a flight code, a
date. When a window compacts events (the digest of turns that left the history, the
compacted part of a long turn), lines are cut to fit and the oldest lines do not fit at
all, and the values they named would be gone from the window. The ledger lists those
values in a few tokens, each once, as one line under the compact lines:

* what a tool was passed or returned as ``key=value`` (the key says what the value is),
  string leaves only, up to :data:`LONGEST_VALUE` characters (longer is prose);
* what a message said: the identifier-like words (a digit or an underscore in them,
  or a code in capitals), bare.

When the room is short, what the user said and what the agent passed to a tool come
first (the values the agent has acted on), then what tools returned, newest first;
the line shows them in the order they were first named, so the same events and room
give the same line.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping, Sequence
from operator import itemgetter
from typing import Any, Final, NamedTuple, overload

from agentctx.cache.bounded import Lru
from agentctx.context.render import event_text
from agentctx.events import Event, EventType, JsonPart, TextPart
from agentctx.tokens.base import TokenCounter

LEDGER_LABEL = "Also named earlier:"

LONGEST_VALUE = 64
"""A string leaf longer than this many characters is prose, not a value to pass on."""

_WORDS_IN_VALUE = 6
"""A string leaf of more words than this is prose."""

SCANNED_CHARACTERS = 4_000
"""A text is looked at for identifiers up to this many characters (a long tool output's
ids are mostly in its head, as its embedding reads it)."""

KEPT_EVENTS = 8_192
"""Events whose values are kept between builds (an event never changes, and a window
looks at the same events before its history from one call to the next)."""

KEPT_RUNS = 16
"""Runs of events (a digest's, a turn's compacted part) whose merged values are kept
between builds: between two slides a window compacts the same runs."""

CHUNK_SEQS = 32
"""A run's values are merged by chunks of this many seqs, each merged once."""

KEPT_CHUNKS = 512
"""Chunks whose merged values are kept between builds."""

KEPT_COSTS = 200_000
"""Values whose token costs are kept per counter, at most (then counted again)."""

# A word of three or more characters holding a digit or an underscore (ids, codes,
# dates, amounts with a unit), or a code of three or more capitals and digits. A bare
# number of up to three digits is a quantity, not an identifier.
_IDENTIFIER = re.compile(
    r"(?<![\w@.\-/])(?:(?=[\w.\-/]*[\d_])[A-Za-z0-9][\w.\-/]*[A-Za-z0-9_]|[A-Z][A-Z0-9]{2,})"
    r"(?![\w@\-/])"
)
_SMALL_NUMBER = re.compile(r"[\d.,]{1,3}")

_GIVEN = frozenset({EventType.USER_INPUT, EventType.TOOL_CALL})
_STRUCTURED = frozenset({EventType.TOOL_CALL, EventType.TOOL_RESULT})
_TEXTS = frozenset({EventType.USER_INPUT, EventType.AGENT_RESPONSE, EventType.TOOL_RESULT})


class Named(NamedTuple):
    """One value as the ledger shows it: ``key=value`` or the bare value."""

    value: str
    key: str | None
    first_seq: int  # when it was first named: the line's order
    given: bool  # said by the user or passed to a tool (shown first when room is short)
    last_seq: int  # when it was last named: the newest come first after the given


_Entry = tuple[str, str | None, int, bool, int]
"""A :class:`Named`'s fields as a plain tuple. A long session's ledgers keep a hundred
thousand values between builds: plain tuples of strings, numbers and flags, which the
garbage collector stops tracking (it never stops tracking a tuple subclass such as a
``NamedTuple``, and each object it tracks lengthens the full collections that pause the
agent)."""
_AT_VALUE: Final = 0
_AT_KEY: Final = 1
_AT_FIRST: Final = 2
_AT_GIVEN: Final = 3
_AT_LAST: Final = 4
_VALUE_OF = itemgetter(_AT_VALUE)
_KEY_OF = itemgetter(_AT_KEY)


class NamedValues(Sequence[Named]):
    """The values a run of events names (:func:`named_values`), ranked for a ledger:
    given first (said by the user, passed to a tool), then the newest first. Their token
    costs are counted once per counter: the same events come back from one build to the
    next, and a long session's events name thousands of values."""

    def __init__(self, values: Sequence[Named] | Sequence[_Entry]) -> None:
        # A plain tuple is its own copy; a Named becomes one (all C-level: a run of a
        # long session names thousands of values).
        self._values: tuple[_Entry, ...] = tuple(map(tuple, values))  # type: ignore[arg-type]
        # Given first, then the last named newest first, then the first named oldest
        # first: three stable sorts on one field each (C-level keys; a session's runs
        # name thousands of values).
        ranked = sorted(self._values, key=itemgetter(_AT_FIRST))
        ranked.sort(key=itemgetter(_AT_LAST), reverse=True)
        ranked.sort(key=itemgetter(_AT_GIVEN), reverse=True)
        self.ranked: tuple[_Entry, ...] = tuple(ranked)
        self._costs: dict[str, tuple[tuple[int, ...], dict[str, int]]] = {}

    def __len__(self) -> int:
        return len(self._values)

    @overload
    def __getitem__(self, index: int) -> Named: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[Named]: ...

    def __getitem__(self, index: int | slice) -> Named | Sequence[Named]:
        if isinstance(index, slice):
            return [Named(*entry) for entry in self._values[index]]
        return Named(*self._values[index])

    def costs(self, counter: TokenCounter) -> tuple[tuple[int, ...], dict[str, int]]:
        """The tokens of each ranked value and of each key's ``key=``, each with a token
        for the separator before it."""
        found = self._costs.get(counter.name)
        if found is None:
            named_keys = set(map(_KEY_OF, self.ranked))
            keys = sorted(k for k in named_keys if k)
            key_costs = {
                k: c + 1
                for k, c in zip(keys, counter.count_many([f"{k}=" for k in keys]), strict=True)
            }
            known = _COSTS.setdefault(counter.name, {})
            values = set(map(_VALUE_OF, self.ranked))
            new = list(values.difference(known))
            if len(known) + len(new) > KEPT_COSTS:
                known.clear()
                new = list(values)
            known.update(zip(new, (c + 1 for c in counter.count_many(new)), strict=True))
            value_costs = tuple(map(known.__getitem__, map(_VALUE_OF, self.ranked)))
            found = self._costs[counter.name] = (value_costs, key_costs)
        return found


def named_values(events: Sequence[Event]) -> NamedValues:
    """Every value ``events`` name, once each (see the module docstring); the same events
    give the same object back while it is kept."""
    key = tuple(e.event_id for e in events)
    found = _RUNS.get(key)
    if found is None:
        found = NamedValues(_merged(events))
        _RUNS.put(key, found)
    return found


def _merged(events: Sequence[Event]) -> list[_Entry]:
    """Every value of ``events`` (in seq order) once, in the order first named: the merge
    of their chunks' values (:func:`_chunk_values`), each chunk merged once and kept.

    A digest's run slides over the session: from one slide to the next it loses a few
    events at its start and gains a few at its end, and every chunk between is the same.
    Merging is associative (the first key named, the first seq, given by any, the last
    seq), so the run's merge is its chunks' merges merged, in order."""
    found: dict[str, _Entry] = {}
    for chunk in _chunks(events):
        values = _chunk_values(chunk)
        if not found:
            found = dict(values)
            continue
        both = values.keys() & found.keys()
        before = {value: found[value] for value in both}
        found |= values  # the new values after the old, the old in their places
        for value in both:
            found[value] = _combined(before[value], values[value])
    return list(found.values())


def _chunks(events: Sequence[Event]) -> Iterator[Sequence[Event]]:
    """``events`` cut where seq crosses a multiple of :data:`CHUNK_SEQS`: the same cuts
    whichever run the events are in."""
    start = 0
    for at in range(1, len(events) + 1):
        if at == len(events) or events[at].seq // CHUNK_SEQS != events[start].seq // CHUNK_SEQS:
            yield events[start:at]
            start = at


def _chunk_values(events: Sequence[Event]) -> dict[str, _Entry]:
    """The merged values of one chunk of events, kept for the next runs holding it."""
    key = tuple(e.event_id for e in events)
    found = _CHUNKS.get(key)
    if found is None:
        found = {}
        for event in events:
            given = event.type in _GIVEN
            for name, value in _kept_values(event):
                entry = (value, name, event.seq, given, event.seq)
                seen = found.get(value)
                found[value] = entry if seen is None else _combined(seen, entry)
        _CHUNKS.put(key, found)
    return found


def _combined(seen: _Entry, later: _Entry) -> _Entry:
    """One value named earlier (``seen``) and later: the first key named, the first
    seq, given by either, the last seq."""
    return (
        seen[_AT_VALUE],
        seen[_AT_KEY] or later[_AT_KEY],
        seen[_AT_FIRST],
        seen[_AT_GIVEN] or later[_AT_GIVEN],
        max(seen[_AT_LAST], later[_AT_LAST]),
    )


def ledger_line(
    counter: TokenCounter, values: Sequence[Named], shown: str, room: int
) -> tuple[str | None, int]:
    """The ledger of ``values`` not already in ``shown``, within ``room`` tokens, and what
    it costs (None and 0 when nothing fits or nothing is missing). Values of one key share
    it (``flight=A, B``)."""
    ranked = values if isinstance(values, NamedValues) else NamedValues(values)
    if not ranked:
        return None, 0
    label_cost = counter.count(LEDGER_LABEL)
    if label_cost >= room:
        return None, 0
    value_costs, key_costs = ranked.costs(counter)
    cheapest = min(value_costs)
    chosen: list[_Entry] = []
    opened: set[str | None] = set()
    spent = label_cost
    for value, cost in zip(ranked.ranked, value_costs, strict=True):
        if room - spent < cheapest:
            break  # nothing more can fit
        key = value[_AT_KEY]
        extra = 0 if key in opened else key_costs.get(key or "", 1)
        if spent + cost + extra > room:
            continue  # a shorter one may still fit
        if value[_AT_VALUE] in shown:
            continue  # the lines show it (looked up only for what would fit: it is slow)
        chosen.append(value)
        opened.add(key)
        spent += cost + extra
    while chosen:
        line = _render(chosen)
        tokens = counter.count(line)
        if tokens <= room:
            return line, tokens
        chosen.pop()  # the estimate per entry was short: the least wanted goes
    return None, 0


def _render(values: list[_Entry]) -> str:
    """The chosen values grouped by key, keys and values in the order first named."""
    groups: dict[str | None, list[_Entry]] = {}
    for value in sorted(values, key=lambda v: v[_AT_FIRST]):
        groups.setdefault(value[_AT_KEY], []).append(value)
    entries = []
    for key, members in groups.items():
        listed = ", ".join(v[_AT_VALUE] for v in members)
        entries.append(f"{key}={listed}" if key else listed)
    return f"{LEDGER_LABEL} " + "; ".join(entries)


_KEPT: Lru[str, tuple[tuple[str | None, str], ...]] = Lru(KEPT_EVENTS)
_RUNS: Lru[tuple[str, ...], NamedValues] = Lru(KEPT_RUNS)
_CHUNKS: Lru[tuple[str, ...], dict[str, _Entry]] = Lru(KEPT_CHUNKS)
_COSTS: dict[str, dict[str, int]] = {}
"""Per counter, the tokens of each value (plus its separator): a value costs the same in
every run naming it."""


def _kept_values(event: Event) -> tuple[tuple[str | None, str], ...]:
    """:func:`_values_of` ``event``, kept for the next builds (least recently used out)."""
    found = _KEPT.get(event.event_id)
    if found is None:
        found = tuple(dict.fromkeys(_values_of(event)))  # each (key, value) once
        _KEPT.put(event.event_id, found)
    return found


def forget_values() -> None:
    """Drop the values kept between builds (after a user's erasure: they are taken from
    events' text)."""
    _KEPT.clear()
    _RUNS.clear()
    _CHUNKS.clear()
    _COSTS.clear()


def _values_of(event: Event) -> Iterator[tuple[str | None, str]]:
    """(key, value) of what ``event`` names: the leaves of a tool call's or result's JSON,
    else the identifiers of a message's or result's text."""
    structured = _json_of(event) if event.type in _STRUCTURED else None
    if structured is not None:
        yield from _leaves(structured, None)
    elif event.type in _TEXTS:
        for match in _IDENTIFIER.finditer(event_text(event)[:SCANNED_CHARACTERS]):
            word = match.group(0)
            if not _SMALL_NUMBER.fullmatch(word):
                yield None, word


def _json_of(event: Event) -> Any:
    for part in event.parts:
        if isinstance(part, JsonPart):
            return part.data
        if isinstance(part, TextPart) and part.text.lstrip()[:1] in ("{", "["):
            try:
                return json.loads(part.text)
            except ValueError:
                return None
    return None


def _leaves(value: Any, key: str | None) -> Iterator[tuple[str | None, str]]:
    if isinstance(value, Mapping):
        for name, inner in value.items():
            yield from _leaves(inner, str(name))
    elif isinstance(value, list):
        for inner in value:
            yield from _leaves(inner, key)
    elif isinstance(value, str):
        text = value.strip()
        if (
            text
            and len(text) <= LONGEST_VALUE
            and len(text.split()) <= _WORDS_IN_VALUE
            and not (text.startswith("[") and text.endswith("]"))  # a redaction placeholder
        ):
            yield key, text
