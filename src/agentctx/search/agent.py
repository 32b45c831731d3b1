"""``SearchAgent``: research a question by searching, reading and judging, in rounds.

Seed 000 Phase 4: iterate until the confidence reaches the threshold (0.8) or the
iteration cap (5). Each iteration plans queries, searches, reads the most promising
results not read yet, extracts evidence and judges it. With a model, planning and
judging go through it; with none (or when it fails) the offline methods of
:mod:`agentctx.search.planning` do, and the report says ``offline``.

Everything the agent does is recorded in its own session (the *search session*, not
the caller's): a ``planner`` event per plan, a ``tool_call``/``tool_result`` pair per
search (results as JSON) and per page read (the page text, restorable by its
``out_…`` id with ``read_offloaded``), a ``reflection`` event per judgement, and a
``final`` event holding the whole :class:`SearchReport`.

Guarantee: a failing provider loses nothing. A search or fetch that raises
``SearchError`` (or ``InvalidInput``: a query or URL it refuses) is recorded as a
failed ``tool_result`` and an ``error`` event, and the loop goes on with what it has
(three iterations in a row in which every search failed, or a refused API key, end it
early); the report's confidence says how little was found. A model failure is recorded
as an ``error`` event and the offline method stands in for that step.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentctx.errors import ConfigError, InvalidInput
from agentctx.events import BlobPart, Event, EventType
from agentctx.llm.chat import LLM, LLMError
from agentctx.search import planning
from agentctx.search.errors import SearchAuthError, SearchError
from agentctx.search.judge import Excerpt, Judgement, judge_with_llm, plan_with_llm
from agentctx.search.models import PageContent, SearchProvider, SearchResult
from agentctx.search.report import IterationRecord, Method, ReportSource, SearchReport, StopReason
from agentctx.sessions.session import Session

AGENT_ID = "search-agent"
SEARCH_TOOL = "web_search"
FETCH_TOOL = "fetch_page"
_MAX_SOURCES = 10
_EXTRACT_CHARS = 200_000  # of a page's text read for evidence (pages may be megabytes)
_FAILED_ITERATIONS_TO_STOP = 3


@dataclass(frozen=True, slots=True)
class AgentOptions:
    """How long and how wide the agent searches.

    ``confidence_threshold`` and ``max_iterations`` are seed 000's 0.8 and 5;
    ``pages_per_iteration`` results are read per iteration; ``queries_per_iteration``
    searches are made per iteration, each asking for ``results_per_query`` results.
    """

    confidence_threshold: float = 0.8
    max_iterations: int = 5
    pages_per_iteration: int = 3
    queries_per_iteration: int = 2
    results_per_query: int = 5

    @classmethod
    def from_config(cls, config: object | None) -> AgentOptions:
        """Options from a search configuration (any object with these attributes)."""
        if config is None:
            return cls()
        values: dict[str, Any] = {}
        for name in cls.__dataclass_fields__:
            value = getattr(config, name, None)
            if value is not None:
                values[name] = value
        if "results_per_query" not in values and getattr(config, "max_results", None):
            values["results_per_query"] = config.max_results  # type: ignore[attr-defined]
        return cls(**values)


@dataclass(slots=True)
class _Page:
    url: str
    title: str
    text: str
    page_id: str


@dataclass(slots=True)
class _State:
    """What the research has gathered so far."""

    question: str
    results: dict[str, SearchResult] = field(default_factory=dict)  # url -> first hit
    pages: dict[str, _Page] = field(default_factory=dict)
    unreadable: set[str] = field(default_factory=set)
    tried: list[str] = field(default_factory=list)
    errors: dict[str, int] = field(default_factory=dict)
    llm_failures: int = 0
    history: list[IterationRecord] = field(default_factory=list)

    def failed(self, code: str) -> None:
        self.errors[code] = self.errors.get(code, 0) + 1

    def sources(self) -> list[tuple[str, str]]:
        """(url, text) of every page read and other hit's snippet, for evidence."""
        # A page read replaces its snippet (providers cut snippets mid-sentence).
        texts = [(url, page.text[:_EXTRACT_CHARS]) for url, page in self.pages.items()]
        texts.extend(
            (url, f"{hit.title}. {hit.content}" if hit.title else hit.content)
            for url, hit in self.results.items()
            if hit.content and url not in self.pages
        )
        return texts


