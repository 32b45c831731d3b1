"""Finding the topics of a batch: one chat-model call, or the offline methods.

The model sees the batch numbered as the design's prompt numbers it
(``[i] role: text``) and answers with every topic's title, summary, keywords and
``start_index..end_index``, plus what the user said about themselves. Indices are
checked (:func:`~agentctx.compaction.topics.spans.from_indices`): an answer out of
range, reversed, out of order or overlapping is sent back once with the reason,
then given up (:class:`~agentctx.llm.chat.LLMResponseInvalid`) so the offline
method stands in. Offline, TextTiling finds the boundaries and each topic gets an
extractive summary and its keywords against the other topics.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentctx.compaction.offline.keywords import keywords_of_spans
from agentctx.compaction.offline.segment import topic_boundaries
from agentctx.compaction.offline.summarize import extractive_summary
from agentctx.compaction.topics.config import TopicArchiveConfig
from agentctx.compaction.topics.models import PROFILE_FIELDS
from agentctx.compaction.topics.spans import Span, SpansInvalid, from_indices
from agentctx.llm.chat import LLM, ChatMessage, LLMResponseInvalid
from agentctx.tokens import TokenCounter, truncate_text

TITLE_CHARS = 100  # a title is a line, not a paragraph (the column takes 256)
KEYWORDS = 8  # at most this many keywords per topic
_OFFLINE_KEYWORDS = 5
_NULLABLE = {"type": ["string", "null"]}

TOPICS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "topics": {
            "type": "array",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "title": {"type": "string", "minLength": 1},
                    "summary": {"type": "string", "minLength": 1},
                    "start_index": {"type": "integer", "minimum": 0},
                    "end_index": {"type": "integer", "minimum": 0},
                    "keywords": {"type": "array", "items": {"type": "string"}},
                },
                "required": ["title", "summary", "start_index", "end_index", "keywords"],
                "additionalProperties": False,
            },
        },
        "user_info": {
            "type": "object",
            "properties": {name: _NULLABLE for name in PROFILE_FIELDS},
            "required": list(PROFILE_FIELDS),
            "additionalProperties": False,
        },
    },
    "required": ["topics", "user_info"],
    "additionalProperties": False,
}
"""What the chat model answers: the topics in order, and the user's info (nullable)."""

_INSTRUCTIONS = """\
Analyze the conversation below, identify its topics and summarize each one.

## Tasks
1. Find the topic boundaries (each topic at least {min_messages} messages, unless the \
conversation is shorter).
2. Give every topic a title and a summary.
3. Extract information about the user, if they gave any.

## Output (JSON)
{{"topics": [{{"title": "...", "summary": "...", "start_index": 0, "end_index": 15, \
"keywords": ["...", "..."]}}, ...],
 "user_info": {{"preferred_name": null, "occupation": null, "gender": null, \
"language": null, "location": null}}}}

Rules:
- Indices are the message numbers in brackets, 0 to {last}; topics are in order, do not \
overlap and leave no gap. The first starts at 0. Messages after the last topic stay \
unarchived: end there only if the last messages start a topic that is still going on.
- A tool call and its result belong to the same topic.
- Titles are short (3-8 words); summaries are detailed (about {words} words at most) and \
keep decisions, facts, names, numbers and open questions.
- Keywords: up to {keywords} words or phrases of the topic.
- user_info: only what the user said about themselves; null when not said. Never guess.
- Write in the conversation's language."""


@dataclass(frozen=True, slots=True)
class Proposal:
    """One topic as identified (by the model, or offline): what stands for its span."""

    title: str
    summary: str
    keywords: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Identified:
    """Topic spans over the batch, a proposal per source, and the user's info.

    ``user_info`` holds values to trace to the message saying them; ``said`` values
    whose message is known already (field -> (value, batch index)).
    """

    spans: list[Span]
    proposals: list[Proposal]
    user_info: dict[str, str] = field(default_factory=dict)
    said: dict[str, tuple[str, int]] = field(default_factory=dict)


def prompt_lines(
    labels: Sequence[str], texts: Sequence[str], counter: TokenCounter, cap: int
) -> str:
    """The batch as the model reads it: ``[i] role: text``, each text cut to ``cap`` tokens."""
    lines = []
    for index, (label, text) in enumerate(zip(labels, texts, strict=True)):
        shown = truncate_text(counter, text, cap) if text.strip() else "(no text)"
        lines.append(f"[{index}] {label}: {shown}")
    return "\n".join(lines)


def _clean(value: Any) -> str:
    return " ".join(str(value).split()) if isinstance(value, str) else ""


def _parse(data: Any, n: int) -> tuple[list[Span], list[Proposal], dict[str, str]]:
    """Spans, proposals and user info from a schema-valid answer; SpansInvalid if unusable."""
    if not isinstance(data, Mapping):
        raise SpansInvalid("the answer is not a JSON object")
    topics = data.get("topics")
    if not isinstance(topics, list) or not topics:
        raise SpansInvalid("no topics")
    indices: list[tuple[int, int]] = []
    proposals: list[Proposal] = []
    for topic in topics:
        if not isinstance(topic, Mapping):
            raise SpansInvalid("a topic is not an object")
        start, end = topic.get("start_index"), topic.get("end_index")
        if not isinstance(start, int) or not isinstance(end, int):
            raise SpansInvalid("start_index and end_index must be integers")
        title = _clean(topic.get("title"))[:TITLE_CHARS]
        summary = _clean(topic.get("summary"))
        if not title or not summary:
            raise SpansInvalid("every topic needs a title and a summary")
        words = topic.get("keywords") or []
        keywords = tuple(dict.fromkeys(k for k in (_clean(w) for w in words) if k))
        indices.append((start, end))
        proposals.append(Proposal(title, summary, keywords[:KEYWORDS]))
    spans = from_indices(indices, n)
    info = data.get("user_info")
    user_info: dict[str, str] = {}
    if isinstance(info, Mapping):
        for name in PROFILE_FIELDS:
            value = _clean(info.get(name))
            if value and value.casefold() not in ("null", "none", "unknown", "n/a"):
                user_info[name] = value[:200]
    return spans, proposals, user_info


