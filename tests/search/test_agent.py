"""The search agent end to end, offline method: local Tavily / SearXNG / page servers, a
real engine on SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from agentctx import ContextEngine
from agentctx.events import BlobPart, EventType
from agentctx.search.agent import AGENT_ID, FETCH_TOOL, SEARCH_TOOL
from agentctx.search.providers.searxng import SearxngProvider
from agentctx.search.providers.tavily import TavilyProvider
from agentctx.search.service import TOOL_NAME, SearchService
from search.agent_web import (
    GOOD,
    IRRELEVANT,
    QUESTION,
    local_web,
    make_engine,
    searxng_config,
    tavily_config,
)
from search.servers import Step, searxng_server, tavily_server


@pytest.fixture
def eng(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with make_engine(db_url, home) as engine:
        yield engine


def _types(engine: ContextEngine, user_id: str, session_id: str) -> list[str]:
    sub = engine.get_session(session_id, user_id=user_id)
    return [event.type.value for event in sub.events()]


def test_good_pages_stop_at_the_threshold_and_parent_holds_only_the_report(
    eng: ContextEngine,
) -> None:
    with (
        local_web([GOOD, GOOD, GOOD]) as web,
        tavily_server(pages=web.corpus) as srv,
    ):
        provider = TavilyProvider(tavily_config(srv.url, srv.api_key or ""))
        service = SearchService(eng, provider, provider.config)
        parent = eng.create_session("u1", "helper")
        parent.add_message("user", QUESTION)
        report = service.research(parent, QUESTION)

        assert report.method == "offline"
        assert report.stopped == "confident"
        assert report.iterations <= 2
        assert report.confidence >= 0.8
        assert "1994" in report.answer
        assert len({source.url.rsplit("/", 1)[0] for source in report.sources}) >= 2
        assert report.page_ids and all(pid.startswith("out_") for pid in report.page_ids)

        # The search session: linked to the parent, every step recorded.
        sub = eng.get_session(report.sub_session_id, user_id="u1")
        assert sub.agent_id == AGENT_ID
        assert sub.info.meta["parent_session_id"] == parent.id
        calls = parent.events(types=[EventType.TOOL_CALL])
        assert sub.info.meta["parent_call_id"] == calls[0].call_id
        types = _types(eng, "u1", sub.id)
        assert types[0] == "user_input" and types[-1] == "final"
        assert types.count("planner") == report.iterations
        assert types.count("reflection") == report.iterations
        names = [e.meta.tool_name for e in sub.events(types=[EventType.TOOL_CALL])]
        assert SEARCH_TOOL in names and names.count(FETCH_TOOL) == len(report.page_ids)
        results = sub.events(types=[EventType.TOOL_RESULT])
        searches = [r for r in results if r.meta.extra.get("provider") == "tavily"]
        assert searches and searches[0].parts[0].kind == "json"
        assert searches[0].parts[0].data["results"]  # type: ignore[union-attr]

        # Every page read comes back byte for byte from the search session.
        for source in report.sources:
            if source.page_id is not None:
                assert sub.read_offloaded(source.page_id) == provider.fetch(source.url).text

        # The parent: one tool_call and one tool_result, the report with pointers only.
        assert [e.type for e in parent.events()] == [
            EventType.USER_INPUT,
            EventType.TOOL_CALL,
            EventType.TOOL_RESULT,
        ]
        result = parent.events(types=[EventType.TOOL_RESULT])[0]
        assert result.call_id == calls[0].call_id and calls[0].meta.tool_name == TOOL_NAME
        assert result.meta.extra["sub_session_id"] == sub.id
        window = parent.build_context(query=QUESTION, budget=4000)
        text = str(window.messages)
        assert sub.id in text and report.page_ids[0] in text
        for marker in ("PAGE_ONLY_MARKER_ALPHA", "PAGE_ONLY_MARKER_BETA", "PAGE_ONLY_MARKER_GAMMA"):
            assert marker not in text
        assert eng.token_counter().count(result.parts[0].text) <= service.report_max_tokens  # type: ignore[union-attr]

        # And the whole report is kept in the search session.
        assert service.report("u1", sub.id) == report


def test_irrelevant_pages_run_exactly_max_iterations_with_new_queries(
    eng: ContextEngine,
) -> None:
    with local_web([IRRELEVANT, IRRELEVANT]) as web:
        hits = web.results(IRRELEVANT)
        with tavily_server(pages=web.corpus, results=lambda body: hits) as srv:
            provider = TavilyProvider(tavily_config(srv.url, srv.api_key or "", max_results=10))
            service = SearchService(eng, provider, provider.config)
            parent = eng.create_session("u1", "helper")
            report = service.research(parent, QUESTION)
            queries = [r.json["query"] for r in srv.requests if r.path == "/search"]

    assert report.iterations == 5 and report.stopped == "max_iterations"
    assert report.confidence < 0.2
    assert len(queries) == len(set(queries)) >= 5  # every iteration searched anew
    types = _types(eng, "u1", report.sub_session_id)
    assert types.count("reflection") == 5 and types.count("planner") == 5
    # Six irrelevant pages, three read per iteration: all read, none twice.
    fetched = [
        e.parts[0].data["url"]  # type: ignore[union-attr]
        for e in eng.get_session(report.sub_session_id, "u1").events(types=[EventType.TOOL_CALL])
        if e.meta.tool_name == FETCH_TOOL
    ]
    assert len(fetched) == len(set(fetched)) == 6


def test_iteration_cap_and_threshold_follow_the_config(eng: ContextEngine) -> None:
    with local_web([IRRELEVANT]) as web:
        hits = web.results(IRRELEVANT)
        with tavily_server(pages=web.corpus, results=lambda body: hits) as srv:
            config = tavily_config(srv.url, srv.api_key or "", max_iterations=2)
            service = SearchService(eng, TavilyProvider(config), config)
            report = service.research(eng.create_session("u1", "helper"), QUESTION)
    assert report.iterations == 2 and report.stopped == "max_iterations"

    # One site only: every term has one source (0.6), below 0.8 but above a 0.5 threshold.
    with local_web([GOOD]) as web, tavily_server(pages=web.corpus) as srv:
        strict = tavily_config(srv.url, srv.api_key or "", max_iterations=3)
        lenient = tavily_config(srv.url, srv.api_key or "", confidence_threshold=0.5)
        parent = eng.create_session("u1", "helper")
        low = SearchService(eng, TavilyProvider(strict), strict).research(parent, QUESTION)
        high = SearchService(eng, TavilyProvider(lenient), lenient).research(parent, QUESTION)
    assert low.confidence == pytest.approx(0.6) and low.iterations == 3
    assert high.confidence == pytest.approx(0.6) and high.iterations == 1
    assert high.stopped == "confident"


def test_searxng_with_plain_page_fetches(eng: ContextEngine) -> None:
    with (
        local_web([GOOD, GOOD]) as web,
        searxng_server(pages=web.corpus) as srv,
    ):
        provider = SearxngProvider(searxng_config(srv.url))
        service = SearchService(eng, provider, provider.config)
        report = service.research(eng.create_session("u1", "helper"), QUESTION)
        fetched = sum(len([r for r in s.requests if r.method == "GET"]) for s in web.servers)
        assert report.stopped == "confident" and report.confidence >= 0.8
        assert fetched == len(report.page_ids) >= 2
        sub = eng.get_session(report.sub_session_id, "u1")
        for source in report.sources:
            if source.page_id:
                assert sub.read_offloaded(source.page_id) == provider.fetch(source.url).text


def test_a_large_page_is_offloaded_once_and_restored(eng: ContextEngine) -> None:
    filler = "".join(
        f"Filler sentence number {i} about nothing in particular. " for i in range(4000)
    )
    big = {"/big": GOOD["/skerryvore"] + " " + filler}
    with local_web([big, GOOD]) as web, tavily_server(pages=web.corpus) as srv:
        provider = TavilyProvider(tavily_config(srv.url, srv.api_key or ""))
        report = SearchService(eng, provider, provider.config).research(
            eng.create_session("u1", "helper"), QUESTION
        )
        big_url = web.url(0, "/big")
        source = next(s for s in report.sources if s.url == big_url)
        assert source.page_id is not None
        sub = eng.get_session(report.sub_session_id, "u1")
        text = provider.fetch(big_url).text
        assert len(text.encode()) > eng.settings.max_inline_bytes
        assert sub.read_offloaded(source.page_id) == text
        page_event = next(
            e
            for e in sub.events(types=[EventType.TOOL_RESULT])
            if e.meta.extra.get("url") == big_url
        )
        # The size guard's blob is the page: not stored a second time.
        assert isinstance(page_event.parts[0], BlobPart)
        assert source.page_id == "out_" + page_event.parts[0].blob_id[:24]


@pytest.mark.parametrize(
    "step",
    [
        Step.rate_limited(retry_after=0),
        Step.malformed(),
        Step.server_error(503),
        Step.hang(10),
    ],
    ids=["429", "malformed", "5xx", "timeout"],
)
def test_a_failing_provider_loses_nothing(
    step: Step, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    # SQLite only: the provider's failure modes do not depend on the database.
    with (
        make_engine(f"sqlite:///{tmp_path / 'a.db'}", tmp_path / "home") as engine,
        local_web([GOOD, GOOD]) as web,
        tavily_server(pages=web.corpus, script=[step] * 40) as srv,
    ):
        config = tavily_config(srv.url, srv.api_key or "", timeout_s=0.3)
        service = SearchService(engine, TavilyProvider(config), config)
        parent = engine.create_session("u1", "helper")
        report = service.research(parent, QUESTION)
        assert report.confidence == 0.0 and report.stopped == "exhausted"
        assert report.errors and sum(report.errors.values()) >= 2
        sub = engine.get_session(report.sub_session_id, "u1")
        errors = sub.events(types=[EventType.ERROR])
        assert len(errors) == sum(report.errors.values())
        assert {e.payload["error_code"] for e in errors} == set(report.errors)
        failed = [e for e in sub.events(types=[EventType.TOOL_RESULT]) if e.payload["is_error"]]
        assert len(failed) == len(errors)
        calls = {e.call_id for e in sub.events(types=[EventType.TOOL_CALL])}
        assert {e.call_id for e in failed} == calls  # every call has its (failed) result
        assert sub.events(types=[EventType.FINAL])
        result = parent.events(types=[EventType.TOOL_RESULT])
        assert len(result) == 1 and not result[0].payload["is_error"]
        assert "confidence 0.00" in result[0].parts[0].text  # type: ignore[union-attr]


def test_search_recovers_after_transient_failures_and_a_failing_fetch(eng: ContextEngine) -> None:
    with local_web([GOOD, GOOD, {"/gone": GOOD["/history"]}]) as web:
        corpus = dict(web.corpus)
        gone = web.url(2, "/gone")
        hits = [
            {"url": gone, "title": "Skerryvore lighthouse automated", "content": "", "score": 1.0},
            *web.results(GOOD),
        ]
        web.servers[2].script(*[Step.server_error(500)] * 5)  # the page itself fails too
        corpus.pop(gone)  # and /extract does not have it
        with tavily_server(
            pages=corpus,
            results=lambda body: hits,
            script=[Step.rate_limited(retry_after=0), Step.server_error(502)],
        ) as srv:
            config = tavily_config(srv.url, srv.api_key or "")
            report = SearchService(eng, TavilyProvider(config), config).research(
                eng.create_session("u1", "helper"), QUESTION
            )
    assert report.confidence >= 0.8 and report.stopped == "confident"
    assert report.errors  # the 429, the 502 and the page that could not be read
    sub = eng.get_session(report.sub_session_id, "u1")
    failed_urls = [
        e.payload.get("url") for e in sub.events(types=[EventType.ERROR]) if e.payload.get("url")
    ]
    assert gone in failed_urls
    assert gone not in {s.url for s in report.sources if s.page_id}
