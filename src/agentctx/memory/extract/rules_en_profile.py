"""English rules for who the user is: name, job, employer, city and home town (each one
memory, single-valued: a later statement supersedes).

They run before the general rules of :mod:`rules_en`, so a sentence they read ("I'm a
software engineer at Google") is not read again as something looser.
"""

from __future__ import annotations

import re

from agentctx.events import Event
from agentctx.memory.extract.english import clause_value, corrected
from agentctx.memory.extract.rules_en import i_am_a
from agentctx.memory.extract.statements import Found, Groups, Rule, words
from agentctx.memory.models import MemoryKind

# A proper name as written: capitalized whatever the rule's case-insensitivity.
NAME = r"(?-i:[A-Z][a-z]+(?:[-'][A-Z][a-z]+)?)"
FULL_NAME = rf"{NAME}(?: {NAME})?"
# A place or an organization: capitalized words ("New York", "Crumb & Co", "St Mary's").
PROPER = r"(?-i:[A-Z][\w'.-]*(?: (?:(?:&|of|and|de|la|du|von|van) )?[A-Z][\w'.-]*){0,3})"
_IM = r"\bI(?:'m| am|m)"
# "I" left out at the start of a sentence, as people type: "work as a barista", "moved
# to London", "got hired as a chef".
_I_OR_START = (
    r"(?:(?:^|\s[-\u2013\u2014]\s|[,;]\s)(?:so |and |well |just |finally |then |ok so )?|"
    r"\bI (?:just |finally |recently |also )?)"
)
# Capitalized words that follow "I'm" or a relation without being a name.
NOT_NAMES = words(
    """
    American British English Canadian Australian German French Italian Spanish Mexican
    Chinese Japanese Korean Indian Irish Scottish Welsh Dutch Swedish Polish Russian
    Ukrainian Brazilian Jewish Muslim Christian Catholic Buddhist Hindu European Asian
    African Latino Latina Vegan Vegetarian Sorry Back Here Home Done Fine Good Okay Ok Just
    So Not Still Also Really Pretty Very Currently Now Based From In At On Into Gonna Going
    Trying Looking Working Moving Thinking Curious New Free Busy Tired January February
    March April May June July August September October November December Monday Tuesday
    Wednesday Thursday Friday Saturday Sunday Ready Sure Glad Happy Sad Bored Excited Late
    Early Lost Stuck Confused Hungry Sick Alive Alone Afraid Aware Broke Certain Serious
    Exhausted Thankful Grateful
    """
)
_TIME_TAIL = re.compile(
    r"\s+(?:last|next|this|in|since|for|a|two|three|few|about|over|back|ago|recently)\b.*$",
    re.IGNORECASE,
)


def proper(raw: str) -> str | None:
    """The proper name at the start of ``raw`` (corrections applied), else None."""
    match = re.match(PROPER, corrected(raw).lstrip(" \"'"))
    if match is None or match.group(0) in NOT_NAMES:
        return None
    return _TIME_TAIL.sub("", match.group(0)).rstrip(".'") or None


# Name --------------------------------------------------------------------------------------


def _name(match: Groups, event: Event) -> Found | None:
    value = re.match(FULL_NAME, corrected(match["v"]))
    if value is None or any(word in NOT_NAMES for word in value.group(0).split()):
        return None
    name = value.group(0)
    return Found(MemoryKind.PROFILE, f"User's name is {name}", "name", 0.85, value=name)


# Work ---------------------------------------------------------------------------------------

_NOT_OCCUPATIONS = frozenset(
    [
        "beginner",
        "learner",
        "member",
        "user",
        "customer",
        "runner",
        "lover",
        "believer",
        "smoker",
        "drinker",
        "sleeper",
        "eater",
        "mother",
        "father",
        "brother",
        "sister",
        "partner",
        "fan",
        "speaker",
        "person",
        "reader",
        "listener",
    ]
)


def _occupation(match: Groups, event: Event) -> tuple[Found, ...] | None:
    value = clause_value(match["v"], max_words=8)
    if value is None:
        return None
    value = re.sub(r"^(?:an?|the)\s+", "", value, flags=re.IGNORECASE)
    parts = re.split(r"\s+(at|in|for|with|from)\s+", value, maxsplit=1)
    value = parts[0]
    if not value or value.split()[-1].lower() in _NOT_OCCUPATIONS:
        return None
    verb = match["verb"].lower()
    content = (
        f"User runs their own {value}" if verb.startswith("run") else f"User works as a {value}"
    )
    job = Found(MemoryKind.PROFILE, content, "occupation", 0.8, value=value)
    return (job, *_employer_in(parts))


def _employer_in(parts: list[str]) -> tuple[Found, ...]:
    """The employer a job's tail names ("… at Spotify"), if any."""
    if len(parts) < 3 or parts[1] not in {"at", "for", "with"}:
        return ()
    org = proper(parts[2])
    if org is None or org in _NOT_PLACES:
        return ()
    return (Found(MemoryKind.PROFILE, f"User works at {org}", "employer", 0.75, value=org),)


def _role_at(match: Groups, event: Event) -> tuple[Found, ...] | None:
    job = i_am_a(match, event)
    if job is None or job.subject != "occupation":
        return None
    return (job, *_employer_in(["", "at", match["org"]]))


def _employer(match: Groups, event: Event) -> Found | None:
    value = proper(match["v"])
    if value is None:
        return None
    if match["at"] and not _WORK_WORDS.search(match.string):
        return None  # "I'm at Starbucks": a place the user is at, unless work is the topic
    return Found(MemoryKind.PROFILE, f"User works at {value}", "employer", 0.8, value=value)