def identify_with_llm(
    llm: LLM,
    labels: Sequence[str],
    texts: Sequence[str],
    *,
    counter: TokenCounter,
    config: TopicArchiveConfig,
) -> Identified:
    """The model's topics of the batch; ``LLMError`` (or ``ConfigError``) when it fails.

    An answer whose indices cannot be used is sent back once with the reason; a
    second unusable answer raises ``LLMResponseInvalid``.
    """
    n = len(texts)
    per_message = max(64, min(1_000, config.max_batch_tokens // 4))
    system = _INSTRUCTIONS.format(
        min_messages=config.min_topic_messages,
        last=n - 1,
        words=max(20, config.summary_tokens * 2 // 3),
        keywords=KEYWORDS,
    )
    conversation = "Conversation:\n" + prompt_lines(labels, texts, counter, per_message)
    messages: list[ChatMessage] = [
        {"role": "system", "content": system},
        {"role": "user", "content": conversation},
    ]
    expected = max(1, n // config.min_topic_messages)
    max_tokens = min(8_192, 200 + expected * (config.summary_tokens + 80))
    for attempt in (1, 2):
        answer = llm.complete(
            messages, schema=TOPICS_SCHEMA, schema_name="topics", max_tokens=max_tokens
        )
        try:
            spans, proposals, user_info = _parse(answer.data, n)
        except SpansInvalid as exc:
            if attempt == 2:
                raise LLMResponseInvalid(str(exc), raw=answer.text, attempts=2) from exc
            messages = [
                *messages,
                {"role": "assistant", "content": answer.text},
                {
                    "role": "user",
                    "content": f"That answer cannot be used: {exc}. Answer again with the "
                    f"corrected JSON; indices run from 0 to {n - 1}.",
                },
            ]
            continue
        proposals = [
            Proposal(
                p.title,
                truncate_text(counter, p.summary, config.summary_tokens, keep="head"),
                p.keywords,
            )
            for p in proposals
        ]
        return Identified(spans, proposals, user_info)
    raise AssertionError("unreachable")  # pragma: no cover


def identify_offline(texts: Sequence[str], *, min_topic_messages: int) -> list[Span]:
    """Topic spans of the batch by TextTiling (one source per segment)."""
    segments = topic_boundaries(list(texts), min_segment=min_topic_messages, keyword_count=0)
    return [Span(s.start, s.end, (i,)) for i, s in enumerate(segments)]


def offline_proposals(
    texts: Sequence[str], spans: Sequence[Span], *, counter: TokenCounter, summary_tokens: int
) -> list[Proposal]:
    """A title, an extractive summary and keywords for each span, made offline."""
    found = keywords_of_spans(texts, [(s.start, s.end) for s in spans], _OFFLINE_KEYWORDS)
    proposals = []
    for span, keywords in zip(spans, found, strict=True):
        words = tuple(k.text for k in keywords)
        part = [t for t in texts[span.start : span.end] if t.strip()]
        summary = extractive_summary(
            part, budget_tokens=summary_tokens, counter=counter, keywords=words or None
        ).text
        title = ", ".join(words[:3]) or _first_words(part)
        proposals.append(Proposal(title[:TITLE_CHARS] or "Conversation", summary, words))
    return proposals


def model_proposals(
    identified: Identified, spans: Sequence[Span], *, counter: TokenCounter, summary_tokens: int
) -> list[Proposal]:
    """A proposal for each of ``spans`` from the model's proposals (``identified``), which
    were made for its own spans before short ones were merged and edges snapped."""
    sizes = [0] * len(identified.proposals)
    for span in identified.spans:
        for source in span.sources:
            sizes[source] += len(span)
    return [
        combined(
            span,
            identified.proposals,
            counter=counter,
            summary_tokens=summary_tokens,
            sizes=sizes,
        )
        for span in spans
    ]


def combined(
    span: Span,
    proposals: Sequence[Proposal],
    *,
    counter: TokenCounter,
    summary_tokens: int,
    sizes: Sequence[int],
) -> Proposal:
    """One proposal for a span made of several (after merging short topics or snapping).

    The title is that of the largest part (``sizes``: messages per proposal); the
    summaries are joined in order within the budget, the keywords pooled.
    """
    parts = [proposals[i] for i in span.sources]
    if len(parts) == 1:
        return parts[0]
    title = proposals[max(span.sources, key=lambda i: (sizes[i], -i))].title
    summary = " ".join(p.summary for p in parts if p.summary)
    keywords = tuple(dict.fromkeys(k for p in parts for k in p.keywords))[:KEYWORDS]
    return Proposal(title, truncate_text(counter, summary, summary_tokens, keep="head"), keywords)


def _first_words(texts: Sequence[str], words: int = 8) -> str:
    for text in texts:
        if text.strip():
            return " ".join(text.split()[:words])
    return ""
