"""Extraction with a chat model: one structured call per batch of events.

:class:`LLMExtractor` shows the model the session's messages as ``[seq] role: text``
lines (the stored, redacted text only) and asks, in one call, for the memories worth
keeping as JSON valid against :data:`EXTRACTION_SCHEMA`. Each memory cites the
``seq`` numbers of the messages it rests on; a citation of a seq that was not in the
prompt is dropped, and a memory left citing nothing is dropped with it (a model
inventing a source must not create a memory with a made-up provenance). A memory
whose text holds a secret's placeholder is dropped too.

When the model fails (unreachable, a refused request, or an answer that stays
invalid after the structured-output retry) the rule-based extractor does the job and
the :class:`ExtractionReport` says so (``method`` ``rules (llm failed: <code>)``,
``failure`` the error), the same fallback the reflection and topic jobs use.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agentctx.errors import AgentCtxError, ConfigError
from agentctx.events import Event, EventType, Role
from agentctx.llm.chat import LLM, ChatMessage, LLMError, Usage
from agentctx.memory.extract.rules import (
    RULES_VERSION,
    extract_declarative,
    has_secret,
    keywords_of,
    provenance,
)
from agentctx.memory.models import DECLARATIVE_KINDS, MemoryCandidate, MemoryKind
from agentctx.tokens import EstimateCounter, TokenCounter, truncate_text

log = logging.getLogger(__name__)

_NO_USAGE = Usage()

LLM_VERSION = "llm-2"
"""The LLM extractor's version (prompt and schema), recorded in provenance."""

_KINDS = sorted(kind.value for kind in DECLARATIVE_KINDS)
EXTRACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "memories": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "kind": {"type": "string", "enum": _KINDS},
                    "content": {"type": "string", "minLength": 1, "maxLength": 500},
                    "subject": {"type": ["string", "null"], "maxLength": 100},
                    "value": {"type": ["string", "null"], "maxLength": 200},
                    "retracted": {"type": "boolean"},
                    "keywords": {"type": "array", "items": {"type": "string"}, "maxItems": 8},
                    "confidence": {"type": "number", "minimum": 0, "maximum": 1},
                    "source_seqs": {
                        "type": "array",
                        "items": {"type": "integer"},
                        "minItems": 1,
                    },
                },
                "required": [
                    "kind",
                    "content",
                    "subject",
                    "value",
                    "retracted",
                    "keywords",
                    "confidence",
                    "source_seqs",
                ],
                "additionalProperties": False,
            },
        }
    },
    "required": ["memories"],
    "additionalProperties": False,
}
"""What the chat model answers."""


_INSTRUCTIONS = (
    "You extract long-term memories about the USER from a conversation with an AI agent. "
    "Keep only durable, useful facts the user states about themselves (never what the "
    "assistant suggests, what others are, or hypotheticals): name as the user gives it, "
    "occupation, employer, residence, home town, languages, skills, family members and "
    "their names, health facts the user volunteers (allergies, conditions), diet, plans "
    "with their dates, ongoing projects, preferences (likes, dislikes, how they want "
    "answers), decisions, and dated episodes (with the absolute date). Write each memory "
    "as one short, self-contained sentence in the third person ('User works as a nurse', "
    "'用户对花生过敏'), in the conversation's language. Keep placeholders such as [EMAIL] "
    "exactly as written and never reconstruct hidden values. 'subject' names what the "
    "memory is the current value of, so that a later statement of the same subject "
    "replaces it: 'name', 'occupation', 'employer', 'residence', 'home town', "
    "'language: <language>', 'skill: <skill>', 'family: <relation>: <name>', "
    "'allergy: <thing>', 'health: <condition>', 'diet' (the regime) or 'diet: <thing>', "
    "'plan: <topic>', 'project: <name>', 'preference: <topic>', 'answer style: length' "
    "(or language, format); null for a dated episode. 'value' is the bare value, "
    "lowercase ('software engineer', 'peanuts', 'chloe'), null without a subject. When "
    "the user takes a fact back ('I'm no longer vegetarian', 'the trip is off'), give "
    "the same subject and value as the fact and 'retracted': true; otherwise false. When "
    "the user corrects themselves, give only the corrected statement. 'source_seqs' are "
    "the [numbers] of the messages the memory rests on. 'confidence' (0..1): how sure "
    "you are that the memory is true and lasting. Answer with JSON: "
    '{"memories": [...]}; an empty list when there is nothing worth remembering.'
)


@dataclass(frozen=True, slots=True)
class ExtractionReport:
    """How an extraction went.

    ``method``: ``llm:<model>``, or ``rules (llm failed: <code>)`` when the rules stood
    in; ``usage`` the tokens of the call (its retry included); ``dropped`` candidates
    the model proposed that were not kept (a seq not in the prompt, a secret, a
    duplicate); ``failure`` the model's error when the rules stood in.
    """

    method: str
    usage: Usage = _NO_USAGE
    calls: int = 0
    attempts: int = 0
    dropped: int = 0
    failure: AgentCtxError | None = None

    @property
    def fell_back(self) -> bool:
        """Whether the rules did the job because the model failed."""
        return self.failure is not None


