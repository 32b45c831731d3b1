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
* the facts people state most, each under a subject of its own: languages (``language:
  french``), skills (``skill: rust``), family members and their names (``family:
  daughter: chloe``), allergies and conditions (``allergy: peanuts``, ``health:
  asthma``), diets (``diet``, ``diet: pork``), dated plans (``plan: trip japan``, the date
  in ``data["when"]``), projects (``project: apollo``) and how to answer (``answer
  style: length``); 我会说法语, 我女儿叫朵朵, 我对花生过敏, 我吃素, 请用中文回答…

A retraction ("I'm no longer vegetarian", 日本那趟旅行取消了) states the subject of the
fact it retracts with ``data={"retracted": True}``. A message that corrects itself
("I speak Mandarin - well no, Cantonese", "I'm Aleksandr. sorry, it's Oleksandr",
我叫陈浩……打错了, 是陈昊) states only the correction; statements of different messages
are all kept, in order, each with the time it was said, and consolidation keeps the
later. Other people's facts ("my friend is a nurse"), hypotheticals ("if I were a
pilot"), questions and what the assistant says state nothing about the user.

Only the stored (redacted) text of events is read. A sentence holding the
placeholder of a secret (an API key, a password, a card number: see
:data:`SECRET_TYPES`) is skipped whole, so neither it nor what surrounds the secret
becomes a memory; other placeholders (``[EMAIL]``, ``[PHONE]``) are kept as written.

Each candidate names its source event, has a ``subject`` when it states the value of
something that can change (``occupation``, ``residence``, ``favourite drink``,
``preference: coffee``) so consolidation can detect a contradiction, keywords, and a
confidence: explicit statements score higher than loose ones, and hedged sentences
("I think", "maybe", 可能) lower.

The patterns and what each records are in the ``rules_en*`` modules (``rules_en_profile``,
``rules_en_people``, ``rules_en_health``, ``rules_en_life``, then the general
``rules_en``) and the ``rules_zh*`` ones (a sentence with Chinese characters is read by
the Chinese ones), the specific before the general so a sentence one reads is not read
again as something looser; what they share is in
:mod:`~agentctx.memory.extract.statements`, :mod:`~agentctx.memory.extract.english`,
:mod:`~agentctx.memory.extract.chinese` and :mod:`~agentctx.memory.extract.value_words`.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import replace

from agentctx.compaction.offline.keywords import extract_keywords
from agentctx.compaction.offline.sentences import split_sentences
from agentctx.events import Event, EventType, Role
from agentctx.memory.extract.categories import StatementClassifier
from agentctx.memory.extract.clauses import first_person_clauses
from agentctx.memory.extract.rules_en import EN_RULES
from agentctx.memory.extract.rules_en_health import HEALTH_RULES
from agentctx.memory.extract.rules_en_life import LIFE_RULES
from agentctx.memory.extract.rules_en_people import PEOPLE_RULES, SCHOOL_RULES
from agentctx.memory.extract.rules_en_profile import PROFILE_RULES
from agentctx.memory.extract.rules_zh import ZH_RULES
from agentctx.memory.extract.rules_zh_life import ZH_LIFE_RULES
from agentctx.memory.extract.rules_zh_profile import ZH_PROFILE_RULES
from agentctx.memory.extract.statements import CORRECTS, Found, Groups, Rule, names_nobody
from agentctx.memory.models import MemoryCandidate, MemoryKind, Provenance
from agentctx.privacy.findings import ZH_LABELS, EntityType

