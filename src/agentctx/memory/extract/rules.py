"""Rule-based declarative extraction: what a user says about themselves, offline.

:func:`extract_declarative` reads the user's messages of a session (``user_input``
events, and any event whose role is ``user``) sentence by sentence and turns
self-statements into :class:`~agentctx.memory.models.MemoryCandidate` objects:

* profile fields: "my name is …", "I'm a nurse", "I work as/at/for …", "I live in …",
  "I'm from …", "I was born …", "I'm 34 (years old)"; 我叫…, 我是…, 我在…工作, 我住在…,
  我来自…
* preferences: "I like / love / enjoy / prefer / hate …", "my favourite X is Y"; 我喜欢…
* facts: "my X is Y", "I have a dog"; 我的X是Y, 我有一只…
* decisions: "we decided …", "let's go with …", "I'll go with …"; 决定… (project
  context when the sentence is about code, releases or a project)
* episodes: "yesterday I …", "last week we …", "on 3 May, I …" (the date resolved
  against the message's time); 昨天我…

Only the stored (redacted) text of events is read. A sentence holding the
placeholder of a secret (an API key, a password, a card number: see
:data:`SECRET_TYPES`) is skipped whole, so neither it nor what surrounds the secret
becomes a memory; other placeholders (``[EMAIL]``, ``[PHONE]``) are kept as written.

Each candidate names its source event, has a ``subject`` when it states the value of
something that can change (``occupation``, ``residence``, ``favourite drink``,
``preference: coffee``) so consolidation can detect a contradiction, keywords, and a
confidence: explicit statements score higher than loose ones, and hedged sentences
("I think", "maybe", 可能) lower.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agentctx.compaction.offline.keywords import extract_keywords
from agentctx.compaction.offline.sentences import split_sentences
from agentctx.events import Event, EventType, Role
from agentctx.memory.models import MemoryCandidate, MemoryKind, Provenance
from agentctx.privacy.findings import ZH_LABELS, EntityType

RULES_VERSION = "rules-1"
"""The rule set's version, recorded in every candidate's provenance."""

SECRET_TYPES: frozenset[str] = frozenset(
    {
        EntityType.SECRET,
        EntityType.CREDIT_CARD,
        EntityType.URL_CREDENTIALS,
        EntityType.CN_RESIDENT_ID,
        "API_KEY",
        "PASSWORD",
    }
)
"""Entity types whose placeholders make a sentence unfit for memory."""

_KEYWORDS = 5
_MAX_VALUE_WORDS = 8
_MAX_SENTENCE_CHARS = 400

# Placeholders of secret types in every form the operators write: [SECRET], [SECRET:3f2a…]
# (hash), [ENC:SECRET:…] (encrypt), [密钥_已脱敏] (Chinese labels).
_SECRET_NAMES = sorted(
    {*SECRET_TYPES, *(ZH_LABELS[t] for t in SECRET_TYPES if t in ZH_LABELS)}, key=len
)
_SECRET_PLACEHOLDER = re.compile(
    r"\[(?:ENC:)?(?:" + "|".join(re.escape(n) for n in reversed(_SECRET_NAMES)) + r")(?:[:_\]])"
)
_MASKED = re.compile(r"\*{4,}")  # the mask operator's output

_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\uff07": "'"})
_HEDGE = re.compile(
    r"\b(i think|i guess|maybe|probably|perhaps|might|not sure|kind of|sort of)\b|可能|也许|大概",
    re.IGNORECASE,
)
# Sentences that do not state anything about the speaker as a fact.
_NOT_A_STATEMENT = re.compile(
    r"^\s*(if|when|whenever|unless|do|does|did|are|is|would|could|should|can)\b|"
    r"\b(if i|i wish|i'd|i would|i hope|do you|are you|you're|you are|imagine)\b|如果|要是",
    re.IGNORECASE,
)
# Where a captured value ends: the next clause.
_VALUE_END = re.compile(
    r"\s+(?:and|but|because|so|which|who|since|though|although|while|when|where|"
    r"if|cause|cuz|as well|as long as|too+|lol|haha|hahaha|lmao|now|right now|these days|"
    r"actually|though|anyway|it's|it is|it|its|that's|thats|i'm|im|i've|ive|i|we|they|"
    r"theyre|he|she|there)\b.*$|"
    r"\s*[,;:()\"!?.…]+.*$|\s+-\s.*$",
    re.IGNORECASE,
)
_ZH_VALUE_END = re.compile(
    r"[\uff0c,。.\uff01!\uff1f?\uff1b;、\uff1a:\uff08(]|但是|因为|所以|而且|不过|还有|也"
).pattern


def words(text: str) -> frozenset[str]:
    """The whitespace-separated words of ``text``."""
    return frozenset(text.split())


_PREPOSITIONS = words(
    """
    of in at on for with from to by about near
    """
)
_DANGLING = words("of in at on for with to by as that the a an and or more most my your")
_BAD_STARTS = words(
    """
    is are was were be been called also actually today tomorrow tonight always never
    still just gonna going or and of not no
    """
)
_PRONOUNS = words(
    """
    it that this you them him her those these there what how when why where which your
    ur u myself yourself everything everyone anything something nothing
    """
)
# "I'm a …" heads that describe a state or an attitude, not who the user is.
_NOT_ROLES = words(
    """
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
_PROJECT_WORDS = re.compile(
    r"\b(project|repo|repository|code|codebase|release|deploy|database|api|schema|library|"
    r"framework|version|architecture|design|stack|backend|frontend|service|server|"
    r"migration|branch|feature|sprint|roadmap)\b|项目|代码|数据库|框架|版本|架构|发布|接口",
    re.IGNORECASE,
)
_MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
_DATE_WORDS = re.compile(rf"^\s*(?:\d|{_MONTHS}\b|the \d|early|late|mid)", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class _Found:
    """One statement a rule found in a sentence."""

    kind: MemoryKind
    content: str
    subject: str | None
    confidence: float
    episodic_date: str | None = None


class _Groups:
    """A match whose alternative groups (``v2``, ``verb2``) stand in for the main ones."""

    def __init__(self, match: re.Match[str]) -> None:
        self._match = match
        self.string = match.string

    def __getitem__(self, name: str) -> str:
        value = self._match.groupdict().get(name)
        if value is None:
            value = self._match.groupdict().get(f"{name}2")
        if value is None:
            value = self._match.groupdict().get(f"{name}3")
        return value or ""


Rule = Callable[[_Groups, Event], "_Found | None"]


# Values ---------------------------------------------------------------------------------


def _value(raw: str, *, max_words: int = _MAX_VALUE_WORDS) -> str | None:
    """The captured text up to the end of its clause; None when it is empty or too long."""
    value = _VALUE_END.sub("", raw.lstrip(" '\"\u201c")).strip(" '\"-~\u201c\u201d")
    if not value or not re.search(r"\w", value):
        return None
    words = value.split()
    if len(words) > max_words:
        # Keep the head of a long value when it ends before a preposition ("a manager
        # of a firm in New York" -> "a manager of a firm"); otherwise it is no value.
        cut = [i for i, w in enumerate(words[: max_words + 1]) if w.lower() in _PREPOSITIONS]
        if not cut or cut[-1] < 2:
            return None
        words = words[: cut[-1]]
        value = " ".join(words)
    # A value cut mid-phrase ("non fiction pieces more of") ends in a function word.
    while words and words[-1].lower() in _DANGLING:
        words = words[:-1]
    if not words or words[0].lower() in _PRONOUNS or words[0].lower() in _BAD_STARTS:
        return None
    return " ".join(words)


def _zh_value(raw: str, *, max_chars: int = 20) -> str | None:
    value = re.split(_ZH_VALUE_END, raw, maxsplit=1)[0].strip()
    value = value.rstrip("了的啦呢吧啊呀哦嘛")
    if not value or len(value) > max_chars or not re.search(r"\w", value):
        return None
    return value


def _subject_key(text: str) -> str:
    """A short, normalized subject: lowercase, articles dropped, whitespace collapsed."""
    words = [w for w in re.findall(r"[\w\[\]'-]+", text.lower()) if w not in {"a", "an", "the"}]
    return " ".join(words)[:200]


def _third_person(text: str, *, capitalize: bool = False) -> str:
    """``text`` (a first-person clause) with the speaker as "User"/"their"."""
    swaps = [
        (r"\bI am\b|\bI'm\b", "user is"),
        (r"\bI've\b|\bI have\b", "user has"),
        (r"\bI was\b", "user was"),
        (r"\bI'll\b|\bI will\b", "user will"),
        (r"\bI\b", "user"),
        (r"\bmy\b", "their"),
        (r"\bme\b", "them"),
        (r"\bmyself\b", "themselves"),
        (r"\bmine\b", "theirs"),
        (r"\bwe\b", "user and others"),
        (r"\bour\b", "their"),
    ]
    out = text
    for pattern, replacement in swaps:
        out = re.sub(pattern, replacement, out, flags=re.IGNORECASE)
    return out[0].upper() + out[1:] if out and capitalize else out


# English rules ----------------------------------------------------------------------------


def _name(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=3)
    if value is None or (not value[0].isupper() and not value.startswith("[")):
        return None
    return _Found(MemoryKind.PROFILE, f"User's name is {value}", "name", 0.85)


def _age(match: _Groups, event: Event) -> _Found | None:
    return _Found(MemoryKind.PROFILE, f"User is {match['v']} years old", "age", 0.8)


def _work_as(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"])
    if value is None:
        return None
    return _Found(MemoryKind.PROFILE, f"User works as {match['a']} {value}", "occupation", 0.85)


def _work_at(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=6)
    if value is None:
        return None
    prep = match["p"].lower()
    subject = "employer" if prep in {"at", "for"} else "field of work"
    return _Found(MemoryKind.PROFILE, f"User works {prep} {value}", subject, 0.8)


def _i_am_a(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=6)
    if value is None:
        return None
    words = re.findall(r"[a-z]+", value.lower())
    if not words or words[0] in _NOT_ROLES or "fan" in words:
        return None  # "I'm a big fan", "a cat fan": preferences, read by the fan rule
    # The role noun: the last word before a prepositional tail ("student at UCLA").
    head_words = re.split(r"\s+(?:at|in|for|from|with|of|on)\s+", value.lower(), maxsplit=1)[0]
    head = head_words.split()[-1] if head_words.split() else ""
    if head in _ROLES or (head.endswith(_ROLE_SUFFIXES) and len(head) > 4):
        return _Found(MemoryKind.PROFILE, f"User is {match['a']} {value}", "occupation", 0.75)
    return _Found(MemoryKind.PROFILE, f"User is {match['a']} {value}", None, 0.5)


def _study(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=6)
    if value is None:
        return None
    if match["verb"].lower().startswith("major"):
        return _Found(MemoryKind.PROFILE, f"User is majoring in {value}", "major", 0.8)
    return _Found(MemoryKind.PROFILE, f"User studies at {value}", "school", 0.8)


def _been_to(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=5)
    if value is None or not value[0].isupper():
        return None  # places are proper names; "been to the gym" is not worth keeping
    return _Found(MemoryKind.FACT, f"User has been to {value}", None, 0.6)


def _practice(match: _Groups, event: Event) -> _Found | None:
    activity = _value(match["act"], max_words=4)
    if activity is None:
        return None
    return _Found(
        MemoryKind.SKILL,
        f"User has been {activity} for {match['dur']}",
        f"experience: {_subject_key(activity)}",
        0.7,
    )


def _plan(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=8)
    if value is None:
        return None
    value = re.sub(r"^(?:on|to)\s+", "", value)
    if len(value.split()) < 3:
        return None  # "going to sleep": a plan of the moment, not worth remembering
    date = event.ts.date().isoformat()
    return _Found(
        MemoryKind.EPISODIC,
        f"As of {date}: user plans: {value}",
        None,
        0.5,
        episodic_date=f"As of {date}",
    )


def _fan(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=5)
    if value is None:
        return None
    if match["kind"].lower() == "into":
        return _Found(
            MemoryKind.PREFERENCE,
            f"User is into {value}",
            f"preference: {_subject_key(value)}",
            0.6,
        )
    if match["kind"].lower() == "fan":  # "a basketball fan": the value precedes the word
        if set(value.lower().split()) & {"not", "no", "a", "an", "the", "never"}:
            return None
        return _Found(
            MemoryKind.PREFERENCE,
            f"User is a {value} fan",
            f"preference: {_subject_key(value)}",
            0.65,
        )
    return _Found(
        MemoryKind.PREFERENCE,
        f"User is a fan of {value}",
        f"preference: {_subject_key(value)}",
        0.65,
    )


def _used_to(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=8)
    if value is None or len(value.split()) < 2:
        return None
    return _Found(MemoryKind.FACT, f"User used to {_third_person(value)}", None, 0.55)


def _live_in(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=5)
    if value is None:
        return None
    verb = "lives in" if match["verb"].lower().startswith("live") else "moved to"
    return _Found(MemoryKind.PROFILE, f"User {verb} {value}", "residence", 0.8)


def _from(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=4)
    if value is None or not value[0].isupper():
        return None  # "I'm from work" is not a place of origin
    return _Found(MemoryKind.PROFILE, f"User is from {value}", "home town", 0.75)


def _born(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=5)
    if value is None:
        return None
    prep = match["p"].lower()
    if _DATE_WORDS.match(value):
        return _Found(MemoryKind.PROFILE, f"User was born {prep} {value}", "birth date", 0.8)
    if not value[0].isupper():
        return None
    return _Found(MemoryKind.PROFILE, f"User was born {prep} {value}", "home town", 0.8)


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


def _likes(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"])
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
    return _Found(
        MemoryKind.PREFERENCE,
        f"User {verb} {_third_person(value) if 'my' in value.lower().split() else value}",
        f"preference: {_subject_key(topic)}",
        0.65,
    )


def _favourite(match: _Groups, event: Event) -> _Found | None:
    thing = _value(match["x"], max_words=3)
    value = _value(match["v"], max_words=6)
    if thing is None or value is None:
        return None
    return _Found(
        MemoryKind.PREFERENCE,
        f"User's favourite {thing} is {value}",
        f"favourite {_subject_key(thing)}",
        0.8,
    )


def _my_x_is(match: _Groups, event: Event) -> _Found | None:
    thing = match["x"].strip()
    value = _value(match["v"], max_words=6)
    if value is None or thing.lower() in _PRONOUNS:
        return None
    first = value.split()[0].lower()
    # "my day is going well", "my back is so sore": states of the moment, not facts.
    if first.endswith("ing") or first in {"so", "really", "very", "too", "not", "just", "kinda"}:
        return None
    kind = MemoryKind.PROFILE if thing.lower() in {"name", "birthday", "age"} else MemoryKind.FACT
    return _Found(kind, f"User's {thing} is {_third_person(value)}", _subject_key(thing), 0.6)


def _have(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=6)
    if value is None:
        return None
    noun = match["n"].lower()
    return _Found(MemoryKind.FACT, f"User has {match['q']} {value}", None, 0.7 if noun else 0.5)


def _decision(match: _Groups, event: Event) -> _Found | None:
    value = _value(match["v"], max_words=10)
    if value is None:
        return None
    verb = match["verb"].lower()
    what = value if verb.startswith(("decided", "chose", "agreed")) else f"go with {value}"
    sentence = match.string
    kind = MemoryKind.PROJECT if _PROJECT_WORDS.search(sentence) else MemoryKind.FACT
    what = _third_person(re.sub(r"^to\s+", "", what))
    if len(what.split()) < 2 or what.split()[-1].lower() in {"to", "not"}:
        return None
    return _Found(kind, f"Decided to {what}", None, 0.65)


def _episode(match: _Groups, event: Event) -> _Found | None:
    sentence = match.string.strip()
    if len(sentence.split()) < 4:
        return None
    when = match["when"].lower()
    date = _resolve_date(when, event.ts)
    return _Found(
        MemoryKind.EPISODIC,
        f"{date}: {_third_person(sentence, capitalize=True)}",
        None,
        0.55,
        episodic_date=date,
    )


def _resolve_date(when: str, ts: datetime) -> str:
    day = ts.date()
    relative = {
        "yesterday": day - timedelta(days=1),
        "today": day,
        "this morning": day,
        "tonight": day,
        "last night": day - timedelta(days=1),
    }
    if when in relative:
        return f"On {relative[when].isoformat()}"
    if when.endswith(" ago"):
        return f"{when.capitalize()} (before {day.isoformat()})"
    if when.startswith("last "):
        return f"In the {when[5:]} before {day.isoformat()}"
    return f"On {when}" if not when.startswith("on ") else when.capitalize()


_I = r"\bI"
_IM = r"\bI(?:'m| am|m)"
_EN_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), rule)
    for pattern, rule in (
        (r"\bmy name is (?P<v>.+)|\bcall me (?P<v2>.+)", _name),
        (rf"{_IM} (?P<v>\d{{1,3}}) (?:years old|yrs old|y/o)\b", _age),
        (rf"{_I} (?:currently |now )?work(?:ed)? as (?P<a>an?|the) (?P<v>.+)", _work_as),
        (rf"{_I} (?:currently |now )?work (?P<p>at|for|in) (?P<v>.+)", _work_at),
        (rf"{_IM} (?:currently |now |also )?(?P<a>an?) (?P<v>.+)", _i_am_a),
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
            rf"year|{_WEEKDAYS})|this morning|today|tonight|(?:a few|a couple of|\d+|two|three) "
            rf"(?:years|months|weeks|days) ago|on (?:{_MONTHS}) \d{{1,2}}(?:st|nd|rd|th)?|"
            rf"on \d{{1,2}}(?:st|nd|rd|th)? (?:of )?(?:{_MONTHS}))\b,? (?:i|we)\b.+",
            _episode,
        ),
    )
)

