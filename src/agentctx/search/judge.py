"""The search agent's model calls: planning queries and judging the evidence.

Both go through agentctx's :class:`~agentctx.llm.LLM` protocol with a JSON schema, so
the answer arrives parsed and validated (or the call raises ``LLMError``, and the
agent's offline methods in :mod:`agentctx.search.planning` stand in).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import date
from typing import Any

from agentctx.llm.chat import LLM, LLMResponseInvalid

MAX_QUERIES = 3
_EXCERPT_CHARS = 700

PLAN_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "queries": {
            "type": "array",
            "items": {"type": "string", "minLength": 1},
            "minItems": 1,
            "maxItems": MAX_QUERIES,
        },
        "time_sensitive": {"type": "boolean"},
    },
    "required": ["queries"],
    "additionalProperties": False,
}

JUDGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "answer": {"type": "string"},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "citations": {"type": "array", "items": {"type": "integer", "minimum": 1}},
        "next_queries": {"type": "array", "items": {"type": "string"}, "maxItems": MAX_QUERIES},
    },
    "required": ["answer", "confidence"],
    "additionalProperties": False,
}

_PLAN_SYSTEM = (
    "You plan web searches for a research question. Give 1 to {n} short search-engine "
    "queries that together find the facts the question needs, and say whether the "
    "question is about something current (time_sensitive). Today is {today}. "
    "Answer in JSON."
)
_JUDGE_SYSTEM = (
    "You judge web research. Using only the numbered sources below, answer the question "
    "briefly, citing sources as [n]. confidence (0 to 1) is how certain the sources make "
    "the answer: 0.8 or more only when independent sources agree on every part of it. "
    "citations lists the numbers of the sources the answer rests on. When the answer is "
    "not certain, next_queries gives up to {n} new search queries for what is missing. "
    "Answer in JSON."
)


@dataclass(frozen=True, slots=True)
class Plan:
    """The queries of one iteration."""

    queries: tuple[str, ...]
    time_sensitive: bool


@dataclass(frozen=True, slots=True)
class Judgement:
    """How well the sources answer the question, and what to search next."""

    answer: str
    confidence: float
    citations: tuple[int, ...]
    next_queries: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Excerpt:
    """A numbered source as the judge sees it."""

    n: int
    url: str
    title: str
    published_date: str | None
    text: str


def _data(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise LLMResponseInvalid(f"the {what} answer is not an object", raw=str(value))
    return value


def plan_with_llm(
    llm: LLM, question: str, *, today: date | None = None, limit: int = MAX_QUERIES
) -> Plan:
    """The model's queries for ``question`` (``LLMError`` when the model fails)."""
    messages = [
        {
            "role": "system",
            "content": _PLAN_SYSTEM.format(n=limit, today=(today or date.today()).isoformat()),
        },
        {"role": "user", "content": f"Question: {question}"},
    ]
    completion = llm.complete(messages, schema=PLAN_SCHEMA, schema_name="search_plan")
    data = _data(completion.data, "plan")
    queries = tuple(
        dict.fromkeys(" ".join(str(q).split()) for q in data["queries"] if str(q).strip())
    )
    if not queries:
        raise LLMResponseInvalid("the plan has no query", raw=completion.text)
    return Plan(queries[:limit], bool(data.get("time_sensitive", False)))


def _render_sources(excerpts: Sequence[Excerpt]) -> str:
    blocks = []
    for item in excerpts:
        head = f"[{item.n}] {item.title or item.url} <{item.url}>"
        if item.published_date:
            head += f" ({item.published_date})"
        blocks.append(f"{head}\n{item.text[:_EXCERPT_CHARS]}")
    return "\n\n".join(blocks) if blocks else "(no sources found yet)"


def judge_with_llm(
    llm: LLM,
    question: str,
    excerpts: Sequence[Excerpt],
    *,
    tried: Sequence[str],
    max_tokens: int | None = 800,
) -> Judgement:
    """The model's answer and confidence from ``excerpts`` (``LLMError`` when it fails).

    Citations of sources that do not exist are dropped.
    """
    tried_text = "; ".join(tried[-8:]) or "(none)"
    messages = [
        {"role": "system", "content": _JUDGE_SYSTEM.format(n=MAX_QUERIES)},
        {
            "role": "user",
            "content": f"Question: {question}\n\nQueries already searched: {tried_text}\n\n"
            f"Sources:\n{_render_sources(excerpts)}",
        },
    ]
    completion = llm.complete(
        messages, schema=JUDGE_SCHEMA, schema_name="search_judgement", max_tokens=max_tokens
    )
    data = _data(completion.data, "judgement")
    known = {item.n for item in excerpts}
    citations = tuple(dict.fromkeys(int(n) for n in data.get("citations", []) if int(n) in known))
    next_queries = tuple(
        dict.fromkeys(" ".join(str(q).split()) for q in data.get("next_queries", []) if str(q))
    )
    confidence = min(max(float(data["confidence"]), 0.0), 1.0)
    return Judgement(str(data["answer"]).strip(), confidence, citations, next_queries)