@dataclass(slots=True)
class _Verdict:
    answer: str
    confidence: float
    method: Method
    citations: tuple[int, ...] = ()
    next_queries: tuple[str, ...] = ()


def _code(exc: Exception) -> str:
    return str(getattr(exc, "code", type(exc).__name__))


class SearchAgent:
    """Researches one question at a time, recording its work in a search session.

    ``provider`` searches and reads pages; ``llm`` (optional) plans and judges;
    ``page_pointer(session, event)`` returns the ``out_…`` id of a recorded page (the
    service passes the engine's offloading).
    """

    def __init__(
        self,
        provider: SearchProvider,
        *,
        options: AgentOptions | None = None,
        llm: LLM | None = None,
        page_pointer: Callable[[Session, Event], str],
    ) -> None:
        self.provider = provider
        self.options = options or AgentOptions()
        self.llm = llm
        self._page_pointer = page_pointer

    # The loop --------------------------------------------------------------------------

    def run(self, session: Session, question: str) -> SearchReport:
        """Research ``question``, recording every step in ``session``; the final report is
        recorded there too (a ``final`` event) and returned."""
        opts = self.options
        state = _State(question)
        session.add_message("user", question, author=AGENT_ID)
        verdict = _Verdict("", 0.0, "offline")
        stopped: StopReason = "max_iterations"
        failed_in_a_row = 0
        next_queries: tuple[str, ...] = ()
        iterations = 0
        for iteration in range(1, opts.max_iterations + 1):
            queries, time_sensitive = self._plan(session, state, iteration, next_queries)
            if not queries:
                stopped = "exhausted"
                break
            iterations = iteration
            errors_before = sum(state.errors.values())
            searched = [self._search(session, state, q, time_sensitive) for q in queries]
            read = self._read(session, state)
            verdict = self._judge(session, state, iteration)
            next_queries = verdict.next_queries
            state.history.append(
                IterationRecord(
                    iteration=iteration,
                    queries=tuple(queries),
                    results=sum(searched),
                    pages=tuple(read),
                    errors=tuple(sorted(state.errors))
                    if sum(state.errors.values()) > errors_before
                    else (),
                    confidence=verdict.confidence,
                    method=verdict.method,
                )
            )
            if verdict.confidence >= opts.confidence_threshold:
                stopped = "confident"
                break
            all_failed = searched and all(n < 0 for n in searched)
            failed_in_a_row = failed_in_a_row + 1 if all_failed else 0
            if state.errors.get(SearchAuthError.code) or (
                failed_in_a_row >= _FAILED_ITERATIONS_TO_STOP
            ):
                stopped = "exhausted"
                break
        report = self._report(session, state, verdict, iterations, stopped)
        session.add_event(
            EventType.FINAL,
            report.answer or "(no answer found)",
            data=report.model_dump(mode="json"),
            author=AGENT_ID,
        )
        return report

    # Steps -----------------------------------------------------------------------------

    def _llm_failed(self, session: Session, state: _State, step: str, exc: Exception) -> None:
        state.llm_failures += 1
        session.add_event(
            EventType.ERROR,
            payload={
                "source": "search",
                "job": step,
                "error_code": _code(exc),
                "message": f"search {step}: the model failed ({_code(exc)}); offline method used",
            },
            author=AGENT_ID,
        )

    def _plan(
        self,
        session: Session,
        state: _State,
        iteration: int,
        suggested: Sequence[str],
    ) -> tuple[list[str], bool]:
        limit = self.options.queries_per_iteration
        tried = {q.casefold() for q in state.tried}
        time_sensitive = planning.is_time_sensitive(state.question)
        queries: list[str] = []
        method: Method = "offline"
        if iteration == 1 and self.llm is not None:
            try:
                plan = plan_with_llm(self.llm, state.question, limit=limit)
                queries, time_sensitive = list(plan.queries), plan.time_sensitive
                method = "llm"
            except (LLMError, ConfigError) as exc:
                self._llm_failed(session, state, "plan", exc)
        elif suggested:
            queries, method = list(suggested), "llm"
        queries = [q for q in queries if q.casefold() not in tried][:limit]
        if not queries:
            method = "offline"
            evidence = planning.extract_evidence(state.question, state.sources())
            queries = planning.plan_queries(
                state.question,
                iteration=iteration,
                coverage=planning.coverage_of(state.question, evidence),
                tried=state.tried,
                hints=planning.evidence_keywords(evidence, state.question),
                limit=limit,
            )
            queries = [q for q in queries if q.casefold() not in tried]
        if queries:
            session.add_event(
                EventType.PLANNER,
                f"Iteration {iteration}: search " + "; ".join(queries),
                data={
                    "iteration": iteration,
                    "queries": queries,
                    "time_sensitive": time_sensitive,
                    "method": method,
                },
                author=AGENT_ID,
            )
        state.tried.extend(queries)
        return queries, time_sensitive

    def _search(self, session: Session, state: _State, query: str, time_sensitive: bool) -> int:
        """One recorded search; the number of results, or -1 when it failed."""
        max_results = self.options.results_per_query
        call = session.add_tool_call(
            SEARCH_TOOL,
            {"query": query, "max_results": max_results, "time_sensitive": time_sensitive},
            author=AGENT_ID,
            metadata={"provider": self.provider.name},
        )
        started = time.perf_counter()
        try:
            response = self.provider.search(
                query, max_results=max_results, time_sensitive=time_sensitive
            )
        except (SearchError, InvalidInput) as exc:  # InvalidInput: a query it refuses
            self._failed(
                session, state, call.call_id, SEARCH_TOOL, exc, started=started, query=query
            )
            return -1
        for hit in response.results:
            state.results.setdefault(hit.url, hit)
        session.add_tool_result(
            call.call_id,
            data=response.model_dump(mode="json"),
            duration_ms=(time.perf_counter() - started) * 1000,
            author=AGENT_ID,
            metadata={"provider": response.provider, "results": len(response.results)},
        )
        return len(response.results)

    def _failed(
        self,
        session: Session,
        state: _State,
        call_id: str | None,
        tool: str,
        exc: Exception,
        *,
        started: float,
        **context: str,
    ) -> None:
        code = _code(exc)
        state.failed(code)
        message = f"{tool} failed ({code}): {exc}"[:2000]
        session.add_tool_result(
            call_id,
            message,
            is_error=True,
            duration_ms=(time.perf_counter() - started) * 1000,
            author=AGENT_ID,
            metadata={"error_code": code, **context},
        )
        session.add_event(
            EventType.ERROR,
            payload={
                "source": "search",
                "tool": tool,
                "error_code": code,
                "message": message,
                **context,
            },
            author=AGENT_ID,
        )

    def _read(self, session: Session, state: _State) -> list[str]:
        """Fetch the most promising unread results; the URLs read."""
        unread = [
            hit
            for url, hit in state.results.items()
            if url not in state.pages and url not in state.unreadable
        ]
        order = planning.rank_results(
            state.question, [(hit.title, hit.content, hit.score) for hit in unread]
        )
        read: list[str] = []
        for index in order[: self.options.pages_per_iteration]:
            hit = unread[index]
            if self._fetch(session, state, hit):
                read.append(hit.url)
        return read

    def _fetch(self, session: Session, state: _State, hit: SearchResult) -> bool:
        call = session.add_tool_call(FETCH_TOOL, {"url": hit.url}, author=AGENT_ID)
        started = time.perf_counter()
        try:
            page: PageContent = self.provider.fetch(hit.url)
        except (SearchError, InvalidInput) as exc:  # InvalidInput: a URL it cannot fetch
            state.unreadable.add(hit.url)
            self._failed(
                session, state, call.call_id, FETCH_TOOL, exc, started=started, url=hit.url
            )
            return False
        event = session.add_tool_result(
            call.call_id,
            page.text,
            duration_ms=(time.perf_counter() - started) * 1000,
            author=AGENT_ID,
            metadata={
                "url": page.url,
                "title": page.title or hit.title,
                "content_type": page.content_type,
                "status": page.status,
                "truncated": page.truncated,
                "fetched_at": page.fetched_at.isoformat(),
                "published_date": hit.published_date,
            },
        )
        state.pages[hit.url] = _Page(
            hit.url, page.title or hit.title, page.text, self._page_pointer(session, event)
        )
        return True

    def _numbered(
        self, state: _State, evidence: Sequence[planning.Evidence]
    ) -> list[tuple[str, list[str]]]:
        """The sources in citation order (with evidence first, best first; then pages
        read; then other results) and the evidence of each."""
        by_url: dict[str, list[str]] = {}
        for item in evidence:
            by_url.setdefault(item.source, []).append(item.text)
        urls = list(by_url)
        urls += [url for url in state.pages if url not in by_url]
        urls += [url for url in state.results if url not in urls]
        return [(url, by_url.get(url, [])) for url in urls[:_MAX_SOURCES]]

    def _judge(self, session: Session, state: _State, iteration: int) -> _Verdict:
        question = state.question
        evidence = planning.extract_evidence(question, state.sources())
        numbered = self._numbered(state, evidence)
        urls = [url for url, _ in numbered]
        coverage = planning.coverage_of(question, evidence)
        offline = _Verdict(
            planning.extractive_answer(evidence, urls),
            planning.estimate_confidence(question, evidence),
            "offline",
        )
        verdict = offline
        if self.llm is not None:
            excerpts = [
                self._excerpt(state, n, url, quotes) for n, (url, quotes) in enumerate(numbered, 1)
            ]
            try:
                judged: Judgement = judge_with_llm(self.llm, question, excerpts, tried=state.tried)
                # Nothing found means nothing to be confident about, whatever the model says.
                confidence = judged.confidence if numbered else 0.0
                verdict = _Verdict(
                    judged.answer, confidence, "llm", judged.citations, judged.next_queries
                )
            except (LLMError, ConfigError) as exc:
                self._llm_failed(session, state, "judge", exc)
        session.add_event(
            EventType.REFLECTION,
            f"Iteration {iteration}: confidence {verdict.confidence:.2f} ({verdict.method})",
            data={
                "iteration": iteration,
                "confidence": verdict.confidence,
                "method": verdict.method,
                "offline_confidence": offline.confidence,
                "answer": verdict.answer[:2000],
                "citations": list(verdict.citations),
                "missing_terms": coverage.missing,
                "next_queries": list(verdict.next_queries),
                "pages_read": len(state.pages),
                "results": len(state.results),
            },
            author=AGENT_ID,
        )
        return verdict

    def _excerpt(self, state: _State, n: int, url: str, quotes: list[str]) -> Excerpt:
        hit = state.results.get(url)
        page = state.pages.get(url)
        title = page.title if page is not None and page.title else (hit.title if hit else "")
        text = " ".join(quotes) if quotes else (hit.content if hit is not None else "")
        if not text and page is not None:
            text = page.text[:700]
        return Excerpt(n, url, title, hit.published_date if hit else None, text)

    def _report(
        self,
        session: Session,
        state: _State,
        verdict: _Verdict,
        iterations: int,
        stopped: StopReason,
    ) -> SearchReport:
        evidence = planning.extract_evidence(state.question, state.sources())
        numbered = self._numbered(state, evidence)
        cited = set(verdict.citations)
        sources: list[ReportSource] = []
        for n, (url, quotes) in enumerate(numbered, 1):
            page = state.pages.get(url)
            hit = state.results.get(url)
            if verdict.method == "llm" and cited and n not in cited and not quotes:
                continue
            if not quotes and page is None and n not in cited:
                continue  # an unread hit with nothing relevant in its snippet
            title = page.title if page is not None and page.title else (hit.title if hit else "")
            sources.append(
                ReportSource(
                    n=n,
                    url=url,
                    title=title,
                    published_date=hit.published_date if hit is not None else None,
                    evidence=tuple(quotes[:2]),
                    page_id=page.page_id if page is not None else None,
                )
            )
        return SearchReport(
            question=state.question,
            answer=verdict.answer,
            confidence=verdict.confidence,
            iterations=iterations,
            method=verdict.method,
            stopped=stopped,
            sources=tuple(sources),
            sub_session_id=session.id,
            user_id=session.user_id,
            provider=self.provider.name,
            llm_failures=state.llm_failures,
            errors=dict(state.errors),
            history=tuple(state.history),
        )


def page_blob_id(event: Event) -> str | None:
    """The blob of a page event whose text the size guard offloaded when it was written."""
    for part in event.parts:
        if isinstance(part, BlobPart) and part.original_kind == "text":
            return part.blob_id
    return None