# Chinese rules -----------------------------------------------------------------------------

_ZH_ROLE_ENDINGS = ("师", "员", "生", "家", "者", "工", "医", "士", "长", "手", "商")


def _zh_name(match: _Groups, event: Event) -> _Found | None:
    value = _zh_value(match["v"], max_chars=10)
    return _Found(MemoryKind.PROFILE, f"用户叫{value}", "name", 0.85) if value else None


def _zh_am(match: _Groups, event: Event) -> _Found | None:
    value = _zh_value(match["v"], max_chars=15)
    if value is None or value.startswith(("不", "说", "想", "在", "来", "为", "觉得", "真")):
        return None
    value = re.sub(r"^(一名|一个|一位|个|名)", "", value)
    if not value:
        return None
    if value.endswith("人") and len(value) <= 6:
        return _Found(MemoryKind.PROFILE, f"用户是{value}", "home town", 0.7)
    subject = "occupation" if value.endswith(_ZH_ROLE_ENDINGS) else None
    return _Found(MemoryKind.PROFILE, f"用户是{value}", subject, 0.75 if subject else 0.5)


def _zh_work(match: _Groups, event: Event) -> _Found | None:
    value = _zh_value(match["v"], max_chars=20)
    return _Found(MemoryKind.PROFILE, f"用户在{value}工作", "employer", 0.8) if value else None


