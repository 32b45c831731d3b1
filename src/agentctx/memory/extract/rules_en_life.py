"""English rules for what the user is doing and how they want answers: plans with their
dates (``plan: trip japan``, ``plan: move``), projects (``project: apollo``), answer style
(``answer style: length``, ``language``, ``format``, ``units``) and likes. A retraction
("the Japan trip is off", "I gave up on the beetle") states the same subject with
``data={"retracted": True}``. Health and diet are in :mod:`rules_en_health`.
"""

from __future__ import annotations

import re

from agentctx.events import Event
from agentctx.memory.extract.english import clause_value
from agentctx.memory.extract.rules_en_profile import PROPER
from agentctx.memory.extract.statements import Found, Groups, Rule, words
from agentctx.memory.extract.value_words import (
    LANGUAGES,
)
from agentctx.memory.models import MemoryKind

_IM = r"\bI(?:'m| am|m)"
_RETRACTED = {"retracted": True}


# Plans --------------------------------------------------------------------------------------

_WHEN = (
    r"(?:in|on|next|this|over|for|during|at the end of|after|before) (?:the )?"
    r"(?:\d{1,2}(?:st|nd|rd|th)? )?[\w]+(?: \d{1,2}(?:st|nd|rd|th)?)?|tomorrow|tonight|soon"
)


def _trip(match: Groups, event: Event) -> Found | None:
    place = re.match(PROPER, match["v"])
    if place is None or place.group(0).lower() in LANGUAGES:
        return None
    name = place.group(0)
    when = (match["when"] or "").strip()
    if not when and re.match(r"(?:going|heading|driving|off)\b", match["verb"], re.IGNORECASE):
        return None  # "I'm going to Costco": an errand; a trip has a date or a booking
    content = f"User plans a trip to {name}" + (f" {when}" if when else "")
    data = {"when": when} if when else {}
    return Found(
        MemoryKind.EPISODIC, content, f"plan: trip {name.lower()}", 0.75, value=name, data=data
    )


def _trip_off(match: Groups, event: Event) -> Found | None:
    place = re.match(PROPER, match["v"])
    if place is None:
        return None
    name = place.group(0)
    return Found(
        MemoryKind.EPISODIC,
        f"User's trip to {name} is cancelled",
        f"plan: trip {name.lower()}",
        0.75,
        value=name,
        data=_RETRACTED,
    )


_EVENTS = (
    r"Marathon|Half Marathon|Half|10[kK]|5[kK]|Triathlon|Ironman|Ultra|Race|Run|Ride|"
    r"Festival|Conference|Summit|Expo|Championships?|Open|Cup|Tournament|Trek|Challenge|"
    r"Hackathon|Retreat|Workshop"
)


def _event(match: Groups, event: Event) -> Found:
    name = match["v"]
    when = (match["when"] or "").strip()
    verb = match["verb"].lower()
    content = f"User {_EVENT_VERBS.get(verb, 'is doing')} the {name}" + (f" {when}" if when else "")
    data = {"when": when} if when else {}
    return Found(MemoryKind.EPISODIC, content, f"plan: {name.lower()}", 0.75, value=name, data=data)


_EVENT_VERBS = {
    "running": "is running",
    "doing": "is doing",
    "racing": "is racing",
    "signed up for": "signed up for",
    "registered for": "registered for",
    "entered": "entered",
    "switched to": "switched to",
    "attending": "is attending",
    "going to": "is going to",
}


def _dated_event(match: Groups, event: Event) -> Found:
    what = match["v"].lower()
    when = match["when"].strip()
    if what == "getting married":
        content, topic = f"User is getting married {when}", "wedding"
    elif match.string[match.start :].lower().startswith("my "):
        content, topic = f"User's {what} is {when}", what
    else:
        content, topic = f"User has a {what} {when}", what
    return Found(
        MemoryKind.EPISODIC, content, f"plan: {topic}", 0.75, value=when, data={"when": when}
    )


def _move(match: Groups, event: Event) -> Found:
    when = match["when"].strip()
    again = match["now"]
    content = f"User's move is now {when}" if again else f"User is moving house {when}"
    return Found(MemoryKind.EPISODIC, content, "plan: move", 0.75, value=when, data={"when": when})


# Projects -----------------------------------------------------------------------------------