class LLMExtractor:
    """Declarative extraction with a chat model, the rules standing in when it fails.

    ``max_events``: the most recent messages shown (older ones are left out);
    ``message_tokens``: the most of one message's text shown; ``max_tokens``: the
    most the model may answer.
    """

    def __init__(
        self,
        llm: LLM,
        *,
        extractor_version: str = LLM_VERSION,
        counter: TokenCounter | None = None,
        max_events: int = 200,
        message_tokens: int = 400,
        max_tokens: int = 2000,
    ) -> None:
        self.llm = llm
        self.extractor_version = extractor_version
        self.counter: TokenCounter = counter or EstimateCounter()
        self.max_events = max_events
        self.message_tokens = message_tokens
        self.max_tokens = max_tokens

    def extract(self, events: Iterable[Event]) -> tuple[list[MemoryCandidate], ExtractionReport]:
        """The memories the model finds in ``events`` and how the call went.

        Never raises on a model failure: the rule-based candidates are returned and
        the report carries the error.
        """
        shown = [e for e in events if _is_message(e) and e.text.strip()][-self.max_events :]
        if not shown:
            return [], ExtractionReport(method=f"llm:{self.llm.name}")
        try:
            completion = self.llm.complete(
                self._messages(shown),
                schema=EXTRACTION_SCHEMA,
                schema_name="memories",
                max_tokens=self.max_tokens,
            )
        except (LLMError, ConfigError) as exc:
            log.warning("memory extraction: llm failed (%s), rules instead: %s", exc.code, exc)
            usage = getattr(exc, "usage", Usage())
            return extract_declarative(shown, extractor_version=RULES_VERSION), ExtractionReport(
                method=f"rules (llm failed: {exc.code})",
                usage=usage if isinstance(usage, Usage) else Usage(),
                calls=1,
                attempts=int(getattr(exc, "attempts", 1)),
                failure=exc,
            )
        model = completion.model or self.llm.name
        candidates, dropped = self._candidates(completion.data, shown, model)
        return candidates, ExtractionReport(
            method=f"llm:{model}",
            usage=completion.usage,
            calls=1,
            attempts=completion.attempts,
            dropped=dropped,
        )

    def _messages(self, shown: Sequence[Event]) -> list[ChatMessage]:
        lines = []
        for event in shown:
            role = event.role.value if event.role is not None else event.type.value
            date = event.ts.date().isoformat()
            text = truncate_text(self.counter, event.text, self.message_tokens)
            lines.append(f"[{event.seq}] {date} {role}: {text}")
        return [
            {"role": "system", "content": _INSTRUCTIONS},
            {"role": "user", "content": "Conversation:\n" + "\n".join(lines)},
        ]

    def _candidates(
        self, data: Any, shown: Sequence[Event], model: str
    ) -> tuple[list[MemoryCandidate], int]:
        by_seq = {event.seq: event for event in shown}
        items = data.get("memories") if isinstance(data, Mapping) else None
        kept: dict[tuple[MemoryKind, str], MemoryCandidate] = {}
        dropped = 0
        for item in items if isinstance(items, list) else []:
            candidate = self._candidate(item, by_seq, model)
            if candidate is None:
                dropped += 1
                continue
            key = (candidate.kind, candidate.content.casefold())
            if key in kept:
                dropped += 1
                continue
            kept[key] = candidate
        # In the order they were said: a correction comes after what it corrects.
        ordered = sorted(kept.values(), key=lambda c: max((s.seq or 0) for s in c.sources))
        return ordered, dropped

    def _candidate(
        self, item: Any, by_seq: Mapping[int, Event], model: str
    ) -> MemoryCandidate | None:
        if not isinstance(item, Mapping):
            return None
        content = " ".join(str(item.get("content", "")).split())
        if not content or has_secret(content):
            return None
        seqs = item.get("source_seqs")
        cited = [
            by_seq[seq]
            for seq in dict.fromkeys(seqs if isinstance(seqs, list) else [])
            if isinstance(seq, int) and seq in by_seq
        ]
        if not cited:
            return None
        subject = item.get("subject")
        subject = " ".join(subject.lower().split())[:256] if isinstance(subject, str) else None
        words = item.get("keywords")
        keywords = tuple(
            dict.fromkeys(
                " ".join(w.lower().split())
                for w in (words or [])
                if isinstance(w, str) and w.strip()
            )
        ) or keywords_of(content)
        confidence = item.get("confidence")
        value = item.get("value")
        data: dict[str, Any] = {}
        if subject and isinstance(value, str) and value.strip():
            data["value"] = " ".join(value.lower().split())[:200]
        if subject and item.get("retracted") is True:
            data["retracted"] = True
        return MemoryCandidate(
            kind=MemoryKind(item["kind"]),
            content=content[:4000],
            subject=subject or None,
            data=data,
            keywords=keywords[:8],
            confidence=float(confidence) if isinstance(confidence, int | float) else 0.5,
            sources=tuple(provenance(e, self.extractor_version, model) for e in cited),
            ts=max(e.ts for e in cited),
        )


def _is_message(event: Event) -> bool:
    """User and assistant messages: what memories are extracted from."""
    return event.type in (EventType.USER_INPUT, EventType.AGENT_RESPONSE, EventType.FINAL) or (
        event.role in (Role.USER, Role.ASSISTANT) and event.type not in _TOOL_TYPES
    )


_TOOL_TYPES = (EventType.TOOL_CALL, EventType.TOOL_RESULT)