def _zh_live(match: _Groups, event: Event) -> _Found | None:
    value = _zh_value(match["v"], max_chars=15)
    return _Found(MemoryKind.PROFILE, f"用户住在{value}", "residence", 0.8) if value else None


def _zh_from(match: _Groups, event: Event) -> _Found | None:
    value = _zh_value(match["v"], max_chars=15)
    return _Found(MemoryKind.PROFILE, f"用户来自{value}", "home town", 0.75) if value else None


def _zh_like(match: _Groups, event: Event) -> _Found | None:
    value = _zh_value(match["v"])
    if value is None:
        return None
    verb = match["verb"]
    topic = re.sub(r"^(吃|喝|看|玩|听)", "", value) or value
    return _Found(MemoryKind.PREFERENCE, f"用户{verb}{value}", f"preference: {topic}", 0.65)


def _zh_my_x_is(match: _Groups, event: Event) -> _Found | None:
    thing = match["x"]
    value = _zh_value(match["v"])
    if value is None:
        return None
    if thing.startswith(("最喜欢的", "最爱的")):
        subject = "favourite " + re.sub(r"^(最喜欢的|最爱的)", "", thing)
        return _Found(MemoryKind.PREFERENCE, f"用户的{thing}是{value}", subject, 0.8)
    kind = MemoryKind.PROFILE if thing in {"名字", "生日", "年龄", "职业"} else MemoryKind.FACT
    subject = {"名字": "name", "职业": "occupation", "生日": "birth date"}.get(thing, thing)
    return _Found(kind, f"用户的{thing}是{value}", subject, 0.7)


