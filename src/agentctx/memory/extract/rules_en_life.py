"""English rules for how the user lives: health, diet, plans, projects, and how they want
answers. Each states one thing under its own subject (``allergy: peanuts``, ``diet``,
``diet: pork``, ``plan: trip japan``, ``project: apollo``, ``answer style: length``), and
a retraction ("I'm no longer vegetarian", "the Japan trip is off") states the same
subject with ``data={"retracted": True}``.
"""

from __future__ import annotations

import re

from agentctx.events import Event
from agentctx.memory.extract.english import clause_value, corrected
from agentctx.memory.extract.rules_en_profile import PROPER
from agentctx.memory.extract.statements import Found, Groups, Rule, words
from agentctx.memory.extract.vocabulary import (
    CONDITION_ADJECTIVES,
    CONDITIONS,
    DIET_REGIMES,
    FOODS,
    LANGUAGES,
)
from agentctx.memory.models import MemoryKind

_IM = r"\bI(?:'m| am|m)"
_BODY_PARTS = (
    r"wrist|arm|leg|ankle|foot|hand|finger|thumb|toe|rib|collarbone|knee|shoulder|elbow|"
    r"hip|nose|jaw"
)
_RETRACTED = {"retracted": True}
_GONE = re.compile(r"\b(?:anymore|any more|no longer|not any longer|outgrew|outgrown)\b", re.I)


def singular(word: str) -> str:
    """A crude singular for subjects: "peanuts" and "peanut" name one allergy."""
    lower = word.lower()
    if lower.endswith("ies") and len(lower) > 4:
        return lower[:-3] + "y"
    if lower.endswith("oes") and len(lower) > 4:
        return lower[:-2]
    if lower.endswith("s") and not lower.endswith(("ss", "us", "is")) and len(lower) > 3:
        return lower[:-1]
    return lower


def _things(raw: str, *, max_words: int = 4) -> list[str]:
    """The items of a short list value ("peanuts, shellfish and eggs")."""
    value = clause_value(re.sub(r"\s+(?:and|&)\s+", ", ", corrected(raw)), max_words=12)
    if value is None:
        return []
    items = [i.strip() for i in re.split(r",\s*|\s+or\s+", value) if i.strip()]
    items = [re.sub(r"^(?:and|all|any|most|some|the)\s+", "", i, flags=re.I) for i in items]
    return [i for i in items if i and len(i.split()) <= max_words]


# Health -------------------------------------------------------------------------------------


def _allergy(match: Groups, event: Event) -> tuple[Found, ...] | None:
    gone = bool(match["neg"]) or bool(_GONE.search(match.string))
    found = []
    for item in _things(match["v"]):
        thing = re.sub(r"\s+allerg(?:y|ies)$", "", item, flags=re.I)
        subject = f"allergy: {singular(thing)}"
        if gone:
            found.append(
                Found(
                    MemoryKind.FACT,
                    f"User is no longer allergic to {thing}",
                    subject,
                    0.8,
                    value=thing,
                    data=_RETRACTED,
                )
            )
        else:
            content = f"User is allergic to {thing}"
            found.append(Found(MemoryKind.FACT, content, subject, 0.85, value=thing))
    return tuple(found) or None


_CONDITION_AT_START = re.compile(rf"(?:an? )?({CONDITIONS})\b", re.IGNORECASE)


def _condition(match: Groups, event: Event) -> Found | None:
    raw = corrected(match["v"]).strip().lower()
    if raw in CONDITION_ADJECTIVES:
        condition = CONDITION_ADJECTIVES[raw]
    else:
        found = _CONDITION_AT_START.match(raw)
        if found is None:
            return None
        condition = found.group(1)
    subject = f"health: {condition}"
    if match["neg"] or _GONE.search(match.string):
        return Found(
            MemoryKind.FACT,
            f"User no longer has {condition}",
            subject,
            0.75,
            value=condition,
            data=_RETRACTED,
        )
    return Found(MemoryKind.FACT, f"User has {condition}", subject, 0.8, value=condition)


