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

The patterns and what each records are in :mod:`~agentctx.memory.extract.rules_en` and
:mod:`~agentctx.memory.extract.rules_zh` (a sentence with Chinese characters is read by
the Chinese ones); what they share is in :mod:`~agentctx.memory.extract.statements`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Sequence

from agentctx.compaction.offline.keywords import extract_keywords
from agentctx.compaction.offline.sentences import split_sentences
from agentctx.events import Event, EventType, Role
from agentctx.memory.extract.rules_en import EN_RULES
from agentctx.memory.extract.rules_zh import ZH_RULES
from agentctx.memory.extract.statements import Found, Groups
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


_MAY_STATE = re.compile(
    r"\b(?:i|im|me|my|we|let's|let us|decided|chose|agreed)\b|[\u4e00-\u9fff]", re.IGNORECASE
)
"""A word every English rule needs (the speaker, or a decision's verb), or any Chinese:
a message with none of them states nothing the rules learn, so its sentences are never
split and matched (two thirds of the cost of a message that has one)."""


def _sentence_findings(sentence: str, event: Event) -> list[Found]:
    if len(sentence) > _MAX_SENTENCE_CHARS or sentence.rstrip().endswith(("?", "\uff1f")):
        return []
    if _NOT_A_STATEMENT.search(sentence):
        return []
    rules = ZH_RULES if re.search(r"[\u4e00-\u9fff]", sentence) else EN_RULES
    found: list[Found] = []
    taken: list[tuple[int, int]] = []
    for pattern, rule in rules:
        for match in pattern.finditer(sentence):
            # The trigger phrase ("I live in "), not the value: the value's clause may
            # hold another statement ("I live in Lisbon, and I love tea").
            values = [n for n in ("v", "v2", "v3", "act") if match.groupdict().get(n) is not None]
            span = (match.start(), match.start(values[0]) if values else match.end())
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            result = rule(Groups(match), event)
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
        if is_user_message(event):
            for found, sentence in _self_statements(event):
                _add(by_key, found, sentence, event, extractor_version)
    return list(by_key.values())


def states_about_self(event: Event) -> bool:
    """Whether ``event``'s text holds a self-statement the rules learn from, whoever wrote
    it: what :func:`extract_declarative` would find in it as one of the user's messages."""
    return next(_self_statements(event), None) is not None


def _self_statements(event: Event) -> Iterator[tuple[Found, str]]:
    """The rules' findings in ``event``'s text, each with its sentence."""
    text = event.text.translate(_APOSTROPHES)
    if not _MAY_STATE.search(text):
        return
    masked = event_has_masked_secret(event)
    for sentence in _sentences(text):
        if has_secret(sentence) or (masked and _MASKED.search(sentence)):
            continue
        for found in _sentence_findings(sentence, event):
            yield found, sentence


def _sentences(text: str) -> Sequence[str]:
    # Chinese sentences end at full-width stops without a following space; split those as well.
    out: list[str] = []
    for sentence in split_sentences(text):
        out.extend(s for s in re.split(r"(?<=[。\uff01\uff1f\uff1b])", sentence.text) if s.strip())
    return out


def _add(
    by_key: dict[tuple[MemoryKind, str], MemoryCandidate],
    found: Found,
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
