"""Days a query names, and the events that belong to them.

"What class did Kevin have on 21.01.2024?" and "What did I do yesterday?" ask about one
day, and the engine knows when every event was written. A query's days are found here
(:func:`query_days`), and the search ranks the events of those days again on their own
(``RetrievalConfig.date_weight``), as it does for a participant the query names.

Recognized forms: ``21.01.2024`` (day first), ``01/21/2024`` and ``21/01/2024`` (both
readings when both are valid dates), ``2024-01-21`` and ``2024/01/21``, ``5 Jan 2024``,
``5th of January, 2024``, ``January 6 2024``, ``Jan 6th, 2024``, the same without a
year (``on January 6``: that day of any year), and ``2024年1月21日`` / ``1月21日``.
Days named relative to the conversation's present (:class:`RelativeDay`): ``today``,
``yesterday``, ``the day before yesterday``, ``3 days ago``, ``last Friday`` / ``on
Friday`` (the last Friday before today), ``今天``, ``昨天``, ``前天``, ``3天前``; the
present is the day of the session's newest event, which for a live agent is the
message just written, and for an imported conversation its last day. A
two-digit year is not read as a date (``"11/22/63"`` is a book). A date that bounds a
period rather than naming a day (``before January 4th, 2024``, ``since 01.01.2024``,
``1月21日之前``) is left out: the events of that day are not what is asked about.

A day covers its events and those of the day after (:func:`on_named_day`): events are
stored in UTC while the question names the asker's local day, a conversation begun in
the evening goes on past midnight, and what was done one day is often told the next
("How did the game go yesterday?"). A general date parser (``dateparser``'s search)
would cover more languages, at the price of a dependency with its own language data and
of its time on every query; the forms above are a few compiled patterns.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import date, datetime, timedelta

MONTHS = {
    name: number
    for number, names in enumerate(
        (
            ("jan", "january"),
            ("feb", "february"),
            ("mar", "march"),
            ("apr", "april"),
            ("may",),
            ("jun", "june"),
            ("jul", "july"),
            ("aug", "august"),
            ("sep", "sept", "september"),
            ("oct", "october"),
            ("nov", "november"),
            ("dec", "december"),
        ),
        start=1,
    )
    for name in names
}
_MONTH = "(" + "|".join(sorted(MONTHS, key=len, reverse=True)) + r")\.?"
_ORDINAL = r"(\d{1,2})(?:st|nd|rd|th)?"
_YEAR = r"(?:,?\s+(\d{4}))?"

_NUMERIC = re.compile(r"(?<![\d./-])(\d{1,2})([./])(\d{1,2})\2(\d{4})(?![\d./-])")
_ISO = re.compile(r"(?<![\d./-])(\d{4})([-/])(\d{1,2})\2(\d{1,2})(?![\d./-])")
_DAY_MONTH = re.compile(rf"\b{_ORDINAL}\s+(?:of\s+)?{_MONTH}{_YEAR}\b", re.IGNORECASE)
_MONTH_DAY = re.compile(rf"\b{_MONTH}\s+(?:the\s+)?{_ORDINAL}\b{_YEAR}\b", re.IGNORECASE)
_CJK = re.compile(r"(?:(\d{4})\s*年\s*)?(\d{1,2})\s*月\s*(\d{1,2})\s*[日号號]")
_NUMBER_WORDS = ["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"]
_NUMBER = r"(\d{1,2}|" + "|".join(_NUMBER_WORDS) + ")"
_WEEKDAYS = ("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday")
_DAYS_BACK = (
    (re.compile(r"\b(?:the\s+)?day\s+before\s+yesterday\b|前天", re.IGNORECASE), 2),
    (re.compile(r"\b(?:yesterday|last\s+night)\b|昨天|昨晚|昨日", re.IGNORECASE), 1),
    (
        re.compile(
            r"\b(?:today|tonight|this\s+(?:morning|afternoon|evening))\b|今天|今晚|今日",
            re.IGNORECASE,
        ),
        0,
    ),
)
_AGO = re.compile(rf"\b{_NUMBER}\s+days?\s+ago\b|(\d{{1,2}})\s*天前", re.IGNORECASE)
# "on Friday", "last Friday", "Friday": the last one before today. Not "Fridays" (a
# habit), nor "next Friday" (ahead).
_WEEKDAY = re.compile(rf"(?<!next\s)\b({'|'.join(_WEEKDAYS)})\b", re.IGNORECASE)
_BOUND = re.compile(
    r"\b(?:before|after|since|until|till|by|prior\s+to|earlier\s+than|later\s+than)"
    r"\s+(?:the\s+)?$",
    re.IGNORECASE,
)
_CJK_BOUND = re.compile(r"\s*(?:之前|以前|之后|以后|之後|以後|以來|以来|前|后|後|起)")


@dataclass(frozen=True, slots=True)
class NamedDay:
    """A calendar day a query names; ``year`` None when it gave none (any year)."""

    year: int | None
    month: int
    day: int

    def matches(self, day: date) -> bool:
        """Whether ``day`` is this day (in any year when the query gave none)."""
        if self.year is not None and day.year != self.year:
            return False
        return day.month == self.month and day.day == self.day


@dataclass(frozen=True, slots=True)
class RelativeDay:
    """A day a query names relative to the present: ``days_back`` days before it, or
    (``weekday``, 0 for Monday) the last such weekday before it."""

    days_back: int = 0
    weekday: int | None = None

    def resolve(self, today: date) -> NamedDay:
        """The calendar day this is when the present is ``today``."""
        back = self.days_back
        if self.weekday is not None:
            back = (today.weekday() - self.weekday - 1) % 7 + 1  # 1-7 days back
        day = today - timedelta(days=back)
        return NamedDay(day.year, day.month, day.day)


def relative_days(query: str) -> tuple[RelativeDay, ...]:
    """The days ``query`` names relative to the present, in the order found, each once
    (a bound such as "since yesterday" names none)."""
    found: dict[RelativeDay, int] = {}  # -> where it was first named
    taken: list[tuple[int, int]] = []  # "the day before yesterday" is not also yesterday

    def add(match: re.Match[str], day: RelativeDay) -> None:
        if any(start <= match.start() < end for start, end in taken):
            return
        taken.append(match.span())
        if not _BOUND.search(query[max(0, match.start() - 20) : match.start()]):
            found[day] = min(found.get(day, match.start()), match.start())

    for pattern, back in _DAYS_BACK:
        for match in pattern.finditer(query):
            add(match, RelativeDay(back))
    for match in _AGO.finditer(query):
        number = (match.group(1) or match.group(2)).lower()
        back = int(number) if number.isdigit() else _NUMBER_WORDS.index(number) + 1
        add(match, RelativeDay(back))
    for match in _WEEKDAY.finditer(query):
        add(match, RelativeDay(weekday=_WEEKDAYS.index(match.group(1).lower())))
    return tuple(sorted(found, key=found.__getitem__))


def named_days(query: str) -> tuple[NamedDay, ...]:
    """The calendar days ``query`` names, in the order found, each once."""
    return tuple(day for day, bound in _dates(query).items() if not bound)


def _dates(query: str) -> dict[NamedDay, bool]:
    """Every date in ``query``, each once in the order found -> whether it is a bound."""
    found: dict[NamedDay, bool] = {}

    def add(start: int, year: int | None, month: int, day: int, end: int | None = None) -> None:
        try:
            date(year if year is not None else 2000, month, day)  # 2000: Feb 29 is valid
        except ValueError:
            return
        bound = bool(_BOUND.search(query[max(0, start - 20) : start])) or bool(
            end is not None and _CJK_BOUND.match(query, end)  # 1月21日之前: before it
        )
        found.setdefault(NamedDay(year, month, day), bound)

    for match in _NUMERIC.finditer(query):
        first, sep, second, year = match.groups()
        add(match.start(), int(year), int(second), int(first))  # 21.01.2024, 21/01/2024
        if sep == "/":
            add(match.start(), int(year), int(first), int(second))  # 01/21/2024
    for match in _ISO.finditer(query):
        year, _, month, day = match.groups()
        add(match.start(), int(year), int(month), int(day))
    for match in _DAY_MONTH.finditer(query):
        day, month, year = match.groups()
        if _is_month(month):
            add(match.start(), _year(year), MONTHS[month.lower()], int(day))
    for match in _MONTH_DAY.finditer(query):
        month, day, year = match.groups()
        if _is_month(month):
            add(match.start(), _year(year), MONTHS[month.lower()], int(day))
    for match in _CJK.finditer(query):
        year, month, day = match.groups()
        add(match.start(), _year(year), int(month), int(day), end=match.end())
    return found


@dataclass(frozen=True, slots=True)
class QueryDays:
    """The days a query names: calendar days, and days relative to the present."""

    calendar: tuple[NamedDay, ...]
    relative: tuple[RelativeDay, ...]

    def resolve(self, today: date | None) -> tuple[NamedDay, ...]:
        """The calendar days meant when the present is ``today`` (None: unknown, the
        relative days left out)."""
        if today is None:
            return self.calendar
        resolved = dict.fromkeys(self.calendar)
        for day in self.relative:
            resolved.setdefault(day.resolve(today))
        return tuple(resolved)


def query_days(query: str) -> QueryDays | None:
    """The days ``query`` names (None: none). Days relative to the present count only
    when the query has no date at all: in "on Friday before 10.01.2024" the Friday is
    the date's, not the present's."""
    dates = _dates(query)
    calendar = tuple(day for day, bound in dates.items() if not bound)
    relative = () if dates else relative_days(query)
    return QueryDays(calendar, relative) if calendar or relative else None


def on_named_day(ts: datetime, days: Iterable[NamedDay]) -> bool:
    """Whether an event written at ``ts`` belongs to one of ``days``: written that day or
    the day after (see the module's docstring)."""
    today = ts.date()
    yesterday = today - timedelta(days=1)
    return any(day.matches(today) or day.matches(yesterday) for day in days)


def restrict_to_days(
    rankings: Sequence[tuple[Sequence[int], float]],
    written: dict[int, datetime],
    days: Sequence[NamedDay],
    weight: float,
) -> list[tuple[list[int], float]]:
    """Each ranking restricted to the events that belong to ``days`` (``written``: seq ->
    time of each ranked event), with its weight times ``weight``; empty ones left out."""
    restricted: list[tuple[list[int], float]] = []
    for seqs, ranking_weight in rankings:
        own = [seq for seq in seqs if seq in written and on_named_day(written[seq], days)]
        if own:
            restricted.append((own, ranking_weight * weight))
    return restricted


def _is_month(word: str) -> bool:
    """Whether a month name found is one: a lowercase "may" is the verb ("3 may go")."""
    return word != "may"


def _year(text: str | None) -> int | None:
    return int(text) if text else None