def _healed(match: Groups, event: Event) -> Found:
    part = match["v"].lower()
    # A cast comes off a fracture: "cast came off, the wrist is healed" ends a broken wrist.
    injury = "broken" if re.search(r"\bcast\b", match.string, re.IGNORECASE) else "injured"
    return Found(
        MemoryKind.FACT,
        f"User's {injury} {part} has healed",
        f"health: {injury} {part}",
        0.7,
        value=part,
        data=_RETRACTED,
    )


# Diet ---------------------------------------------------------------------------------------


_DIETS_FOLLOWED = frozenset({"keto", "paleo", "carnivore"})


def _regime(match: Groups, event: Event) -> Found | None:
    regime = match["v"].lower()
    if regime not in DIET_REGIMES:
        return None
    if match["neg"] or _GONE.search(match.string):
        return Found(
            MemoryKind.PREFERENCE,
            f"User is no longer {regime}",
            "diet",
            0.8,
            value=regime,
            data=_RETRACTED,
        )
    content = f"User follows a {regime} diet" if regime in _DIETS_FOLLOWED else f"User is {regime}"
    return Found(MemoryKind.PREFERENCE, content, "diet", 0.85, value=regime)


def _meat_again(match: Groups, event: Event) -> Found:
    return Found(
        MemoryKind.PREFERENCE,
        "User eats meat again (no longer vegetarian or vegan)",
        "diet",
        0.7,
        data=_RETRACTED,
    )


_NOT_FOODS = re.compile(
    r"^(?:much|anything|breakfast|lunch|dinner|out|late|that|this|it|there|here|now|today|"
    r"right|after|before|at|in|on|with|enough|well|properly|alone|a lot|lots)\b",
    re.IGNORECASE,
)


def _avoids(match: Groups, event: Event) -> tuple[Found, ...] | None:
    again = bool(match["again"])
    found = []
    for thing in _things(match["v"], max_words=3):
        if _NOT_FOODS.match(thing) or (match["food"] and thing.lower() not in FOODS):
            return None
        subject = f"diet: {singular(thing)}"
        if again:
            content = f"User eats {thing} again"
            found.append(
                Found(MemoryKind.PREFERENCE, content, subject, 0.7, value=thing, data=_RETRACTED)
            )
        else:
            content = f"User doesn't eat {thing}"
            found.append(Found(MemoryKind.PREFERENCE, content, subject, 0.8, value=thing))
    return tuple(found) or None


def _free_of(match: Groups, event: Event) -> Found:
    thing = match["v"].lower()
    return Found(
        MemoryKind.PREFERENCE,
        f"User eats {thing}-free",
        f"diet: {thing}",
        0.85,
        value=f"{thing}-free",
    )


