"""English text helpers the rules share: where a captured value ends, and a
first-person clause in the third person."""

from __future__ import annotations

import re

from agentctx.memory.extract.statements import words

_MAX_VALUE_WORDS = 8
# Where a captured value ends: the next clause.
_VALUE_END = re.compile(
    r"\s+(?:and|but|because|so|which|who|since|though|although|while|when|where|"
    r"if|cause|cuz|as well|as long as|too+|lol|haha|hahaha|lmao|now|right now|these days|"
    r"actually|though|anyway|it's|it is|it|its|that's|thats|i'm|im|i've|ive|i|we|they|"
    r"theyre|he|she|there)\b.*$|"
    r"\s*[,;:()\"!?.…]+.*$|\s+-\s.*$",
    re.IGNORECASE,
)

# Words a value trails off with ("Cantonese really", "a technician technically").
_TRAILING = re.compile(
    r"(?:\s+(?:really|technically|btw|honestly|tbh|lol|haha|jk|though|anymore|any more|"
    r"already|again|for real))+\s*$",
    re.IGNORECASE,
)
# A correction right after a value: "Mandarin - well no, Cantonese", "a pharmacist - well,
# a pharmacy technician", "Photoshop - ok, GIMP", "a nurse... actually, a paramedic".
_CORRECTION = re.compile(
    r"\s*(?:[-\u2013\u2014,;]+|\.{2,}|\u2026)\s*(?:well|ok|okay|sorry|actually|i mean|"
    r"no wait|wait|correction|make that|or rather|rather|no)\b(?:[\s,]+(?:no|actually|"
    r"i mean|rather|well))*[\s,]*",
    re.IGNORECASE,
)
_CORRECTED_WORDS = 4  # a correction follows the value it corrects closely

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
PRONOUNS = words(
    """
    it that this you them him her those these there what how when why where which your
    ur u myself yourself everything everyone anything something nothing
    """
)
MONTHS = (
    "january|february|march|april|may|june|july|august|september|october|november|december|"
    "jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec"
)
WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"


def clause_value(raw: str, *, max_words: int = _MAX_VALUE_WORDS) -> str | None:
    """The captured text up to the end of its clause; None when it is empty or too long.

    A correction right after the value replaces it ("Mandarin - well no, Cantonese
    really" is "Cantonese")."""
    raw = corrected(raw)
    value = _VALUE_END.sub("", raw.lstrip(" '\"\u201c")).strip(" '\"-~\u201c\u201d")
    value = _TRAILING.sub("", value)
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
    if not words or words[0].lower() in PRONOUNS or words[0].lower() in _BAD_STARTS:
        return None
    return " ".join(words)


def corrected(raw: str) -> str:
    """``raw`` (a value and what follows it) with a value the speaker corrects right away
    replaced by the correction: "Photoshop - ok, GIMP, I'm not paying" -> "GIMP, I'm not
    paying"."""
    match = _CORRECTION.search(raw)
    if match is None or len(raw[: match.start()].split()) > _CORRECTED_WORDS:
        return raw
    rest = raw[match.end() :]
    return rest if re.match(r"\s*\w", rest) else raw


def subject_key(text: str) -> str:
    """A short, normalized subject: lowercase, articles dropped, whitespace collapsed."""
    words = [w for w in re.findall(r"[\w\[\]'-]+", text.lower()) if w not in {"a", "an", "the"}]
    return " ".join(words)[:200]


def third_person(text: str, *, capitalize: bool = False) -> str:
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
