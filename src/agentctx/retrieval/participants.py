"""Who takes part in a session, and whom a query is about.

Chat turns are written in the first person by their author ("I started yoga last
week"), while questions about them are asked in the third ("What does Paola do to
relax?"). The search uses what the session's event log already knows, its authors:

* a query that names exactly one participant gets a second ranking restricted to
  that participant's events, added to the fusion (an event by the person asked about
  is far more often the answer than one that merely mentions them);
* that query is embedded as the participant would have said it ("What do I do to
  relax?"), which is closer to the first-person events than the original wording;
* a query that names one participant together with someone else ("What do Kate and
  Elise have in common?", where Kate is no author, or one under another name) is about
  both, so neither of the above applies to it;
* a query that names two or more participants is embedded as they would ask it
  together ("What games do Fahim and Muhammad play?" becomes "What games do we
  play?"): their names are in few of their own events, and in the query's vector
  they pull it towards the events that greet or address them by name.

Names are matched loosely: any part of an author name of three letters or more,
against a capitalised word of the query, with a similarity of at least
``NAME_SIMILARITY`` (so "Muhammad" finds the author "Muhhamed" and "Fahim" finds
"Fahim Khan"). Names written in CJK script are matched as substrings. A participant
may also go by a name that is not their author name ("Kate" for the author "Emi", or
for "user"): every function here takes the ``aliases`` learned from the session
(:mod:`agentctx.retrieval.aliases`), alias (casefolded) -> author, and treats an alias
as one more part of its author's name.
"""

from __future__ import annotations

import difflib
import functools
import re
import threading
from collections.abc import Iterable, Mapping, Sequence

NAME_SIMILARITY = 0.75
"""How alike a query word and a name part must be (difflib's ratio) to count as a match."""

FUZZY_MIN_LENGTH = 5
"""Names shorter than this are matched exactly."""

