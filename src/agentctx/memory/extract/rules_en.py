"""English rules: the sentence patterns of self-statements and what each one records."""

from __future__ import annotations

import re

from agentctx.events import Event
from agentctx.memory.extract.english import (
    MONTHS,
    PRONOUNS,
    WEEKDAYS,
    clause_value,
    subject_key,
    third_person,
)
from agentctx.memory.extract.statements import (
    PROJECT_WORDS,
    Found,
    Groups,
    Rule,
    resolve_date,
    words,
)
from agentctx.memory.extract.value_words import PEOPLE
from agentctx.memory.models import MemoryKind

_NOT_FACTS = words("dream goal wish hope guess question idea problem point fault turn bad plan")
# "I'm a …" heads that describe a state or an attitude, not who the user is.
_NOT_ROLES = words(
    """
    beginner learner member user customer runner lover believer smoker drinker sleeper
    eater mother father brother sister partner person reader listener speaker mom dad
    bit little lot big huge fan sucker mess wreck part fool loser wreck kid tad fairly
    pretty really very total complete sort kind
    """
)
_ROLE_SUFFIXES = ("er", "or", "ist", "ian", "ant", "ent", "eer", "ee", "ive", "man", "woman")
_ROLES = words(
    """
    nurse doctor teacher student engineer developer programmer designer lawyer chef cook
    accountant dentist pharmacist scientist artist writer author musician photographer
    manager consultant analyst architect librarian cashier barista waiter waitress
    firefighter officer soldier pilot mechanic electrician plumber carpenter farmer
    researcher professor lecturer tutor intern freelancer entrepreneur founder ceo cto
    veterinarian vet therapist psychologist paramedic surgeon coach trainer athlete
    translator journalist editor actor actress dancer singer streamer retiree undergrad
    grad postdoc phd sophomore freshman junior senior
    """
)
_PETS = words(
    """
    dog dogs puppy puppies cat cats kitten kittens bird birds parrot fish hamster rabbit
    bunny horse turtle snake lizard guinea pig pigs
    """
)
_FAMILY = words(
    """
    son sons daughter daughters kid kids child children baby brother brothers sister
    sisters sibling siblings husband wife boyfriend girlfriend partner fiance fiancee
    twin twins
    """
)
_DATE_WORDS = re.compile(rf"^\s*(?:\d|{MONTHS}\b|the \d|early|late|mid)", re.IGNORECASE)


# Rules ------------------------------------------------------------------------------------


def _name(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=3)
    if value is None or (not value[0].isupper() and not value.startswith("[")):
        return None
    return Found(MemoryKind.PROFILE, f"User's name is {value}", "name", 0.85, value=value)


def _age(match: Groups, event: Event) -> Found | None:
    return Found(MemoryKind.PROFILE, f"User is {match['v']} years old", "age", 0.8)