_PROJECT_NOUNS = (
    r"project|app|application|game|website|site|tool|library|startup|bot|plugin|service|"
    r"platform|book|novel|cookbook|memoir|album|comic|course|thesis|film|documentary|"
    r"podcast|blog|company|business|extension|cli|framework|newsletter|channel|product|saas"
)
_PROJECT_NAME = r"(?-i:[A-Z][\w.-]*(?: (?:(?:&|of|and|the) )?[A-Z][\w.-]*){0,3})"
_NOT_PROJECTS = words(
    "idea plan diet gym job course class habit dream race it that this everything"
)


def _project(match: Groups, event: Event) -> Found | None:
    name = match["v"].strip("\"'\u201c\u201d").rstrip(".-")
    noun = (match["noun"] or "project").lower()
    verb = (match["verb"] or "working on").lower()
    verb = {"started": "started", "launched": "launched"}.get(verb, verb)
    article = "an" if noun[0] in "aeiou" else "a"
    content = f"User is {verb} {article} {noun} called {name}"
    if verb in {"started", "launched"}:
        content = f"User {verb} {article} {noun} called {name}"
    return Found(MemoryKind.PROJECT, content, f"project: {name.lower()}", 0.8, value=name)


def _renamed(match: Groups, event: Event) -> Found:
    old, name = match["old"], match["v"]
    return Found(
        MemoryKind.PROJECT,
        f"User's project {old} is now called {name}",
        f"project: {name.lower()}",
        0.8,
        value=name,
    )


def _restoring(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=6)
    if value is None:
        return None
    value = re.split(r"\s+(?:in|at|on|for|with|from|to)\s+", value, maxsplit=1)[0]
    if not re.search(r"(?-i:[A-Z])", value):
        return None  # "I'm making dinner": a project has a name ("a 1972 VW Beetle")
    key = value.split()[-1].lower()
    content = f"User is {match['verb'].lower()} a {value}"
    return Found(MemoryKind.PROJECT, content, f"project: {key}", 0.75, value=value)


def _project_dropped(match: Groups, event: Event) -> Found | None:
    name = match["v"]
    if name.lower() in _NOT_PROJECTS:
        return None
    return Found(
        MemoryKind.PROJECT,
        f"User stopped working on {name}",
        f"project: {name.lower()}",
        0.75,
        value=name,
        data=_RETRACTED,
    )


# How to answer ------------------------------------------------------------------------------

_SHORT = r"short|shorter|brief|briefer|concise|terse|to the point|succinct"
_LONG = r"long|longer|detailed|more detailed|in-depth|thorough|in depth"
_FORMATS = (
    r"bullet points|bullets|a table|tables|markdown|plain text|numbered lists|a list|lists|"
    r"code blocks|code examples|examples|emojis|emoji|headings|json"
)


def _length(match: Groups, event: Event) -> Found:
    word = match["v"].lower()
    return Found(
        MemoryKind.PREFERENCE, f"User wants {word} answers", "answer style: length", 0.8, value=word
    )


def _answer_language(match: Groups, event: Event) -> Found | None:
    language = match["v"].capitalize()
    if language.lower() not in LANGUAGES:
        return None
    return Found(
        MemoryKind.PREFERENCE,
        f"User wants answers in {language}",
        "answer style: language",
        0.85,
        value=language,
    )


def _answer_format(match: Groups, event: Event) -> Found:
    form = match["v"].lower()
    without = bool(match["neg"])
    content = f"User wants answers without {form}" if without else f"User wants answers with {form}"
    return Found(MemoryKind.PREFERENCE, content, "answer style: format", 0.8, value=form)


def _units(match: Groups, event: Event) -> Found:
    units = match["v"].lower()
    return Found(
        MemoryKind.PREFERENCE, f"User wants {units} units", "answer style: units", 0.8, value=units
    )


def _kind_of_person(match: Groups, event: Event) -> Found | None:
    thing = match["v"].lower()
    if thing in {"people", "morning", "night", "people's", "nice", "good", "bad", "different"}:
        return None
    content = f"User is back to {thing}" if match["back"] else f"User is a {thing} person"
    return Found(MemoryKind.PREFERENCE, content, f"preference: {thing}", 0.7, value=thing)


