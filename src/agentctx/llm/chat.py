"""Chat models: the ``LLM`` protocol, what a call returns, its errors, and usage accounting.

An :class:`LLM` answers a list of OpenAI-style chat messages with a
:class:`Completion`. Given a JSON Schema it returns parsed, validated ``data`` as
well as the text, or raises :class:`LLMResponseInvalid`; every failure is an
:class:`LLMError` (or a :class:`~agentctx.errors.ConfigError` for a setup the
endpoint refuses), so a caller that has an offline method can always fall back::

    try:
        answer = llm.complete(messages, schema=TOPICS_SCHEMA, schema_name="topics")
    except LLMError as exc:
        ...  # the offline method does the job; record exc.code and str(exc)

A :class:`UsageLedger` adds up the tokens of every call (and the failures) per
model slot and model, thread-safely.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

from agentctx.errors import AgentCtxError
from agentctx.jsonvalue import JsonValue

ChatMessage = Mapping[str, Any]
"""One chat message in OpenAI's format: ``{"role": "user", "content": "..."}``.

``content`` is a string or a list of parts (``{"type": "text", "text": ...}``,
``{"type": "image_url", ...}``); assistant messages may carry ``tool_calls`` and
tool messages a ``tool_call_id``, exactly as the Chat Completions API takes them.
"""

Slot = Literal["fast", "primary"]
"""Which configured model a job uses: ``fast`` for summaries and classification,
``primary`` for the harder jobs."""

DEFAULT_SCHEMA_NAME = "answer"


class LLMError(AgentCtxError):
    """A chat model call failed; the caller's offline method should do the job instead."""

    code = "llm_error"


class LLMUnavailable(LLMError):
    """The endpoint could not be reached, or kept failing (5xx, 429) after the retries."""

    code = "llm_unavailable"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMTimeout(LLMUnavailable):
    """The endpoint did not answer within the timeout (on every attempt)."""

    code = "llm_timeout"


class LLMRequestRejected(LLMError):
    """The endpoint refused the request itself (400/413/422: too long, a bad parameter).

    Sending the same request again will not help; a smaller one may.
    """

    code = "llm_request_rejected"

    def __init__(self, message: str, *, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


class LLMResponseInvalid(LLMError):
    """The answer was not JSON valid against the schema, after repair and one retry.

    ``raw`` is the last answer's text and ``reason`` what was wrong with it.
    """

    code = "llm_response_invalid"

    def __init__(
        self, reason: str, *, raw: str, usage: Usage | None = None, attempts: int = 1
    ) -> None:
        super().__init__(f"the model's answer is not valid: {reason}")
        self.reason = reason
        self.raw = raw
        self.usage = usage if usage is not None else Usage()
        self.attempts = attempts


@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens one call (or many, added up) cost.

    ``estimated`` is true when the endpoint reported no usage for some request and
    agentctx's own estimate stands in for it.
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    estimated: bool = False

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            estimated=self.estimated or other.estimated,
        )


@dataclass(frozen=True, slots=True)
class Completion:
    """The answer to one :meth:`LLM.complete` call.

    ``text``: the answer's text (a leading ``<think>…</think>`` block removed).
    ``data``: the parsed JSON when a schema was given (valid against it), else None.
    ``usage``: tokens of every request the call made, retries included.
    ``model``: the model that answered, as the endpoint names it.
    ``finish_reason``: ``stop``, or ``length`` when the answer hit the token limit
    (with a schema, a truncated answer is asked for again instead).
    ``latency_ms``: wall time of the whole call.
    ``attempts``: answers requested: 2 when the first was truncated or invalid.
    ``repaired``: the JSON had to be repaired (code fences, text around it,
    trailing commas) before it parsed.
    """

    text: str
    data: JsonValue = None
    usage: Usage = Usage()
    model: str = ""
    finish_reason: str | None = None
    latency_ms: float = 0.0
    attempts: int = 1
    repaired: bool = False


LLMFailureHook = Callable[[str, str, str, Exception], None]
"""``(user_id, session_id, job_kind, exc)``: a model failed and an offline method stood
in. The engine records it as an ``error`` event in the session's log."""


@runtime_checkable
class LLM(Protocol):
    """A chat model: messages in, one answer out (text, or JSON valid against a schema)."""

    @property
    def name(self) -> str:
        """A stable id of the provider and model, e.g. ``openai:gpt-4o-mini``."""
        ...

    def complete(
        self,
        messages: Sequence[ChatMessage],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = DEFAULT_SCHEMA_NAME,
        max_tokens: int | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        """Answer ``messages``.

        With ``schema`` (a JSON Schema), the answer must be JSON valid against it:
        the provider asks for structured output where the endpoint supports it,
        repairs common faults, and asks once more when the answer is truncated or
        invalid; then it raises :class:`LLMResponseInvalid`. ``schema_name`` names
        the schema to the endpoint (letters, digits, ``_`` and ``-``).
        ``max_tokens`` bounds the answer (the endpoint's default when None).

        Raises :class:`LLMError` subclasses when the model fails, and
        :class:`~agentctx.errors.ConfigError` when the endpoint refuses the key or
        does not know the model.
        """
        ...


@dataclass(frozen=True, slots=True)
class LedgerEntry:
    """Accumulated calls and tokens (of one slot and model, or of several added up)."""

    calls: int = 0
    failures: int = 0
    attempts: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    total_tokens: int = 0
    latency_ms: float = 0.0

    def __add__(self, other: LedgerEntry) -> LedgerEntry:
        return LedgerEntry(
            calls=self.calls + other.calls,
            failures=self.failures + other.failures,
            attempts=self.attempts + other.attempts,
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            total_tokens=self.total_tokens + other.total_tokens,
            latency_ms=self.latency_ms + other.latency_ms,
        )


class UsageLedger:
    """Calls, failures and tokens per (slot, model), safe to share between threads.

    Providers record every call they finish or fail; tokens spent on a failed call
    (an invalid answer, say) are counted too. ``slot`` is ``""`` for a provider
    built without one.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._entries: dict[tuple[str, str], LedgerEntry] = {}

    def record(
        self,
        *,
        slot: str,
        model: str,
        usage: Usage,
        failed: bool = False,
        attempts: int = 1,
        latency_ms: float = 0.0,
    ) -> None:
        """Add one call."""
        call = LedgerEntry(
            calls=1,
            failures=int(failed),
            attempts=attempts,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
            latency_ms=latency_ms,
        )
        key = (slot, model)
        with self._lock:
            self._entries[key] = self._entries.get(key, LedgerEntry()) + call

    def entries(self) -> dict[tuple[str, str], LedgerEntry]:
        """A copy of the totals, keyed by ``(slot, model)``."""
        with self._lock:
            return dict(self._entries)

    def total(self, *, slot: str | None = None, model: str | None = None) -> LedgerEntry:
        """The sum over every entry, or over those of one ``slot`` and/or ``model``."""
        result = LedgerEntry()
        for (entry_slot, entry_model), entry in self.entries().items():
            if slot is not None and entry_slot != slot:
                continue
            if model is not None and entry_model != model:
                continue
            result = result + entry
        return result

    def reset(self) -> dict[tuple[str, str], LedgerEntry]:
        """Empty the ledger; returns what it held."""
        with self._lock:
            entries, self._entries = self._entries, {}
        return entries