def _zh_have(match: _Groups, event: Event) -> _Found | None:
    value = _zh_value(match["v"])
    return _Found(MemoryKind.FACT, f"用户{match['verb']}{value}", None, 0.7) if value else None


def _zh_decision(match: _Groups, event: Event) -> _Found | None:
    value = _zh_value(match["v"], max_chars=40)
    if value is None:
        return None
    kind = MemoryKind.PROJECT if _PROJECT_WORDS.search(match.string) else MemoryKind.FACT
    return _Found(kind, f"决定{value}", None, 0.65)


def _zh_episode(match: _Groups, event: Event) -> _Found | None:
    words = {"昨天": "yesterday", "今天": "today", "昨晚": "last night"}
    when = words.get(match["when"])
    date = _resolve_date(when, event.ts) if when else f"In the {match['when']}"
    text = re.sub(r"我们", "用户和其他人", match.string.strip())
    text = re.sub(r"我", "用户", text)
    return _Found(MemoryKind.EPISODIC, f"{date}: {text}", None, 0.55, episodic_date=date)


_ZH_PET = (
    "狗|猫|小狗|小猫|鸟|鱼|兔子|仓鼠|儿子|女儿|孩子|哥哥|姐姐|弟弟|妹妹|男朋友|女朋友|老公|老婆"
)
_ZH_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = tuple(
    (re.compile(pattern), rule)
    for pattern, rule in (
        (r"我(?:叫|的名字是|的名字叫)(?P<v>.+)", _zh_name),
        (
            r"我(?:现在|目前)?(?:在|于)(?P<v>[^\uff0c,。.\uff01!\uff1f?在]{1,20}?)(?:工作|上班|任职)",
            _zh_work,
        ),
        (r"我(?:现在|目前)?(?:住在|生活在|搬到了?)(?P<v>.+)", _zh_live),
        (r"我(?:来自|出生在|出生于|老家在)(?P<v>.+)", _zh_from),
        (r"我(?:很|特别|非常|也|最)?(?P<verb>喜欢|爱|讨厌|不喜欢|偏好)(?P<v>.+)", _zh_like),
        (r"我的(?P<x>[^\uff0c,。.\uff01!\uff1f?是]{1,10})是(?P<v>.+)", _zh_my_x_is),
        (
            rf"我(?P<verb>有|养了|养着)(?P<v>(?:一|两|三|几)?(?:只|条|个|位)?(?:{_ZH_PET}).*)",
            _zh_have,
        ),
        (r"(?:我们|我)(?:最后|最终|已经)?决定(?:了)?(?P<v>.+)", _zh_decision),
        (r"^(?P<when>昨天|昨晚|上周|上个月|去年|上周末)[\uff0c,]?(?:我|我们).+", _zh_episode),
        (r"我(?:现在|目前)?是(?P<v>.+)", _zh_am),
    )
)