def _keen(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=5)
    if value is None:
        return None
    topic = re.sub(r"^(?:the|a|an)\s+", "", value.lower())
    if match["gone"]:
        content = f"User is no longer into {value}"
        return Found(MemoryKind.PREFERENCE, content, f"preference: {topic}", 0.65, value=value)
    content = f"User loves {value}"
    return Found(MemoryKind.PREFERENCE, content, f"preference: {topic}", 0.65, value=value)


def _not_fan(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=5)
    if value is None:
        return None
    topic = re.sub(r"^(?:the|a|an)\s+", "", value.lower())
    return Found(
        MemoryKind.PREFERENCE, f"User is not a fan of {value}", f"preference: {topic}", 0.65
    )


_ANSWERS = r"(?:your |the |my )?(?:answers|responses|replies|reply|response|explanations|it|things)"
LIFE_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), rule)
    for pattern, rule in (
        # Plans
        (
            rf"\b(?:the |my |our )?(?:(?P<v>{PROPER}) trip|trip to (?P<v2>{PROPER}))(?: is| was|"
            r"'s| has been| got)? (?:off|cancelled|canceled|called off)|\b(?:I|we) (?:have |'ve )?"
            rf"(?:cancelled|canceled|called off) (?:the |my |our )?(?:(?P<v3>{PROPER}) trip|"
            rf"trip to (?P<v4>{PROPER}))",
            _trip_off,
        ),
        (
            rf"\b(?:I(?:'m| am)|we(?:'re| are)) (?:not going|no longer going) to (?P<v>{PROPER})"
            r"(?: after all| anymore)?",
            _trip_off,
        ),
        (
            rf"\b(?:I(?:'m| am)|we(?:'re| are)) (?P<verb>going|heading|flying|travel(?:l)?ing|"
            rf"driving|off|taking (?:my|our|the) \w+) (?:back )?to (?P<v>{PROPER})"
            rf"(?: (?P<when>{_WHEN}))?|\b(?:I|we)"
            r"(?:'m| am|'re| are|'ve| have)? (?:planning|planned|booked|booking|plan|organizing) "
            r"(?:a |our |my |the )?(?:\w+ )?(?:trip|holiday|vacation|visit|getaway) to "
            rf"(?P<v2>{PROPER})(?: (?P<when2>{_WHEN}))?|\bmy (?:\w+ )?trip to (?P<v3>{PROPER}) "
            rf"(?:is )?(?P<when3>{_WHEN})",
            _trip,
        ),
        (
            r"(?:\b(?:I|we)(?:'m| am|'re| are|'ve| have)? |^(?:done,? |so )?|,\s*)(?P<verb>running|"
            r"doing|racing|signed up for|registered for|entered|switched to|attending|going to) "
            rf"(?:the )?(?P<v>(?-i:[A-Z][\w'.-]*(?: [A-Z][\w'.-]*){{0,3}}) (?-i:{_EVENTS}))"
            rf"(?: (?:instead|too|again))?(?: (?P<when>{_WHEN}))?",
            _event,
        ),
        (
            r"\b(?:I(?:'m| am)|we(?:'re| are)) moving(?: house| out| home| flats?)? "
            r"(?P<when>(?:on|in|next|this) [\w ]+?)(?=[,.!?;]|\s+(?:and|so|but)\b|$)|\bthe "
            r"move is (?P<now>now |pushed to |moved to |rescheduled (?:to|for) |)(?P<when2>(?:on )?"
            r"[\w ]+?)(?=[,.!?;]|\s+(?:and|so|but|ugh)\b|$)",
            _move,
        ),
        (
            rf"\bI (?:have|'ve got|got) (?:a|an|my|the) (?P<v>(?:job )?interview|exam|test|surgery|"
            r"operation|appointment|recital|competition|presentation|defen[cs]e|audition|"
            rf"wedding) (?P<when>{_WHEN})|\bmy (?P<v2>wedding|surgery|operation|interview|exam|"
            rf"graduation|due date|move|recital|defen[cs]e) is (?:now )?(?P<when2>{_WHEN}|"
            rf"\w+ \d{{1,2}}(?:st|nd|rd|th)?)|{_IM} (?P<v3>getting married) (?P<when3>{_WHEN})",
            _dated_event,
        ),
        # Projects
        (
            r"(?:\b(?:I|we)(?:'m| am|'re| are|'ve been| have been)? |^|,\s*)(?:currently |now |"
            r"still |also )?(?P<verb>building|working on|developing|making|writing|creating|"
            r"coding|started|starting|launched|launching|running) (?:a|an|my|our|this|the) "
            rf"(?:[\w-]+ ){{0,3}}?(?P<noun>{_PROJECT_NOUNS})s?(?:,? (?:called|named|titled|dubbed) "
            rf"|, )[\"'\u201c]?(?P<v>{_PROJECT_NAME})",
            _project,
        ),
        (
            rf"\brenam(?:e|ed|ing) (?P<old>{_PROJECT_NAME})\b.*?\b(?:it's|it is|now) called "
            rf"(?P<v>{_PROJECT_NAME})|\brenamed (?P<old2>{_PROJECT_NAME}) to "
            rf"(?P<v2>{_PROJECT_NAME})",
            _renamed,
        ),
        (
            rf"{_IM} (?:currently |now |slowly )?(?P<verb>restoring|renovating|rebuilding|"
            r"fixing up|refurbishing|building|making|knitting|sewing|writing) (?:a|an|my|our) "
            r"(?P<v>.+)",
            _restoring,
        ),
        (
            rf"\b(?:building|working on|developing|writing|making) (?P<v>{_PROJECT_NAME}), my "
            rf"(?:side |pet |personal |hobby |new |own )?(?P<noun>{_PROJECT_NOUNS})\b",
            _project,
        ),
        (
            rf"\bmy (?:side |pet |personal |hobby |new |own )?(?P<noun>{_PROJECT_NOUNS}),? "
            rf"(?:is )?(?:called |named )?[\"'\u201c]?(?P<v>{_PROJECT_NAME})",
            _project,
        ),
        (
            r"(?:\bI(?:'ve| have)? |^)(?:abandoned|shelved|dropped|killed|gave up on|given up on|"
            r"stopped working on|quit working on) (?:the |my )?(?P<v>[\w-]+)"
            r"(?= project\b|[,.!;]|$| for good\b| for now\b)|\bI (?:quit|paused) (?:the |my )?"
            r"(?P<v3>[\w-]+) project\b|"
            rf"(?P<v2>{_PROJECT_NAME}) is (?:dead|cancelled|canceled|shelved|abandoned|on hold)",
            _project_dropped,
        ),
        # How to answer
        (
            rf"\bkeep {_ANSWERS} (?P<v>{_SHORT})|\b(?:be|stay) (?P<v2>{_SHORT}|brief)\b|\bI "
            rf"(?:prefer|like|want|need) (?P<v3>{_SHORT}|{_LONG}) {_ANSWERS}|\b(?P<v4>{_SHORT}|"
            rf"{_LONG}) {_ANSWERS} (?:please|pls|from now on|going forward)",
            _length,
        ),
        (
            r"\b(?:answer|reply|respond|write|talk|speak)(?: to me| back)? in (?P<v>\w+)(?! "
            r"(?:detail|depth|full|short|brief))|\bI (?:prefer|want|like) (?:answers|replies|"
            r"responses) in (?P<v2>\w+)",
            _answer_language,
        ),
        (
            rf"\b(?P<neg>no|don't use|do not use|stop using|without|never use) (?P<v>{_FORMATS})\b|"
            rf"\b(?:use|give me|format (?:it|answers|everything) (?:as|in)|I (?:prefer|like|want)) "
            rf"(?P<v2>{_FORMATS})\b",
            _answer_format,
        ),
        (
            r"\b(?:use|switch to|give me|in|stick to|stick with|prefer) (?P<v>metric|imperial)"
            r"(?: units)?\b",
            _units,
        ),
        (
            rf"{_IM} (?:really |so |kind of |a bit )?(?:obsessed with|crazy about|passionate about|"
            rf"hooked on) (?P<v>.+)|{_IM} (?P<gone>no longer|not) (?:really )?into (?P<v2>.+)",
            _keen,
        ),
        (
            rf"(?:{_IM}|\bI(?:'ve| have) become|\bI became) (?:a |an )?(?P<v>\w+) person\b|"
            rf"{_IM} (?P<back>back) (?:to|on) (?P<v2>tea|coffee|\w+ing)\b",
            _kind_of_person,
        ),
        (
            rf"{_IM} (?:really |just )?not (?:a |really a )?(?:big |huge )?fan of (?P<v>.+)",
            _not_fan,
        ),
    )
)
"""Patterns of health, diet, plan, project and answer-style statements and their rules."""
