"""Other names the session's participants go by, learned from what they write.

Questions often name a participant by a name that is not their author name: the
author is ``"user"`` (or ``"Emi"``) while the other side of the chat calls her "Kate".
The log holds the evidence, of two kinds:

* **address**: another participant calls them by it ("Hey Kate!", "What about you,
  Kate?", "Thanks Kate"). Whom a message addresses is only clear when one author is
  left besides its own: a message by A addresses the one other author (or, from an
  event with no author such as an assistant's reply, the one author there is);
* **introduction**: they give it themselves ("I'm Kate.", "my name is Kate", "call me
  Kate"), which counts :data:`INTRODUCTION_WEIGHT` times.

A word becomes an alias of an author when the evidence pointing to them comes to at
least :data:`MIN_EVIDENCE`, at least one piece of it is an address (so "I'm Italian."
said twice does not make "Italian" a name), and at least :data:`OWNER_SHARE` of the
word's evidence points to them.

Aliases are looked up lazily: only for a capitalised word of a query that names no
author, over the events the lexical index ranks best for that word (at most
:data:`SAMPLE`; short messages such as greetings rank first). The evidence is kept per
session and word, and as the session's index grows only the newly indexed events that
hold the word are read. Only English is read.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable, Sequence

from sqlalchemy import Connection

from agentctx.cache.bounded import Lru
from agentctx.retrieval.event_rows import authored_texts
from agentctx.retrieval.lexical import SessionStats, search_session
from agentctx.retrieval.participants import APOSTROPHES, Aliases
from agentctx.retrieval.terms import query_terms

MIN_EVIDENCE = 3
"""Evidence an alias needs (an address counts once, an introduction twice)."""

OWNER_SHARE = 0.75
"""The share of a word's evidence that must point to one author."""

INTRODUCTION_WEIGHT = 2
"""What an introduction ("my name is Kate") counts for, against an address's one."""

SAMPLE = 64
"""Events read per word looked up: the lexical index's best for it."""

_GREETING = (
    r"(?i:hey|hi|hello|hiya|howdy|thanks|thank you|thx|bye|goodbye|good morning|"
    r"good afternoon|good evening|good night|goodnight|morning|congrats|congratulations|"
    r"welcome back|nice to meet you|see you|love you|miss you)"
)
_INTRODUCTION = rf"(?i:my name is|my name[{APOSTROPHES}]s|call me|i[{APOSTROPHES}]m|i am)"
# Words that end "see you ..." or follow a comma without being anyone's name.
_CALENDAR = frozenset(
    (
        *("monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"),
        *("january", "february", "march", "april", "may", "june", "july", "august"),
        *("september", "october", "november", "december", "today", "tomorrow", "soon"),
        "later",
    )
)


def addresses(text: str, word: str) -> bool:
    """Whether ``text`` calls someone ``word``: after a greeting ("Hey Kate"), after
    "you" ("What about you Kate?"), or after a comma at the end of a sentence ("That
    looks great, Kate!")."""
    if word.casefold() in _CALENDAR:
        return False
    name = re.escape(word)
    return bool(
        re.search(rf"(?:^|[\s,.!?;:]){_GREETING}[,!]?\s+{name}\b(?![{APOSTROPHES}-])", text)
        or re.search(rf"\b(?i:you),?\s+{name}\s*[.!?,]", text)
        or re.search(rf",\s*{name}\s*[!?]", text)
    )


def introduces(text: str, word: str) -> bool:
    """Whether ``text`` gives ``word`` as its author's name ("I'm Kate.", "my name is
    Kate and ...", "call me Kate")."""
    name = re.escape(word)
    return bool(
        re.search(
            rf"\b{_INTRODUCTION}\s+{name}(?=\s*(?:[.!,;]|$)|\s+(?i:and|by the way|btw|here)\b)",
            text,
        )
    )