# Extraction ---------------------------------------------------------------------------------


def is_user_message(event: Event) -> bool:
    """Whether ``event`` is something the user said (a ``user_input`` or a user-role event)."""
    return event.type == EventType.USER_INPUT or event.role == Role.USER


def has_secret(text: str) -> bool:
    """Whether ``text`` holds the placeholder of a secret type (in any operator's form)."""
    return bool(_SECRET_PLACEHOLDER.search(text))


def event_has_masked_secret(event: Event) -> bool:
    """Whether ``event`` had a secret redacted by a form that leaves no typed placeholder."""
    return any(t in SECRET_TYPES for t in event.redacted_types)


def provenance(event: Event, extractor_version: str, model: str | None = None) -> Provenance:
    """The provenance naming ``event``."""
    return Provenance(
        session_id=event.session_id,
        event_id=event.event_id,
        seq=event.seq,
        extractor_version=extractor_version,
        model=model,
    )


def keywords_of(*texts: str, k: int = _KEYWORDS) -> tuple[str, ...]:
    """The ``k`` best keywords of ``texts`` (offline TF-IDF), lowercase and unique."""
    found = extract_keywords([t for t in texts if t.strip()], k) if any(texts) else []
    return tuple(dict.fromkeys(keyword.text.lower() for keyword in found))


