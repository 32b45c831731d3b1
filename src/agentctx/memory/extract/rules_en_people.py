"""English rules for the user's languages, skills and family: one memory per language
(``language: french``), skill (``skill: rust``) and family member (``family: daughter:
chloe``), so several coexist; a child starting school is a family member and a dated plan.
"""

from __future__ import annotations

import re
from dataclasses import replace

from agentctx.events import Event
from agentctx.memory.extract.english import corrected
from agentctx.memory.extract.rules_en_profile import NAME, NOT_NAMES
from agentctx.memory.extract.statements import Found, Groups, Rule, names_nobody
from agentctx.memory.extract.value_words import (
    INSTRUMENTS,
    LANGUAGES,
    RELATION_PATTERN,
    RELATIONS,
    TECH,
    TECH_AS_WRITTEN,
)
from agentctx.memory.models import MemoryKind

_IM = r"\bI(?:'m| am|m)"


# Languages and skills ------------------------------------------------------------------------

_LIST_SEPARATOR = re.compile(r"\s*(?:,|\band\b|\bplus\b|/|&)\s*", re.IGNORECASE)
_QUALIFIERS = re.compile(
    r"^(?:(?:some|a little|a bit of|a bit|basic|conversational|decent|fluent|native|"
    r"good|great|ok|okay|passable|broken|also|both|bits of|pretty much|mostly|little)\s+)+",
    re.IGNORECASE,
)


def _listed(raw: str, accept: object) -> list[str]:
    """The leading items of ``raw`` ("French, Spanish and a bit of German") that
    ``accept`` (a callable on one item) takes, in order; stops at the first it refuses."""
    assert callable(accept)
    text = re.split(r"[.;:!?()]|\s[-\u2013\u2014]\s", corrected(raw), maxsplit=1)[0]
    found: list[str] = []
    for part in _LIST_SEPARATOR.split(text):
        item = _QUALIFIERS.sub("", part.strip()).strip()
        if not item:
            continue
        value = accept(item)
        if value is None:
            if found:
                break
            return []
        found.append(value)
    return found


def _language_word(item: str) -> str | None:
    word = item.split(maxsplit=1)[0] if item.split() else ""
    return word.capitalize() if word.lower() in LANGUAGES else None


def _tech_word(item: str) -> str | None:
    word = item.split(maxsplit=1)[0] if item.split() else ""
    word = word.rstrip(",.")
    if word in TECH_AS_WRITTEN or word.lower() in TECH:
        return word
    return None


def _instrument(item: str) -> str | None:
    words = re.sub(r"^the\s+", "", item, flags=re.IGNORECASE).split()
    return words[0].lower() if words and words[0].lower() in INSTRUMENTS else None


def _languages(match: Groups, event: Event) -> tuple[Found, ...] | None:
    verb = match["verb"].lower()
    found: list[Found] = []
    for language in _listed(match["v"], _language_word):
        if match["gone"]:
            content, data = f"User can no longer speak {language}", {"retracted": True}
        elif verb.startswith("learn"):
            content, data = f"User is learning {language}", {}
        elif verb in {"first", "native", "mother"}:
            content, data = f"User's {verb} language is {language}", {}
        else:
            content, data = f"User speaks {language}", {}
        subject = f"language: {language.lower()}"
        found.append(Found(MemoryKind.PROFILE, content, subject, 0.8, value=language, data=data))
    return tuple(found) or None


def _skills(match: Groups, event: Event) -> tuple[Found, ...] | None:
    verb = match["verb"].lower()
    instrument = verb.startswith("play")
    accept = _instrument if instrument else _tech_word
    found: list[Found] = []
    for skill in _listed(match["v"], accept):
        if match["gone"]:
            content = (
                f"User no longer plays {skill}" if instrument else f"User no longer uses {skill}"
            )
            data: dict[str, object] = {"retracted": True}
        else:
            content = f"User plays {skill}" if instrument else f"User knows {skill}"
            data = {}
        subject = f"skill: {skill.lower()}"
        found.append(Found(MemoryKind.SKILL, content, subject, 0.8, value=skill, data=data))
    return tuple(found) or None