RULES_VERSION = "rules-2"
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
    r"^\s*(if|when|whenever|unless|do|does|did|are|is|would|could|should|can)\b(?!')|"
    r"\b(if i|i wish|i'd|i would|i hope|do you|are you|you're|you are|imagine|someday|"
    r"some day|one day|i might|dream of|dreaming of|thinking about|thinking of|considering|"
    r"wondering|what if|suppose|pretend)\b|如果|要是|假如|万一|要不要|是不是|能不能|梦想|想当",
    re.IGNORECASE,
)
# The question that ends a sentence stating something first: "I'm fluent in German, so
# can you point me to the original?", "I'm in Denver, what should I plant?".
_TRAILING_QUESTION = re.compile(
    r"(?:,|\s[-\u2013\u2014])\s*(?:so |and |but |or |then )?(?:can|could|would|should|do|does|"
    r"did|is|are|was|were|will|what|what's|whats|how|why|where|when|which|who|any|anything|"
    r"got|have|has|am|should)\b[^,]*$",
    re.IGNORECASE,
)
# Words that correct what a message said a moment before ("I'm Aleksandr. sorry, it's
# Oleksandr"; 我是护士……不对, 我是急救员): the corrected statement is dropped.
_CORRECTION_MARK = re.compile(
    r"\b(?:actually|sorry|i mean|well no|no wait|correction|autocorrect\w*|typo|"
    r"technically|rather|my bad)\b|不对|打错|说错|写错|口误|准确地说|更正|应该是",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"^\s*(?:ok |so )?(?:can|could|would|will) you (?:please |pls )?(?=(?:switch|use|answer|"
    r"reply|respond|keep|stop|start|always|only|write|talk|give|be)\b)",
    re.IGNORECASE,
)
_EN_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = (
    *SCHOOL_RULES,
    *PROFILE_RULES,
    *PEOPLE_RULES,
    *HEALTH_RULES,
    *LIFE_RULES,
    *EN_RULES,
)
_ZH_RULES: tuple[tuple[re.Pattern[str], Rule], ...] = (
    *ZH_PROFILE_RULES,
    *ZH_LIFE_RULES,
    *ZH_RULES,
)
_CJK = re.compile(r"[\u4e00-\u9fff]")


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
    r"\b(?:i|im|me|my|we|our|let's|let us|decided|chose|agreed|work|worked|working|got|"
    r"started|moved|quit|left|been|writing|coding|last day|keep|be|answer|answers|reply|"
    r"respond|use|no|please|again|here|still|switch|switched|signed|renamed|rename|metric|"
    r"imperial|person|done|moving|move|trip|vegan|vegetarian|gave|had|cast|hold|dead|"
    r"shelved|cancelled|canceled)\b|"
    r"[\u4e00-\u9fff]",
    re.IGNORECASE,
)
"""A word every English rule needs (the speaker, a verb said without "I", a request
about answers), or any Chinese: a message with none of them states nothing the rules
learn, so its sentences are never split and matched."""
_VALUE_GROUPS = ("v", "v2", "v3", "v4", "v5", "act")


def _statement_part(sentence: str) -> str | None:
    """``sentence`` without the question it ends with, if it states something before it;
    a request asked as a question ("can you switch to imperial?") as the request; None
    for a question."""
    text = sentence.rstrip()
    if not text.endswith(("?", "\uff1f")):
        return text
    request = _REQUEST.match(text)
    if request is not None:
        return text[request.end() :].rstrip("?\uff1f ")
    if _CJK.search(text):
        cut = max(text.rfind("\uff0c"), text.rfind(","))
        return text[:cut] if cut > 0 else None
    match = _TRAILING_QUESTION.search(text)
    return text[: match.start()] if match is not None and match.start() > 0 else None


def _trigger(match: re.Match[str]) -> tuple[int, int]:
    """Where the match's trigger phrase is: before its value ("I live in "), or after it
    when the value comes first (日本那趟旅行 "取消了")."""
    values = [n for n in _VALUE_GROUPS if match.groupdict().get(n) is not None]
    if not values:
        return match.span()
    if match.start(values[0]) == match.start() and match.end(values[0]) < match.end():
        return (match.end(values[0]), match.end())
    return (match.start(), match.start(values[0]))


def _sentence_findings(sentence: str, event: Event) -> tuple[str | None, list[Found]]:
    """The part of ``sentence`` that states something (None: none, or too long), and
    what the rules find in it."""
    if len(sentence) > _MAX_SENTENCE_CHARS:
        return None, []
    statement = _statement_part(sentence)
    if statement is None or _NOT_A_STATEMENT.search(statement):
        return statement, []
    rules = _ZH_RULES if _CJK.search(statement) else _EN_RULES
    found: list[Found] = []
    taken: list[tuple[int, int]] = []
    for pattern, rule in rules:
        for match in pattern.finditer(statement):
            # The trigger phrase ("I live in "), not the value: the value's clause may
            # hold another statement ("I live in Lisbon, and I love tea").
            span = _trigger(match)
            if any(span[0] < end and start < span[1] for start, end in taken):
                continue
            result = rule(Groups(match), event)
            if result is not None:
                found.extend(result if isinstance(result, tuple) else (result,))
                taken.append(span)
    return statement, found