def _sentence_findings(sentence: str, event: Event) -> list[_Found]:
    if len(sentence) > _MAX_SENTENCE_CHARS or sentence.rstrip().endswith(("?", "\uff1f")):
        return []
    if _NOT_A_STATEMENT.search(sentence):
        return []
    rules = _ZH_RULES if re.search(r"[\u4e00-\u9fff]", sentence) else _EN_RULES
    found: list[_Found] = []
    taken: list[tuple[int, int]] = []
    for pattern, rule in rules:
        for match in pattern.finditer(sentence):
            # The trigger phrase ("I live in "), not the value: the value's clause may
            # hold another statement ("I live in Lisbon, and I love tea").
            values = [n for n in ("v", "v2", "v3", "act") if match.groupdict().get(n) is not None]
            span = (match.start(), match.start(values[0]) if values else match.end())
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            result = rule(_Groups(match), event)
            if result is not None:
                found.append(result)
                taken.append(span)
    return found


def extract_declarative(
    events: Iterable[Event], *, extractor_version: str = RULES_VERSION
) -> list[MemoryCandidate]:
    """Self-statements, preferences, decisions and dated episodes in the user's messages.

    Reads only the stored (redacted) text of user messages; sentences holding a
    secret's placeholder are skipped. Candidates come in event order; the same
    statement made twice in the session is one candidate citing both events.
    """
    by_key: dict[tuple[MemoryKind, str], MemoryCandidate] = {}
    for event in events:
        if not is_user_message(event):
            continue
        text = event.text.translate(_APOSTROPHES)
        if not text.strip():
            continue
        masked = event_has_masked_secret(event)
        for sentence in _sentences(text):
            if has_secret(sentence) or (masked and _MASKED.search(sentence)):
                continue
            for found in _sentence_findings(sentence, event):
                _add(by_key, found, sentence, event, extractor_version)
    return list(by_key.values())


