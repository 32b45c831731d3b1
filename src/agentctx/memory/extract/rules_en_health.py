"""English rules for the user's health and diet: allergies (``allergy: peanuts``),
conditions (``health: asthma``), an overall diet (``diet``) and foods avoided (``diet:
pork``). A retraction ("I'm no longer vegetarian", "I'm not allergic to shellfish
anymore") states the same subject with ``data={"retracted": True}``.
"""

from __future__ import annotations

import re

from agentctx.events import Event
from agentctx.memory.extract.english import clause_value, corrected
from agentctx.memory.extract.statements import Found, Groups, Rule
from agentctx.memory.extract.value_words import (
    CONDITION_ADJECTIVES,
    CONDITIONS,
    DIET_REGIMES,
    FOODS,
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


_INJURIES = {"broke": "broken", "fractured": "broken", "tore": "torn", "hurt": "injured"}


def _injured(match: Groups, event: Event) -> Found:
    how = match["how"].lower()
    injury = _INJURIES.get(how, how)
    part = match["v"].lower()
    return Found(
        MemoryKind.FACT, f"User has a {injury} {part}", f"health: {injury} {part}", 0.8, value=part
    )


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
    return _diet_regime(regime, ended=bool(match["neg"] or _GONE.search(match.string)))


def _diet_regime(regime: str, *, ended: bool) -> Found:
    """The statement that the user follows ``regime`` (vegan, keto…), or no longer does."""
    if ended:
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
        if thing.lower() in DIET_REGIMES:
            # A diet named as the food: "I no longer eat vegan" ends it, "I'm eating
            # vegan again" states it.
            found.append(_diet_regime(thing.lower(), ended=not again))
            continue
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


def _observes(match: Groups, event: Event) -> Found:
    rule = match["v"].lower()
    return Found(MemoryKind.PREFERENCE, f"User eats {rule} only", f"diet: {rule}", 0.85, value=rule)


def _intolerant(match: Groups, event: Event) -> Found:
    thing = match["v"].lower()
    return Found(
        MemoryKind.PREFERENCE,
        f"User is {thing} intolerant (eats {thing}-free)",
        f"diet: {thing}",
        0.85,
        value=thing,
    )


HEALTH_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
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
            rf"\bI (?P<how>broke|fractured|sprained|tore|dislocated|hurt|injured) my "
            rf"(?P<v>{_BODY_PARTS})\b",
            _injured,
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
            rf"{_IM} (?:strictly )?(?P<v>halal|kosher)\b|\bI (?:keep|eat|only eat) "
            r"(?P<v2>halal|kosher)\b",
            _observes,
        ),
        (
            r"\bI (?:have to|need to|must|can only|only) eat (?P<v>[\w]+)-free\b|"
            rf"{_IM} (?:on )?(?:a )?(?P<v2>[\w]+)-free(?: diet)?\b",
            _free_of,
        ),
    )
)
"""Patterns of health and diet statements and their rules."""