# Family -------------------------------------------------------------------------------------


def family_member(word: str, name: str | None, *, written: str | None = None) -> Found:
    """The family member ``word`` ("daughter", "wife") of the user, named ``name`` if known."""
    relation = RELATIONS.get(word.lower(), word.lower())
    shown = written or word.lower()
    if name is None or names_nobody(name):  # "my son [PERSON]": a son, whose name is not kept
        return Found(MemoryKind.FACT, f"User has a {shown}", f"family: {relation}", 0.7)
    return Found(
        MemoryKind.FACT,
        f"User's {shown} is named {name}",
        f"family: {relation}: {name.lower()}",
        0.8,
        value=name,
    )


def _family(match: Groups, event: Event) -> tuple[Found, ...] | None:
    names = re.findall(NAME, match["v"])
    if not names or any(n in NOT_NAMES for n in names):
        return None
    relation = match["rel"] or "partner"
    return tuple(family_member(relation, name) for name in names)


def _has_family(match: Groups, event: Event) -> Found:
    word = match["rel"].lower()
    relation = "child" if word == "children" else word
    found = family_member(relation, None)
    plural = match["n"].lower() not in {"a", "an", "one", "1"}
    shown = word if word == "children" or not plural else f"{word}s"
    return replace(found, content=f"User has {match['n'].lower()} {shown}")


def _partner_named(match: Groups, event: Event) -> Found | None:
    name = match["v"]
    if name in NOT_NAMES:
        return None
    word = {"his": "boyfriend", "her": "girlfriend"}.get(match["pron"].lower(), "partner")
    return family_member(word, name)


def _breakup(match: Groups, event: Event) -> Found | None:
    name = match["v"]
    if name in NOT_NAMES:
        return None
    return Found(
        MemoryKind.FACT,
        f"User and {name} broke up",
        f"family: partner: {name.lower()}",
        0.75,
        value=name,
        data={"retracted": True},
    )


_SCHOOL = (
    r"(?:primary |elementary |middle |high |secondary |nursery |grade |pre)?school|"
    r"kindergarten|preschool|nursery|daycare|college|university|uni|first grade|year \d+|"
    r"\w+ grade"
)


def _starts_school(match: Groups, event: Event) -> tuple[Found, ...] | None:
    name = match["name"] or None
    rel = match["rel"]
    if name is None and not rel:
        return None
    what = match["what"].lower()
    when = (match["when"] or "").strip()
    who = (
        f"User's {rel.lower()} {name}"
        if rel and name
        else (f"User's {rel.lower()}" if rel else name)
    )
    assert who is not None
    content = f"{who} starts {what}" + (f" {when}" if when else "")
    topic = f"plan: {what.split()[-1] if 'school' in what else what} {(name or rel).lower()}"
    plan = Found(
        MemoryKind.EPISODIC,
        content,
        topic,
        0.75,
        data={"when": when} if when else {},
    )
    return (family_member(rel, name), plan) if rel else (plan,)