def extract_declarative(
    events: Iterable[Event],
    *,
    extractor_version: str = RULES_VERSION,
    classifier: StatementClassifier | None = None,
) -> list[MemoryCandidate]:
    """Self-statements, preferences, decisions and dated episodes in the user's messages.

    Reads only the stored (redacted) text of user messages; sentences holding a
    secret's placeholder are skipped. Candidates come in event order; the same
    statement made twice in the session is one candidate citing both events. With a
    ``classifier``, the first-person clauses are classified too, but for the
    attributes the rules found in the same sentence
    (:mod:`agentctx.memory.extract.categories`).
    """
    with_clauses = classifier is not None
    reads = [
        (event, *_read(event, statements=with_clauses))
        for event in events
        if is_user_message(event)
    ]
    looser = _classified(reads, classifier) if classifier is not None else {}
    by_key: dict[tuple[MemoryKind, str], MemoryCandidate] = {}
    for event, found, _statements in reads:
        for statement, sentence in (*found, *looser.get(event.event_id, ())):
            _add(by_key, statement, sentence, event, extractor_version)
    return list(by_key.values())


def _classified(
    reads: Sequence[tuple[Event, list[tuple[Found, str]], list[tuple[str, frozenset[str]]]]],
    classifier: StatementClassifier,
) -> dict[str, list[tuple[Found, str]]]:
    """What ``classifier`` reads in the first-person clauses of the user's sentences,
    per event id (every clause of every event classified at once), but for attributes
    the rules found in the same sentence."""
    clauses = [
        (event.event_id, statement, clause)
        for event, _found, statements in reads
        for statement in statements
        for clause in first_person_clauses(statement[0])
    ]
    if not clauses:
        return {}
    out: dict[str, list[tuple[Found, str]]] = {}
    findings = classifier.findings([clause for _, _, clause in clauses])
    for (event_id, (sentence, covered), _clause), found in zip(clauses, findings, strict=True):
        out.setdefault(event_id, []).extend(
            (finding, sentence)
            for finding in found
            if "*" not in covered and _head(finding.subject) not in covered
        )
    return out


def states_about_self(event: Event) -> bool:
    """Whether ``event``'s text holds a self-statement the rules learn from, whoever wrote
    it: what :func:`extract_declarative` would find in it as one of the user's messages."""
    return bool(_read(event)[0])


def _read(
    event: Event, *, statements: bool = False
) -> tuple[list[tuple[Found, str]], list[tuple[str, frozenset[str]]]]:
    """The rules' findings in ``event``'s text (after the message's own corrections),
    and with ``statements`` each sentence's statement part with the subjects the rules
    found in it (``*``: a finding without a subject, which covers the whole sentence),
    for the classifier."""
    text = event.text.translate(_APOSTROPHES)
    if not _MAY_STATE.search(text):
        return [], []
    masked = event_has_masked_secret(event)
    sentences = _sentences(text)
    found: list[tuple[Found, int]] = []
    parts: list[tuple[str, frozenset[str]]] = []
    for index, sentence in enumerate(sentences):
        if has_secret(sentence) or (masked and _MASKED.search(sentence)):
            continue
        statement, findings = _sentence_findings(sentence, event)
        found.extend((finding, index) for finding in findings)
        if statements and statement:
            parts.append((statement, frozenset(_head(f.subject) for f in findings)))
    corrected = _corrected(found, sentences)
    return [(finding, sentences[index]) for finding, index in corrected], parts


def _head(subject: str | None) -> str:
    """A subject's attribute ("allergy: peanuts" -> "allergy"); ``*`` for none."""
    return subject.split(":", 1)[0].strip() if subject else "*"


