"""The result of ``build_context``: messages in the provider's format and a report.

The report says what each section cost, which events the window came from and, for
every event the builder looked at but left out, why.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from agentctx.context.anthropic import to_anthropic
from agentctx.context.sources import DenseState

DropReason = Literal[
    "budget",  # did not fit
    "not_relevant",  # ranked below what fitted
    "compacted",  # covered by a summary, left out in its favour
    "split_pair",  # its tool call or result could not come along
    "not_rendered",  # an event type that has no place in a model's context (state deltas)
]


WindowFormat = Literal["openai", "anthropic"]
"""The providers' message formats a window is given in."""


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class SectionReport(_Frozen):
    """One section of the window: what it was allowed, what it used, where it came from."""

    name: str
    allocated: int
    tokens: int
    messages: int
    event_ids: tuple[str, ...] = ()


class DroppedEvent(_Frozen):
    """An event the builder considered and left out."""

    event_id: str
    seq: int
    reason: DropReason


class TruncatedEvent(_Frozen):
    """An event shortened to fit, with the tokens it had and kept."""

    event_id: str
    seq: int
    tokens_before: int
    tokens_after: int


class ImagesReport(_Frozen):
    """The images of a window: sent as images (some at low detail) or as placeholders."""

    inline: tuple[str, ...] = ()
    low_detail: tuple[str, ...] = ()
    placeholders: tuple[str, ...] = ()
    image_tokens: int = 0


class ContextReport(_Frozen):
    """What ``build_context`` did."""

    strategy: str
    budget: int
    tokens: int
    tokenizer: str
    query: str | None
    sections: tuple[SectionReport, ...]
    included_event_ids: tuple[str, ...]
    dropped: tuple[DroppedEvent, ...] = ()
    truncated: tuple[TruncatedEvent, ...] = ()
    not_considered: int = Field(
        default=0,
        description="Older events never loaded (outside the recent window and "
        "not retrieved): the window did not need to read them.",
    )
    notes: tuple[str, ...] = ()
    timings_ms: dict[str, float] = Field(default_factory=dict)
    images: ImagesReport = Field(default_factory=ImagesReport)
    dense_ranking: DenseState | None = Field(
        default=None,
        description="Whether the search for older events ranked by vectors: 'used'; "
        "'pending' when the query's vector was not computed yet (computed in the "
        "background for the next window); 'loading' while the embedding model loads in "
        "the background (the window waited for neither); 'failed'; 'off' (no embedder). "
        "None when no search ran.",
    )
    unembedded_events: int = Field(
        default=0,
        description="The newest events that had no vector yet (embedding runs in the "
        "background): the search found them by their words only.",
    )
    stable_prefix_tokens: int | None = Field(
        default=None,
        description="Tokens from the start of the window, message by message, that equal "
        "the previous window this engine built for the session (what a provider's prompt "
        "cache can reuse); None for the first.",
    )

    def section(self, name: str) -> SectionReport | None:
        """The report of section ``name``, if the window has it."""
        return next((s for s in self.sections if s.name == name), None)


class ContextWindow:
    """The messages to send, their token count, and the report.

    ``messages`` are in OpenAI's chat format; :meth:`to_anthropic` converts them to
    Anthropic's Messages API form (``{"system": …, "messages": …}``).
    """

    __slots__ = ("messages", "report", "tokens")

    def __init__(self, messages: list[dict[str, Any]], tokens: int, report: ContextReport):
        self.messages = messages
        self.tokens = tokens
        self.report = report

    def __repr__(self) -> str:
        return (
            f"ContextWindow({len(self.messages)} messages, {self.tokens} tokens, "
            f"strategy={self.report.strategy!r})"
        )

    def to_openai(self) -> list[dict[str, Any]]:
        """The messages in OpenAI's chat format (the same list as :attr:`messages`)."""
        return self.messages

    def to_anthropic(self) -> dict[str, Any]:
        """``{"system": [...], "messages": [...]}`` for Anthropic's Messages API."""
        return to_anthropic(self.messages)

    def body(self, fmt: WindowFormat = "openai") -> dict[str, Any]:
        """The window as plain JSON data, as the REST API returns it: ``messages`` in
        ``fmt``'s form (Anthropic's system blocks apart, under ``system``), ``tokens``
        and the ``report``."""
        result: dict[str, Any] = {"tokens": self.tokens}
        if fmt == "anthropic":
            converted = self.to_anthropic()
            result["messages"] = converted["messages"]
            result["system"] = converted.get("system")
        else:
            result["messages"] = self.messages
        result["report"] = self.report.model_dump(mode="json")
        return result