def _employer_left(match: Groups, event: Event) -> Found | None:
    value = proper(match["v"])
    if value is None:
        return None
    return Found(
        MemoryKind.PROFILE,
        f"User no longer works at {value}",
        "employer",
        0.75,
        value=value,
        data={"retracted": True},
    )


_WORK_WORDS = re.compile(
    r"\b(?:work|job|office|team|boss|shift|colleagues?|coworkers?|manager|company|firm|"
    r"employer|promotion|raise|salary|role|busy season|clients?|hired|career|intern(?:ship)?)\b",
    re.IGNORECASE,
)


# Place --------------------------------------------------------------------------------------

_NOT_PLACES = NOT_NAMES


def _residence(match: Groups, event: Event) -> Found | None:
    value = proper(match["v"])
    if value is None or value in _NOT_PLACES:
        return None
    verb = match["verb"].lower()
    content = f"User moved to {value}" if verb.startswith(("moved", "relocated")) else None
    return Found(
        MemoryKind.PROFILE, content or f"User lives in {value}", "residence", 0.8, value=value
    )


def _home_town(match: Groups, event: Event) -> Found | None:
    value = proper(match["v"])
    if value is None or value in _NOT_PLACES:
        return None
    return Found(MemoryKind.PROFILE, f"User is from {value}", "home town", 0.75, value=value)


PROFILE_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), rule)
    for pattern, rule in (
        # Name
        (
            rf"\bmy name's (?P<v>.+)|{_IM} (?P<v2>{FULL_NAME})(?=\s*(?:[,.!;]|$|\s+(?:btw|"
            r"here|now|by the way|and|from|again)\b))",
            _name,
        ),
        (
            r"\b(?:sorry|oops|typo|autocorrect\w*|i mean)\b.*?\b(?:it's|it is|its|that's) (?P<v>"
            + NAME
            + r")\b",
            _name,
        ),
        (rf"^(?P<v>{NAME}) (?:again|here)\s*[,!.\-]", _name),
        # Work
        (
            rf"{_IM} (?:now |currently |also )?(?P<a>an?) (?P<v>[\w -]{{2,40}}?) (?:at|for|with) "
            rf"(?P<org>{PROPER})|\bI(?:'ve| have) been (?P<a2>an?) (?P<v2>[\w -]{{2,40}}?) for\b|"
            r"\bI (?:became|'ve become|have become) (?P<a3>an?) (?P<v3>[\w -]{2,40}?)(?=[,.!;]|$|"
            r"\s+(?:and|so|but|last|this|in)\b)",
            _role_at,
        ),
        (
            rf"{_I_OR_START}(?:currently |now |still )?(?P<verb>work(?:ing|ed)?|started|start|"
            rf"began|got hired|was hired|got a job|got a new job|'m starting|am starting) "
            r"(?:working |out )?as (?:an? |the )?(?P<v>.+)",
            _occupation,
        ),
        (
            rf"{_IM} (?:now |currently )?(?P<verb>running|run) my own (?P<v>.+)|\bI "
            r"(?P<verb2>run) my own (?P<v2>.+)",
            _occupation,
        ),
        (
            r"\bI work (?:for|at) (?:a|an|the) (?:[\w-]+ ){0,4}?(?:chain|company|firm|startup|"
            r"agency|bakery|shop|store|restaurant|hospital|clinic|school|bank|caf[eé]|studio|"
            rf"lab|brand|consultancy|business),? (?:called |named )?(?P<v>{PROPER})",
            _employer,
        ),
        (
            rf"\bI(?:'ve| have)? (?:been )?work(?:ed|ing) (?:for|at) (?P<v>{PROPER})|"
            rf"{_IM} (?:now |currently )?(?P<at>at) (?P<v2>{PROPER})(?!\s+(?:this|for|today|"
            r"tonight|right now|on|until|till|airport|station|hotel)\b)|"
            rf"(?:{_I_OR_START}|{_IM} (?:now |also )?)(?:start|starting|started|will start|"
            r"'ll start)(?: (?:a |my )?(?:new )?(?:job|role|position))? (?:at|with) "
            rf"(?P<v3>{PROPER})|"
            rf"(?:{_I_OR_START}|{_IM} (?:now |also )?)(?:joined|joining) (?P<v4>{PROPER})",
            _employer,
        ),
        (
            rf"{_I_OR_START}(?:quit|left|resigned from|got laid off from|was laid off from|"
            rf"got fired from|no longer work (?:at|for)) (?P<v>{PROPER})|\blast day at "
            rf"(?P<v2>{PROPER})",
            _employer_left,
        ),
        # Place
        (
            rf"(?:{_I_OR_START}|\bwe(?:'ve| have)? (?:just |recently |finally )?)"
            r"(?P<verb>moved|relocated)(?: down| up| over| back| out)? to (?P<v>.+)|"
            rf"{_IM} (?:now |currently )?(?P<verb2>based|living|settled|back|now) in (?P<v2>.+)|"
            rf"{_IM} (?P<verb3>in) (?P<v3>{PROPER})(?=\s*(?:,|\.|$|and\b))|"
            rf"\b(?:but|and|now) (?:I )?(?P<verb4>live) in (?P<v4>{PROPER})",
            _residence,
        ),
        (
            rf"\bI grew up in (?P<v>{PROPER})|\bI(?:'m| am) originally from (?P<v2>{PROPER})",
            _home_town,
        ),
    )
)
"""Patterns of name, work and place statements and their rules."""