def _corrected(found: list[tuple[Found, int]], sentences: Sequence[str]) -> list[tuple[Found, int]]:
    """A message's findings with what it corrects itself dropped.

    A bare correction (打错了, 是陈昊) replaces the value of the statement before it; a
    statement of the same subject as an earlier one with a correction word between
    them ("I'm Aleksandr. sorry, … it's Oleksandr") drops the earlier one. Statements
    of different messages are all kept: consolidation keeps the later one.
    """
    out: list[tuple[Found, int]] = []
    for statement, index in found:
        if statement.data.get(CORRECTS):
            for position in range(len(out) - 1, -1, -1):
                before = out[position][0]
                if before.value and not before.data.get(CORRECTS):
                    out[position] = (_replace_value(before, statement.value or ""), index)
                    break
            continue
        if statement.subject is not None:
            out = [
                (before, at)
                for before, at in out
                if not (
                    before.subject == statement.subject
                    and before.content != statement.content
                    and _CORRECTION_MARK.search(" ".join(sentences[at : index + 1]))
                )
            ]
        out.append((statement, index))
    return out


def _replace_value(found: Found, value: str) -> Found:
    """``found`` stating ``value`` instead of its own value."""
    old = found.value or ""
    subject = found.subject
    if subject is not None and old:
        subject = subject.replace(old.lower(), value.lower())
    return replace(found, content=found.content.replace(old, value), subject=subject, value=value)


def _sentences(text: str) -> Sequence[str]:
    # Chinese sentences end at full-width stops without a following space, and a trailing
    # "……" starts a new thought (我叫陈浩……啊打错了); split those as well.
    out: list[str] = []
    for sentence in split_sentences(text):
        parts = re.split(
            r"(?<=[。\uff01\uff1f\uff1b])|(?<=[\u4e00-\u9fff]\u2026\u2026)", sentence.text
        )
        out.extend(s for s in parts if s.strip())
    return out


def _add(
    by_key: dict[tuple[MemoryKind, str], MemoryCandidate],
    found: Found,
    sentence: str,
    event: Event,
    extractor_version: str,
) -> None:
    if found.subject == "name" and names_nobody(found.value or found.content):
        return  # "User's name is [PERSON]" names nobody: the gate kept the name out
    confidence = found.confidence - (0.2 if _HEDGE.search(sentence) else 0.0)
    content = found.content[:1000]
    key = (found.kind, content.casefold())
    source = provenance(event, extractor_version)
    existing = by_key.get(key)
    if existing is not None:
        if all(s.event_id != source.event_id for s in existing.sources):
            # Said again: it moves after what was said in between, so a value changed and
            # changed back within the session ends on the value said last.
            del by_key[key]
            by_key[key] = existing.model_copy(
                update={
                    "sources": (*existing.sources, source),
                    "confidence": max(existing.confidence, round(confidence, 2)),
                    "ts": event.ts,
                }
            )
        return
    keywords = _keywords(content, found)
    data = {k: v for k, v in found.data.items() if k != CORRECTS}
    if found.episodic_date:
        data["date"] = found.episodic_date
    value = fact_value(found)
    if value is not None:
        # Two statements of one subject with one value are one fact said twice.
        data["value"] = value
    by_key[key] = MemoryCandidate(
        kind=found.kind,
        content=content,
        subject=found.subject,
        data=data,
        keywords=keywords,
        confidence=round(max(0.05, min(1.0, confidence)), 2),
        sources=(source,),
        ts=event.ts,
    )


def _keywords(content: str, found: Found) -> tuple[str, ...]:
    """The content's keywords, then the fact's value. (The words questions about its
    subject are asked with are indexed for every memory: agentctx.memory.vocabulary.)"""
    words = list(keywords_of(content))
    if found.subject and found.value:
        words.append(found.value.lower())
    return tuple(dict.fromkeys(w for w in words if w))[:12]


def fact_value(found: Found) -> str | None:
    """A statement's value as consolidation compares it: lowercase words without
    articles ("a software engineer" -> "software engineer"); None without a subject."""
    if not found.subject or not found.value:
        return None
    words = [w for w in found.value.lower().split() if w not in {"a", "an", "the"}]
    return " ".join(words) or None
