"""What a user says about themselves: offline self-introduction patterns, and provenance.

The identification call returns user info for the whole batch; :func:`locate` traces
each value to the user message that says it, so a fact names the exact event (and
topic) it came from (:func:`fact_drafts`). Without a model, :func:`introductions` reads
only unambiguous self-introductions ("my name is …", "I work as a …", "我叫…");
anything looser would guess, and a wrong profile fact is worse than none.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from agentctx.compaction.topics.identify import Identified
from agentctx.compaction.topics.models import FactDraft, TopicDraft
from agentctx.compaction.topics.spans import Span
from agentctx.events import Event, EventType

_NAME = r"([A-Z][a-zA-Z'-]{1,30}(?: [A-Z][a-zA-Z'-]{1,30})?)"
_ROLE = r"([a-zA-Z][a-zA-Z /+#-]{1,48}?)"
_ZH_END = r"(?=[\uff0c\u3002,.!\uff01?\uff1f\s]|$)"  # full-width and ASCII sentence ends
_END = r"(?=[.,;!?)]|$| at | in | for | and | with | from )"

_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("preferred_name", re.compile(r"\b(?i:my name is|call me|my name's) " + _NAME + r"\b")),
    (
        "preferred_name",
        re.compile(r"(?:我叫|我的名字是|叫我)([\u4e00-\u9fff]{1,4}?)" + _ZH_END),
    ),
    ("occupation", re.compile(r"\b(?i:i work as an?|i'm working as an?) " + _ROLE + _END, re.I)),
    ("occupation", re.compile(r"\b(?i:my job is|my profession is) (?:an? )?" + _ROLE + _END, re.I)),
    (
        "occupation",
        re.compile(
            r"(?:我是一名|我是一个|我的职业是|我的工作是)([\u4e00-\u9fff]{2,10}?)" + _ZH_END
        ),
    ),
    ("location", re.compile(r"\b(?i:i live in|i'm based in|i am based in) " + _NAME + r"\b")),
    ("location", re.compile(r"我住在([\u4e00-\u9fff]{2,6}?)" + _ZH_END)),
)


def introductions(texts: Sequence[str]) -> dict[str, tuple[str, int]]:
    """Field -> (value, index of the text saying it), from self-introductions in ``texts``.

    ``texts`` are the user's own messages, oldest first; a later statement of a field
    replaces an earlier one.
    """
    found: dict[str, tuple[str, int]] = {}
    for index, text in enumerate(texts):
        for field, pattern in _PATTERNS:
            match = pattern.search(text)
            if match is None:
                continue
            value = match.group(1).strip(" -/")
            if value:
                found[field] = (value, index)
    return found


def locate(value: str, texts: Sequence[str]) -> int | None:
    """The index of the last text that mentions ``value`` (case-insensitive), or None."""
    needle = value.casefold().strip()
    if not needle:
        return None
    for index in range(len(texts) - 1, -1, -1):
        if needle in texts[index].casefold():
            return index
    return None


def fact_drafts(
    batch: Sequence[Event],
    texts: Sequence[str],
    spans: Sequence[Span],
    drafts: Sequence[TopicDraft],
    identified: Identified,
) -> list[FactDraft]:
    """Profile facts with provenance: the message saying each value, and its topic."""
    covered = spans[-1].end
    users = [i for i in range(len(batch)) if batch[i].type is EventType.USER_INPUT]
    values: list[tuple[str, str, int | None]] = [
        (field, value, index) for field, (value, index) in identified.said.items()
    ]
    for field, value in identified.user_info.items():
        found = locate(value, [texts[i] for i in users])
        values.append((field, value, users[found] if found is not None else None))
    facts = []
    for field, value, index in values:
        if index is not None and index >= covered:
            continue  # said in a message this step does not archive: learned later
        if index is None:
            facts.append(FactDraft(field, value, None, drafts[0].first_seq, drafts[-1].last_seq))
            continue
        topic = next(n for n, span in enumerate(spans) if span.start <= index < span.end)
        seq = batch[index].seq
        facts.append(FactDraft(field, value, topic, seq, seq))
    return facts