def _intolerant(match: Groups, event: Event) -> Found:
    thing = match["v"].lower()
    return Found(
        MemoryKind.PREFERENCE,
        f"User is {thing} intolerant (eats {thing}-free)",
        f"diet: {thing}",
        0.85,
        value=thing,
    )


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
        # Health
        (
            rf"{_IM} (?P<neg>not |no longer )?(?:\w+ )?allergic to (?P<v>.+)|\bI have (?:an? )?"
            r"(?:severe |mild |bad |serious )?allergy to (?P<v2>.+)|\bI(?:'ve| have) "
            r"(?P<neg2>outgrown|outgrew) my (?P<v3>\w+(?: \w+)?) allergy|\bI have (?:an? )?"
            r"(?:severe |mild |bad |serious )?(?P<v4>\w+(?: \w+)?) allerg(?:y|ies)\b",
            _allergy,
        ),
        (
            r"\bI(?P<neg> no longer| don't| do not)?(?: have|'ve got| got| get| suffer from| was "
            r"diagnosed with| live with| struggle with| deal with) (?P<v>.+)|"
            rf"{_IM} (?P<neg2>no longer |not )?(?P<v2>{'|'.join(CONDITION_ADJECTIVES)})\b|"
            rf"\bmy (?P<v3>{CONDITIONS}) (?:is|has) (?:gone|cured|healed|fully healed|"
            r"resolved|in remission)(?P<neg3>)",
            _condition,
        ),
        (
            rf"\b(?:my|the) (?P<v>{_BODY_PARTS}) (?:is|has) (?:now )?(?:fully |completely |"
            r"finally |all )?(?:healed|mended)",
            _healed,
        ),
        # Diet
        (
            rf"{_IM} (?P<neg>not |no longer )?(?:now |also |a |an |strictly |fully |mostly |"
            r"still )*(?P<v>\w+)\b(?! (?:restaurant|place|recipe|dish|option|friend))|"
            r"\bI(?: went| became| turned| have gone|'ve gone| switched to|'m going| am going|"
            r"(?:'ve| have) gone back to being| went back to being|(?:'ve| have) been) "
            r"(?P<v2>vegan|vegetarian|pescatarian|keto|paleo)\b|(?:^|,\s*)(?:still|now|fully|"
            r"proudly) (?P<v5>vegan|vegetarian|pescatarian)\b|\bI(?: eat| follow| do| am on|'m on|"
            r" started) (?:a |the )?(?P<v3>keto|paleo|vegan|vegetarian|pescatarian)(?: diet)?\b|"
            r"\bI (?P<neg2>stopped|quit) (?:being |eating )?(?P<v4>vegan|vegetarian|keto|paleo)",
            _regime,
        ),
        (
            r"\bI(?:'ve| have)? (?:started |begun )?(?:eat|eating) (?:meat|fish and meat|"
            r"chicken|meat and fish) again\b",
            _meat_again,
        ),
        (
            r"\bI (?:don't|do not|can't|cannot|never|won't|no longer) (?:eat|touch) "
            r"(?P<v>.+)|\bI (?P<food>avoid|stay away from|cut out) (?P<v2>.+)|\bI(?:'ve| have)? "
            r"(?:started )?(?:eat|eating) (?P<v3>\w+(?: \w+)?) (?P<again>again)\b",
            _avoids,
        ),
        (rf"{_IM} (?:\w+ )?(?P<v>lactose|gluten|fructose) intolerant", _intolerant),
        (
            r"\bI (?:have to|need to|must|can only|only) eat (?P<v>[\w]+)-free\b|"
            rf"{_IM} (?:on )?(?:a )?(?P<v2>[\w]+)-free(?: diet)?\b",
            _free_of,
        ),
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
            rf"\b(?:I(?:'m| am)|we(?:'re| are)) (?:going|heading|flying|travel(?:l)?ing|driving|"
            rf"off) (?:back )?to (?P<v>{PROPER})(?: (?P<when>{_WHEN}))?|\b(?:I|we)(?:'m| am|'re| "
            r"are|'ve| have)? (?:planning|planned|booked|booking|plan|organizing) (?:a |our |my |"
            rf"the )?(?:\w+ )?(?:trip|holiday|vacation|visit|getaway) to (?P<v2>{PROPER})(?: "
            rf"(?P<when2>{_WHEN}))?|\bmy (?:\w+ )?trip to (?P<v3>{PROPER}) (?:is )?"
            rf"(?P<when3>{_WHEN})",
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
        # Projects
        (
            r"(?:\b(?:I|we)(?:'m| am|'re| are|'ve been| have been)? |^|,\s*)(?:currently |now |"
            r"still |also )?(?P<verb>building|working on|developing|making|writing|creating|"
            r"coding|started|starting|launched|running) (?:a|an|my|our|this|the) "
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
            rf"\bmy (?:side |pet |personal |hobby |new |own )?(?P<noun>{_PROJECT_NOUNS}),? "
            rf"(?:is )?(?:called |named )?[\"'\u201c]?(?P<v>{_PROJECT_NAME})",
            _project,
        ),
        (
            r"(?:\bI(?:'ve| have)? |^)(?:abandoned|shelved|dropped|killed|gave up on|given up on|"
            r"stopped working on|quit working on) (?:the |my )?(?P<v>[\w-]+)|"
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