def _sentences(text: str) -> Sequence[str]:
    # Chinese sentences end at full-width stops without a following space; split those as well.
    out: list[str] = []
    for sentence in split_sentences(text):
        out.extend(s for s in re.split(r"(?<=[。\uff01\uff1f\uff1b])", sentence.text) if s.strip())
    return out


def _add(
    by_key: dict[tuple[MemoryKind, str], MemoryCandidate],
    found: _Found,
    sentence: str,
    event: Event,
    extractor_version: str,
) -> None:
    confidence = found.confidence - (0.2 if _HEDGE.search(sentence) else 0.0)
    content = found.content[:1000]
    key = (found.kind, content.casefold())
    source = provenance(event, extractor_version)
    existing = by_key.get(key)
    if existing is not None:
        if source not in existing.sources:
            by_key[key] = existing.model_copy(
                update={
                    "sources": (*existing.sources, source),
                    "confidence": max(existing.confidence, round(confidence, 2)),
                    "ts": event.ts,
                }
            )
        return
    keywords = keywords_of(content)
    if found.subject and not keywords:
        keywords = (found.subject,)
    by_key[key] = MemoryCandidate(
        kind=found.kind,
        content=content,
        subject=found.subject,
        data={"date": found.episodic_date} if found.episodic_date else {},
        keywords=keywords,
        confidence=round(max(0.05, min(1.0, confidence)), 2),
        sources=(source,),
        ts=event.ts,
    )