def _work_as(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"])
    if value is None:
        return None
    return Found(MemoryKind.PROFILE, f"User works as {match['a']} {value}", "occupation", 0.85)


def _work_at(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=6)
    if value is None:
        return None
    value = re.split(r"\s+as\s+", value, maxsplit=1)[0]  # "Microsoft as a PM"
    prep = match["p"].lower()
    subject = "employer" if prep in {"at", "for"} else "field of work"
    return Found(MemoryKind.PROFILE, f"User works {prep} {value}", subject, 0.8)


def is_role(word: str) -> bool:
    """Whether ``word`` (a noun's last word) names a job: a known one, or a word made like
    one ("technician", "designer")."""
    word = word.lower()
    if word in _NOT_ROLES:
        return False
    return word in _ROLES or (word.endswith(_ROLE_SUFFIXES) and len(word) > 4)


def i_am_a(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=6)
    if value is None:
        return None
    article = match["a"]
    # A correction brings its own article: "a pharmacist - well, an EMT".
    own = re.match(r"(an?|the)\s+(.+)", value, re.IGNORECASE)
    if own is not None:
        article, value = own.group(1), own.group(2)
    words = re.findall(r"[a-z]+", value.lower())
    if not words or words[0] in _NOT_ROLES or "fan" in words:
        return None  # "I'm a big fan", "a cat fan": preferences, read by the fan rule
    # The role noun: the last word before a prepositional tail ("student at UCLA").
    head_words = re.split(r"\s+(?:at|in|for|from|with|of|on)\s+", value.lower(), maxsplit=1)[0]
    head = head_words.split()[-1] if head_words.split() else ""
    if head in _NOT_ROLES:
        return None
    if is_role(head):
        content = f"User is {article} {value}"
        return Found(MemoryKind.PROFILE, content, "occupation", 0.75, value=value)
    return Found(MemoryKind.PROFILE, f"User is {article} {value}", None, 0.5)


def _study(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=6)
    if value is None:
        return None
    if match["verb"].lower().startswith("major"):
        return Found(MemoryKind.PROFILE, f"User is majoring in {value}", "major", 0.8)
    return Found(MemoryKind.PROFILE, f"User studies at {value}", "school", 0.8)


def _been_to(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=5)
    if value is None or not value[0].isupper():
        return None  # places are proper names; "been to the gym" is not worth keeping
    return Found(MemoryKind.FACT, f"User has been to {value}", None, 0.6)


def _practice(match: Groups, event: Event) -> Found | None:
    activity = clause_value(match["act"], max_words=4)
    if activity is None:
        return None
    return Found(
        MemoryKind.SKILL,
        f"User has been {activity} for {match['dur']}",
        f"experience: {subject_key(activity)}",
        0.7,
    )


def _plan(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=8)
    if value is None:
        return None
    value = re.sub(r"^(?:on|to)\s+", "", value)
    if len(value.split()) < 3:
        return None  # "going to sleep": a plan of the moment, not worth remembering
    date = event.ts.date().isoformat()
    return Found(
        MemoryKind.EPISODIC,
        f"As of {date}: user plans: {value}",
        None,
        0.5,
        episodic_date=f"As of {date}",
    )


def _fan(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=5)
    if value is None:
        return None
    kind = match["kind"].lower()
    if kind == "into":
        content, confidence = f"User is into {value}", 0.6
    elif kind == "fan":  # "a basketball fan": the value precedes the word
        if set(value.lower().split()) & {"not", "no", "a", "an", "the", "never"}:
            return None
        content, confidence = f"User is a {value} fan", 0.65
    else:
        content, confidence = f"User is a fan of {value}", 0.65
    return Found(MemoryKind.PREFERENCE, content, f"preference: {subject_key(value)}", confidence)


def _used_to(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=8)
    if value is None or len(value.split()) < 2:
        return None
    return Found(MemoryKind.FACT, f"User used to {third_person(value)}", None, 0.55)


def _live_in(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=5)
    if value is None:
        return None
    verb = "lives in" if match["verb"].lower().startswith("live") else "moved to"
    return Found(MemoryKind.PROFILE, f"User {verb} {value}", "residence", 0.8, value=value)


def _from(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=4)
    if value is None or not value[0].isupper():
        return None  # "I'm from work" is not a place of origin
    return Found(MemoryKind.PROFILE, f"User is from {value}", "home town", 0.75)


def _born(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=5)
    if value is None:
        return None
    prep = match["p"].lower()
    if _DATE_WORDS.match(value):
        return Found(MemoryKind.PROFILE, f"User was born {prep} {value}", "birth date", 0.8)
    if not value[0].isupper():
        return None
    return Found(MemoryKind.PROFILE, f"User was born {prep} {value}", "home town", 0.8)


_VERBS = {
    "like": "likes",
    "love": "loves",
    "enjoy": "enjoys",
    "prefer": "prefers",
    "hate": "hates",
    "dislike": "dislikes",
    "adore": "adores",
    "don't like": "doesn't like",
    "do not like": "doesn't like",
    "can't stand": "can't stand",
}


def _likes(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"])
    if value is None:
        return None
    first = value.split()[0].lower()
    if len(value.split()) == 1 and first in {"to", "the", "a", "an"}:
        return None
    if re.fullmatch(r"\w+ing", value) and re.match(r"\w+ing\s+(and|or)\b", match["v"]):
        return None  # "I enjoy making and indulging in treats": the object comes later
    if re.fullmatch(r"to \w+", value, re.IGNORECASE):
        return None  # "I like to watch": the object is missing
    if first in {"how", "that", "what", "when", "it", "the way", "being"}:
        return None
    verb = _VERBS[re.sub(r"\s+", " ", match["verb"].lower())]
    topic = re.sub(r"^(to|the|a|an|my|doing|going)\s+", "", value, flags=re.IGNORECASE)
    return Found(
        MemoryKind.PREFERENCE,
        f"User {verb} {third_person(value) if 'my' in value.lower().split() else value}",
        f"preference: {subject_key(topic)}",
        0.65,
    )


def _favourite(match: Groups, event: Event) -> Found | None:
    thing = clause_value(match["x"], max_words=3)
    value = clause_value(match["v"], max_words=6)
    if thing is None or value is None:
        return None
    return Found(
        MemoryKind.PREFERENCE,
        f"User's favourite {thing} is {value}",
        f"favourite {subject_key(thing)}",
        0.8,
    )


def _my_x_is(match: Groups, event: Event) -> Found | None:
    thing = match["x"].strip()
    value = clause_value(match["v"], max_words=6)
    if value is None or thing.lower() in PRONOUNS:
        return None
    # "my buddy is a plumber", "my dream is to fly": about someone else, or a wish.
    if set(thing.lower().split()) & (PEOPLE | _NOT_FACTS):
        return None
    first = value.split()[0].lower()
    # "my day is going well", "my back is so sore", "my lettuce is buried": states of the
    # moment, not facts.
    if (
        first.endswith("ing")
        or (first.endswith("ed") and len(first) > 4)
        or first in {"so", "really", "very", "too", "not", "just", "kinda", "still", "all"}
    ):
        return None
    kind = MemoryKind.PROFILE if thing.lower() in {"name", "birthday", "age"} else MemoryKind.FACT
    return Found(kind, f"User's {thing} is {third_person(value)}", subject_key(thing), 0.6)


def _have(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=6)
    if value is None:
        return None
    noun = match["n"].lower()
    return Found(MemoryKind.FACT, f"User has {match['q']} {value}", None, 0.7 if noun else 0.5)


def _decision(match: Groups, event: Event) -> Found | None:
    value = clause_value(match["v"], max_words=10)
    if value is None:
        return None
    verb = match["verb"].lower()
    what = value if verb.startswith(("decided", "chose", "agreed")) else f"go with {value}"
    sentence = match.string
    kind = MemoryKind.PROJECT if PROJECT_WORDS.search(sentence) else MemoryKind.FACT
    what = third_person(re.sub(r"^to\s+", "", what))
    if len(what.split()) < 2 or what.split()[-1].lower() in {"to", "not"}:
        return None
    return Found(kind, f"Decided to {what}", None, 0.65)


def _episode(match: Groups, event: Event) -> Found | None:
    sentence = match.string.strip()
    if len(sentence.split()) < 4:
        return None
    when = match["when"].lower()
    date = resolve_date(when, event.ts)
    return Found(
        MemoryKind.EPISODIC,
        f"{date}: {third_person(sentence, capitalize=True)}",
        None,
        0.55,
        episodic_date=date,
    )


_I = r"\bI"
_IM = r"\bI(?:'m| am|m)"
EN_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), rule)
    for pattern, rule in (
        (r"\bmy name is (?P<v>.+)|\bcall me (?P<v2>.+)", _name),
        (rf"{_IM} (?P<v>\d{{1,3}}) (?:years old|yrs old|y/o)\b", _age),
        (rf"{_I} (?:currently |now )?work(?:ed)? as (?P<a>an?|the) (?P<v>.+)", _work_as),
        (rf"{_I} (?:currently |now )?work (?P<p>at|for|in) (?P<v>.+)", _work_at),
        (rf"{_IM} (?:currently |now |also )?(?P<a>an?) (?P<v>.+)", i_am_a),
        (
            rf"{_I} (?:currently |now |also )?(?P<verb>study|studied|go to school|majored|major) "
            r"(?:at|in) (?P<v>.+)|{_IM} (?P<verb2>majoring) in (?P<v2>.+)".replace("{_IM}", _IM),
            _study,
        ),
        (rf"{_I}(?:'ve| have) (?:also |only |already )?been to (?P<v>.+)", _been_to),
        (
            rf"{_IM} (?:actually |also |really |pretty |such |a |an |huge |big |massive |"
            r"total |long[- ]time )*(?P<kind>fan of) (?P<v>.+)|"
            rf"{_IM} (?:actually |also |really |pretty |so |very |big |huge |a |an )*"
            r"(?P<v2>\w+(?: \w+)?) (?P<kind2>fan)\b|"
            rf"{_IM} (?:actually |also |really |so |very |pretty |super |big |huge )*"
            r"(?P<kind3>into) (?P<v3>.+)",
            _fan,
        ),
        (rf"{_I} used to (?P<v>.+)", _used_to),
        (
            rf"{_I}(?:'ve| have) been (?P<act>\w+ing(?: \w+)?) for "
            r"(?P<dur>(?:about |over |almost )?(?:\d+|a few|a couple of|two|three|four|five|"
            r"six|ten|many) (?:years|months))",
            _practice,
        ),
        (rf"{_IM} (?:planning|going|gonna|hoping) (?:on |to )(?P<v>.+)", _plan),
        (rf"{_I} (?:currently |now |still )?(?P<verb>live|moved) (?:in|to) (?P<v>.+)", _live_in),
        (rf"{_IM} (?:originally )?from (?P<v>.+)|{_I} come from (?P<v2>.+)", _from),
        (rf"{_I} was born (?P<p>in|on|at) (?P<v>.+)", _born),
        (
            r"\bmy (?:all[- ]time )?fav(?:ou?rite)? (?P<x>[\w' ]{1,30}?) (?:is|are|has to be|"
            r"would be|is definitely|is probably) (?:called |in )?(?P<v>.+)",
            _favourite,
        ),
        (
            rf"{_I} (?:really |absolutely |totally |also |just )?"
            r"(?P<verb>like|love|enjoy|prefer|hate|dislike|adore|don't like|do not like|"
            r"can't stand) (?P<v>.+)",
            _likes,
        ),
        (r"^(?:\w+ )?my (?P<x>\w+(?: \w+)?) (?:is|'s) (?P<v>.+)", _my_x_is),
        (
            rf"{_I} (?:have|'ve got|have got|own) (?P<q>an?|one|two|three|four|\d) "
            rf"(?P<v>(?:\w+ ){{0,2}}?(?P<n>{'|'.join(sorted(_PETS | _FAMILY))})\b.*)",
            _have,
        ),
        (
            r"(?:\b(?:we|i) (?:have |'ve |just |finally )?|^)(?P<verb>decided|chose|agreed) "
            r"(?:to |on |that )?(?P<v>.+)|\b(?:let's|let us|i'll|we'll|i will|we will) "
            r"(?P<verb2>go with) (?P<v2>.+)",
            _decision,
        ),
        (
            rf"^(?:so |and |well,? )?(?P<when>yesterday|last night|last (?:week|weekend|month|"
            rf"year|{WEEKDAYS})|this morning|today|tonight|(?:a few|a couple of|\d+|two|three) "
            rf"(?:years|months|weeks|days) ago|on (?:{MONTHS}) \d{{1,2}}(?:st|nd|rd|th)?|"
            rf"on \d{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{MONTHS}))\b,? (?:i|we)\b.+",
            _episode,
        ),
    )
)