class Evidence:
    """What the events read so far say of one word: the votes for each author, and how
    many of them were addresses."""

    def __init__(self) -> None:
        self.votes: Counter[str] = Counter()
        self.addressed: Counter[str] = Counter()

    def add(
        self, word: str, messages: Iterable[tuple[str | None, str]], authors: Collection[str]
    ) -> None:
        """Count what ``messages`` ((author, text) of events that hold ``word``) say."""
        for author, text in messages:
            if author is not None and author in authors and introduces(text, word):
                self.votes[author] += INTRODUCTION_WEIGHT
            if addresses(text, word):
                others = [a for a in authors if a != author]
                if len(others) == 1:
                    self.votes[others[0]] += 1
                    self.addressed[others[0]] += 1

    def owner(self) -> str | None:
        """The author the word is another name for, or None when the evidence does not
        say (see the module's rules)."""
        if not self.votes:
            return None
        (owner, count), total = self.votes.most_common(1)[0], sum(self.votes.values())
        if count < MIN_EVIDENCE or not self.addressed[owner] or count < OWNER_SHARE * total:
            return None
        return owner


def alias_owner(
    word: str, messages: Iterable[tuple[str | None, str]], authors: Collection[str]
) -> str | None:
    """The author ``word`` is another name for, from ``messages`` ((author, text) of
    events that hold it), or None when the evidence does not say."""
    evidence = Evidence()
    evidence.add(word, messages, authors)
    return evidence.owner()


class AliasBook:
    """The evidence for each session's words, read incrementally: a word is looked up
    once over the best :data:`SAMPLE` events for it, then again only over the events
    indexed since (bounded, least recently used dropped first)."""

    def __init__(self, max_entries: int = 4096) -> None:
        # (user id, session id, word) -> (seq indexed up to when read, its evidence)
        self._known: Lru[tuple[str, str, str], tuple[int, Evidence]] = Lru(max_entries)

    def aliases(
        self,
        conn: Connection,
        session: tuple[str, str],
        words: Sequence[str],
        authors: Collection[str],
        *,
        index: SessionStats,
        indexed_seq: int,
        max_postings: int,
    ) -> Aliases:
        """The aliases among ``words`` (a query's capitalised words that name no author,
        see :func:`~agentctx.retrieval.participants.unnamed_words`): alias (casefolded)
        -> author. ``session`` is (user id, session id); ``index``, its lexical index,
        indexed up to ``indexed_seq``; ``max_postings``, the lexical lookup's bound."""
        found: dict[str, str] = {}
        if not authors or not indexed_seq:
            return found
        for word in words:
            terms = query_terms(word)
            if len(terms) != 1:  # a stop word ("What"), or not one word
                continue
            key = (*session, word.casefold())
            known = self._known.get(key)
            if known is not None and known[0] > indexed_seq:
                known = None  # the index was rebuilt: read it again
            if known is None or known[0] < indexed_seq:
                after = known[0] if known is not None else None
                evidence = known[1] if known is not None else Evidence()
                hits = search_session(
                    conn,
                    index,
                    terms,
                    limit=SAMPLE,
                    before_seq=None,
                    after_seq=after,
                    max_postings=max_postings,
                )
                evidence.add(word, authored_texts(conn, session, [h.seq for h in hits]), authors)
                self._known.put(key, (indexed_seq, evidence))
            else:
                evidence = known[1]
            owner = evidence.owner()
            if owner is not None:
                found[word.casefold()] = owner
        return found

    def __len__(self) -> int:
        """Words whose evidence is held, over all sessions."""
        return len(self._known)

    def drop_session(self, key: tuple[str, str]) -> None:
        """Drop what is known of the session (its data was deleted)."""
        self._known.discard(lambda known: known[:2] == key)

    def drop_user(self, user_id: str | None) -> None:
        """Drop what is known of the user's sessions (their data was deleted); of every
        user's when None."""
        self._known.discard(lambda key: user_id is None or key[0] == user_id)