APOSTROPHES = "'\u2019`"  # straight, curly (U+2019) and grave: all mark a possessive in chat text
_WORD = re.compile(rf"[^\W\d_]+(?:[{APOSTROPHES}]s)?", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_POSSESSIVE = re.compile(rf"[{APOSTROPHES}]s$")

# Verb agreement once the subject has become "I" ("does I" -> "do I"), any case.
_AGREEMENT = (
    (re.compile(r"\b(does) I\b", re.IGNORECASE), "do"),
    (re.compile(r"\b(is) I\b", re.IGNORECASE), "am"),
    (re.compile(r"\b(has) I\b", re.IGNORECASE), "have"),
)
_AFTER_I = (
    (re.compile(r"\bI is\b"), "I am"),
    (re.compile(r"\bI does\b"), "I do"),
    (re.compile(r"\bI has\b"), "I have"),
    (re.compile(r"\bI I\b"), "I"),
)
_PRONOUNS = (
    (re.compile(r"\b(he|she)\b", re.IGNORECASE), "I"),
    (re.compile(r"\b(his|her|hers)\b", re.IGNORECASE), "my"),
    (re.compile(r"\bhim\b", re.IGNORECASE), "me"),
    (re.compile(r"\b(himself|herself)\b", re.IGNORECASE), "myself"),
)


@functools.lru_cache(maxsize=1024)
def name_parts(author: str) -> tuple[str, ...]:
    """The parts of ``author`` a query may name: alphabetic words of three letters or
    more (casefolded), or the whole name when it is written in CJK script."""
    if _CJK.search(author):
        return (author.strip(),) if author.strip() else ()
    return tuple(w.casefold() for w in re.findall(r"[^\W\d_]+", author) if len(w) >= 3)


Aliases = Mapping[str, str]
"""Other names participants go by: alias (casefolded) -> author."""

_NO_ALIASES: Aliases = {}


def names_of(author: str, aliases: Aliases = _NO_ALIASES) -> tuple[str, ...]:
    """The parts of ``author``'s name (:func:`name_parts`) and the aliases they go by."""
    parts = name_parts(author)
    if not aliases:
        return parts
    return parts + tuple(sorted(alias for alias, owner in aliases.items() if owner == author))


def _matches(word: str, part: str) -> bool:
    folded = word.casefold()
    if folded == part:
        return True
    # Short names only match exactly: "Emi" is not "Emily", "Akib" is not "Akim".
    if min(len(folded), len(part)) < FUZZY_MIN_LENGTH or abs(len(folded) - len(part)) > 2:
        return False
    return difflib.SequenceMatcher(None, folded, part).ratio() >= NAME_SIMILARITY


def _capitalised(query: str) -> list[str]:
    return [_POSSESSIVE.sub("", w) for w in _WORD.findall(query) if w[:1].isupper() and len(w) >= 3]


def may_name_someone(query: str) -> bool:
    """Whether ``query`` has anything a name could be (a capitalised word, CJK text);
    when it has not, no author needs to be looked up."""
    return bool(_CJK.search(query)) or bool(_capitalised(query))


def unnamed_words(query: str, authors: Iterable[str]) -> list[str]:
    """The capitalised words of ``query`` that name none of ``authors``: where an alias
    may be (in order, each once)."""
    parts = [part for author in set(authors) for part in name_parts(author)]
    found: list[str] = []
    for word in _capitalised(query):
        if word not in found and not any(_matches(word, part) for part in parts):
            found.append(word)
    return found


def named_participants(
    query: str, authors: Iterable[str], aliases: Aliases = _NO_ALIASES
) -> list[str]:
    """The authors ``query`` names (by name or alias), in sorted order."""
    words = _capitalised(query)
    found = []
    for author in sorted(set(authors)):
        parts = names_of(author, aliases)
        if not parts:
            continue
        cjk = bool(_CJK.search(author)) and parts[0] in query
        if cjk or any(_matches(word, part) for word in words for part in parts):
            found.append(author)
    return found


_PAIR = re.compile(
    rf"\b([^\W\d_]{{3,}})(?:[{APOSTROPHES}]s)?,?\s+and\s+([^\W\d_]{{3,}})", re.UNICODE
)


def named_with_someone_else(query: str, author: str, aliases: Aliases = _NO_ALIASES) -> bool:
    """Whether ``query`` joins ``author``'s name by "and" to another capitalised name
    ("Kate and Elise", "Elise and Kate"): a question about two people, not about
    ``author`` alone. The other may be someone outside the session, or the other
    participant under a nickname or misspelt ("Faheem" for "Fahim")."""
    parts = names_of(author, aliases)
    for match in _PAIR.finditer(query):
        first, second = match.group(1), match.group(2)
        if not (first[:1].isupper() and second[:1].isupper()):
            continue
        first_is = any(_matches(first, part) for part in parts)
        second_is = any(_matches(second, part) for part in parts)
        if first_is != second_is:
            return True
    return False


def _named_words(query: str, parts: Iterable[str]) -> list[str]:
    """The capitalised words of ``query`` that name one of ``parts``, longest first (so
    a rewrite replaces "Fahimah" before "Fahim")."""
    wanted = tuple(parts)
    found = {w for w in _capitalised(query) if any(_matches(w, p) for p in wanted)}
    return sorted(found, key=len, reverse=True)


def first_person(query: str, author: str, aliases: Aliases = _NO_ALIASES) -> str:
    """``query`` as ``author`` would ask it of themself: their name becomes "I" (or "my"
    when possessive), third-person pronouns follow, and the verb agrees.

    Only English is rewritten; other queries come back unchanged.
    """
    if not query.isascii() and _CJK.search(query):
        return query
    words = _named_words(query, names_of(author, aliases))
    if not words:
        return query
    rewritten = query
    for word in words:
        escaped = re.escape(word)
        rewritten = re.sub(rf"\b{escaped}[{APOSTROPHES}]s\b", "my", rewritten)
        rewritten = re.sub(rf"\b{escaped}\b", "I", rewritten)
    for pattern, replacement in _PRONOUNS:
        rewritten = pattern.sub(replacement, rewritten)
    for pattern, verb in _AGREEMENT:
        rewritten = pattern.sub(functools.partial(_agree, verb), rewritten)
    for pattern, replacement in _AFTER_I:
        rewritten = pattern.sub(replacement, rewritten)
    return rewritten


_PLURAL_AGREEMENT = (
    (re.compile(r"\b(does) we\b", re.IGNORECASE), "do"),
    (re.compile(r"\b(is) we\b", re.IGNORECASE), "are"),
    (re.compile(r"\b(was) we\b", re.IGNORECASE), "were"),
    (re.compile(r"\b(has) we\b", re.IGNORECASE), "have"),
)
# After a preposition or a verb's object position a name becomes "us", not "we".
_OBJECT_BEFORE = re.compile(
    r"\b(?:about|at|between|by|for|from|to|with|without|of|knew|know|knows|met|meet|"
    r"meets|told|tell|tells|asked|ask|asks|than)\s*$",
    re.IGNORECASE,
)


def as_asked_by(query: str, authors: Sequence[str], aliases: Aliases = _NO_ALIASES) -> str:
    """``query`` as the participants it names would ask it: one named author asks it
    in the first person (:func:`first_person`), two or more together ("we", "us",
    "our"). Only English is rewritten; a query naming nobody comes back unchanged."""
    if not authors:
        return query
    if len(authors) == 1:
        return first_person(query, authors[0], aliases)
    if not query.isascii() and _CJK.search(query):
        return query
    words = _named_words(query, {part for author in authors for part in names_of(author, aliases)})
    if not words:
        return query
    name = "(?:" + "|".join(re.escape(w) for w in words) + ")"
    names = rf"{name}(?:\s+{name})*"  # "Fahim Khan": a first and a last name
    group = rf"{names}(?:\s*,\s*{names})*(?:,?\s+and\s+{names})?"  # "A, B and C"
    possessive = rf"[{APOSTROPHES}]s\b"

    def pronoun(match: re.Match[str]) -> str:
        if match.group("own"):
            return "our"
        before = match.string[: match.start()]
        return "us" if _OBJECT_BEFORE.search(before) else "we"

    rewritten = re.sub(rf"\b{group}(?P<own>{possessive})?(?!\w)", pronoun, query)
    for pattern, verb in _PLURAL_AGREEMENT:
        rewritten = pattern.sub(functools.partial(_agree_plural, verb), rewritten)
    return rewritten


def _agree_plural(verb: str, match: re.Match[str]) -> str:
    original = match.group(1)
    return (verb.capitalize() if original[:1].isupper() else verb) + " we"


def _agree(verb: str, match: re.Match[str]) -> str:
    """``verb`` in the case of the verb it replaces, then "I"."""
    original = match.group(1)
    return (verb.capitalize() if original[:1].isupper() else verb) + " I"


class ParticipantCache:
    """The authors of each session's events, read incrementally (only events newer than
    the last read), so asking costs one indexed range scan of what is new."""

    def __init__(self, max_sessions: int = 4096) -> None:
        self._max = max_sessions
        self._known: dict[tuple[str, str], tuple[int, frozenset[str]]] = {}
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> tuple[int, frozenset[str]] | None:
        """(seq read up to, authors) for ``key``, or None when never read."""
        with self._lock:
            return self._known.get(key)

    def put(self, key: tuple[str, str], seq: int, authors: Sequence[str]) -> frozenset[str]:
        """Record the authors seen up to ``seq`` (merged with what is known)."""
        with self._lock:
            known = self._known.get(key)
            merged = frozenset(authors) | (known[1] if known else frozenset())
            if known is None or seq > known[0]:
                if known is None and len(self._known) >= self._max:
                    self._known.pop(next(iter(self._known)))
                self._known[key] = (seq, merged)
            return merged

    def drop_session(self, key: tuple[str, str]) -> None:
        """Drop what is known of the session (its data was deleted)."""
        with self._lock:
            self._known.pop(key, None)

    def drop_user(self, user_id: str | None) -> None:
        """Drop what is known of the user's sessions (their data was deleted); of every
        user's when None."""
        with self._lock:
            for key in [k for k in self._known if user_id is None or k[0] == user_id]:
                del self._known[key]
