"""What the search agent hands back: the answer, its confidence, sources and pointers.

A :class:`SearchReport` is recorded in full as the ``final`` event of the search's own
session; the parent session gets :meth:`SearchReport.render`, a short text within a
token cap that names the pages behind it (``out_…`` ids, read with
``read_offloaded`` on the search's session), so the parent's window holds only the
report and pointers, never page text.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agentctx.tokens import TokenCounter

Method = Literal["llm", "offline"]
StopReason = Literal["confident", "max_iterations", "exhausted"]
_MIN_ANSWER_TOKENS = 40


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class ReportSource(_Frozen):
    """One source the answer rests on: a search hit, read or not.

    ``n`` is its citation number in the answer (``[n]``); ``evidence`` the sentences of
    it that bear on the question; ``page_id`` the ``out_…`` id of its fetched text in
    the search session (None when the page was not read, or could not be).
    """

    n: int
    url: str
    title: str = ""
    published_date: str | None = None
    evidence: tuple[str, ...] = ()
    page_id: str | None = None


class IterationRecord(_Frozen):
    """What one iteration did: its queries, pages read, and the judgement after it."""

    iteration: int
    queries: tuple[str, ...]
    results: int
    pages: tuple[str, ...] = ()
    errors: tuple[str, ...] = Field(default=(), description="Error codes of failed calls.")
    confidence: float
    method: Method


class SearchReport(_Frozen):
    """The result of one research task (seed 000 Phase 4: ``SearchReport``).

    ``method`` says how the final judgement was made (``llm``, or ``offline`` with no
    model or when it failed); ``llm_failures`` counts model calls the offline methods
    stood in for; ``stopped`` why the loop ended (``confident``: confidence reached the
    threshold; ``max_iterations``; ``exhausted``: no new query or result was left).
    ``errors`` counts failed searches and fetches by error code.
    """

    question: str
    answer: str
    confidence: float = Field(ge=0.0, le=1.0)
    iterations: int
    method: Method
    stopped: StopReason
    sources: tuple[ReportSource, ...] = ()
    sub_session_id: str
    user_id: str
    provider: str = ""
    llm_failures: int = 0
    errors: dict[str, int] = Field(default_factory=dict)
    history: tuple[IterationRecord, ...] = ()

    @property
    def page_ids(self) -> list[str]:
        """The ``out_…`` ids of every page read, in source order."""
        return [source.page_id for source in self.sources if source.page_id]

    def render(self, counter: TokenCounter, max_tokens: int = 600) -> str:
        """The report as the parent's tool result: at most ``max_tokens`` by ``counter``.

        Sources beyond what fits are dropped from the end (their count is said), the
        evidence quotes before them, and the answer is cut last.
        """
        head = (
            f"[web_research] confidence {self.confidence:.2f} ({self.method}, "
            f"{self.iterations} iteration{'s' if self.iterations != 1 else ''}, "
            f"stopped: {self.stopped})"
        )
        if self.errors:
            head += " errors: " + ", ".join(f"{k} x{v}" for k, v in sorted(self.errors.items()))
        pointer = (
            f"Pages: read_offloaded(<page id>) on search session {self.sub_session_id}"
            if self.page_ids
            else f"Search session: {self.sub_session_id}"
        )
        answer = f"Answer: {self.answer or '(no answer found)'}"
        sources = list(self.sources)
        for quotes in (True, False):
            for count in range(len(sources), -1, -1):
                text = self._compose(head, answer, sources[:count], pointer, quotes=quotes)
                if counter.count(text) <= max_tokens:
                    return text
        # Nothing but the frame and a cut answer fits.
        frame = self._compose(head, "", [], pointer, quotes=False)
        room = max(max_tokens - counter.count(frame) - 2, 0)
        if room < _MIN_ANSWER_TOKENS:
            return counter.truncate(frame, max_tokens)
        return self._compose(head, counter.truncate(answer, room), [], pointer, quotes=False)

    def _compose(
        self,
        head: str,
        answer: str,
        sources: list[ReportSource],
        pointer: str,
        *,
        quotes: bool,
    ) -> str:
        lines = [head]
        if answer:
            lines.append(answer)
        if sources:
            lines.append("Sources:")
        for source in sources:
            line = f"[{source.n}] {source.title or source.url} <{source.url}>"
            if source.published_date:
                line += f" ({source.published_date})"
            if source.page_id:
                line += f" page {source.page_id}"
            lines.append(line)
            if quotes:
                lines.extend(f'  "{quote}"' for quote in source.evidence[:1])
        left = len(self.sources) - len(sources)
        if left:
            lines.append(f"(+{left} more sources in the search session)")
        lines.append(pointer)
        return "\n".join(lines)