_WHEN = r"(?:in|on|next|this|at the end of|after) [\w ]+?"
_ADJ = (
    r"(?:(?:little|older|younger|big|baby|eldest|oldest|youngest|twin|new|step|teenage|"
    r"\d+[- ]year[- ]old) )?"
)
PEOPLE_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), rule)
    for pattern, rule in (
        # Languages
        (
            rf"\bI (?:can )?(?:also |still )?(?P<verb>speak) (?P<v>.+)|{_IM} (?:also )?"
            r"(?:\w+ )?(?P<verb2>fluent|conversational|proficient) in (?P<v2>.+)|"
            rf"{_IM} (?:also )?(?P<verb3>learning) (?P<v3>.+)",
            _languages,
        ),
        (
            r"\bI (?:can't|cannot|can not|don't) (?P<verb>speak) (?P<v>\w+) "
            r"(?P<gone>anymore|any more)|"
            r"\bI(?:'ve| have) (?P<gone2>forgotten) (?:all |most )?(?:of )?(?:my )?(?P<v2>\w+)",
            _languages,
        ),
        (
            r"(?P<v>\w+) is my (?P<verb>first|native|mother) (?:language|tongue)|\bmy "
            r"(?P<verb2>first|native|mother) (?:language|tongue) is (?P<v2>\w+)|"
            rf"{_IM} a (?P<verb3>native) (?P<v3>\w+) speaker",
            _languages,
        ),
        # Skills
        (
            r"(?:\bI (?:also |already |just )?(?P<verb>know|write|code in|program in|"
            r"develop in|use|work with|learned|learnt)|(?:\bI(?:'ve| have) been|\bI(?:'m| am)) "
            r"(?P<verb2>coding|programming|writing|developing|using|working|learning)"
            r"(?: in| with)?) (?P<v>.+)|^(?:been )?(?P<verb3>coding|programming|writing|"
            r"developing) (?:in |with )?(?P<v2>[\w+#.]+) (?:for|since|every)\b",
            _skills,
        ),
        (
            rf"{_IM} (?:pretty |really |very |quite |fairly |decent(?:ly)? )?(?P<verb>good|decent|"
            r"great|skilled|proficient|experienced|an expert|fluent) (?:at|in|with) (?P<v>.+)",
            _skills,
        ),
        (r"\bI (?:can )?(?:also )?(?P<verb>play) (?P<v>.+)", _skills),
        (
            r"\bI (?:don't|do not|no longer) (?P<verb>play) (?P<v>(?:the )?\w+)"
            r"(?: (?P<gone>anymore|any more))?",
            _skills,
        ),
        # Family
        (
            rf"\bmy {_ADJ}(?P<rel>{RELATION_PATTERN})(?:'s name is|'s called| is called| is "
            rf"named|,)? (?P<v>{NAME}(?:'s)?(?:,? and {NAME})?)",
            _family,
        ),
        (
            rf"\bI have (?:a|an|one|two|three|\d) {_ADJ}(?P<rel>{RELATION_PATTERN})s?(?:,? "
            rf"(?:named|called) |, )(?P<v>{NAME}(?:,? (?:and )?{NAME})*)|\bour {_ADJ}(?:baby )?"
            rf"(?P<rel2>son|daughter|baby|boy|girl)\b.*?\b(?:called|named) (?:him|her|them|it) "
            rf"(?P<v2>{NAME})",
            _family,
        ),
        (
            rf"\bI have (?P<n>a|an|one|two|three|four|\d) {_ADJ}(?P<rel>{RELATION_PATTERN}|kid|"
            r"child|children)(?:s)?\b",
            _has_family,
        ),
        (
            rf"\b(?:seeing|dating|with) (?:someone|somebody|a guy|a girl|a woman|a man)"
            rf"(?: new)?,? (?P<pron>his|her|their) name(?:'s| is) (?P<v>{NAME})",
            _partner_named,
        ),
        (
            rf"(?P<v>{NAME}) and I (?:just |finally )?(?:broke up|split up|split|separated|"
            rf"divorced|got divorced)|\bI (?:broke up with|divorced|split up with|dumped) "
            rf"(?P<v2>{NAME})",
            _breakup,
        ),
    )
)
"""Patterns of language, skill and family statements and their rules."""

SCHOOL_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = (
    (
        re.compile(
            rf"(?:\bmy {_ADJ}(?P<rel>{RELATION_PATTERN}),? (?:(?P<name>{NAME}),? )?|"
            rf"(?<!\w)(?P<name2>{NAME}),? )(?:starts|will start|is starting|'s starting|begins|"
            rf"will begin|is going to start|goes to|will go to|is off to|heads to) "
            rf"(?P<what>{_SCHOOL})(?: (?P<when>{_WHEN}))?(?=\s+and\b|\s+so\b|\s*[,.!?;]|$)",
            re.IGNORECASE,
        ),
        _starts_school,
    ),
)
"""A child starting school: the family member and the plan, with its date."""
