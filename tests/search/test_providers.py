"""Tavily and SearXNG providers against real local servers speaking their wire formats."""

from __future__ import annotations

import time
from datetime import UTC, date, datetime, timedelta
from email.utils import format_datetime
from typing import Any

import pytest

from agentctx.errors import ConfigError, InvalidInput
from agentctx.search.config import SearchConfig, build_provider, parse_search_config
from agentctx.search.errors import (
    SearchAuthError,
    SearchBadResponse,
    SearchRateLimited,
    SearchTimeout,
    SearchUnavailable,
)
from agentctx.search.models import SearchProvider
from agentctx.search.providers import SearxngProvider, TavilyProvider
from search.servers import (
    ARTICLE_FACTS,
    ARTICLE_TITLE,
    DEFAULT_TAVILY_KEY,
    Step,
    page_server,
    searxng_server,
    tavily_server,
)

CORPUS = {
    "https://example.org/paris": "Paris is the capital and largest city of France.",
    "https://example.org/berlin": "Berlin is the capital of Germany, on the Spree.",
    "https://example.org/lyon": "Lyon is a city in France known for its food.",
}
TODAY = date(2026, 11, 22)


def tavily(url: str, **kwargs: Any) -> TavilyProvider:
    options: dict[str, Any] = {
        "provider": "tavily",
        "tavily_api_key": DEFAULT_TAVILY_KEY,
        "tavily_base_url": url,
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_s": 0.01,
    }
    options.update(kwargs)
    return TavilyProvider(SearchConfig(**options), today=lambda: TODAY)


def searxng(url: str, **kwargs: Any) -> SearxngProvider:
    options: dict[str, Any] = {
        "provider": "searxng",
        "searxng_url": url,
        "timeout_s": 2.0,
        "max_retries": 2,
        "backoff_s": 0.01,
    }
    options.update(kwargs)
    return SearxngProvider(SearchConfig(**options))


# Tavily ---------------------------------------------------------------------------------


def test_tavily_search_sends_the_documented_request_and_parses_results() -> None:
    with tavily_server(pages=CORPUS, answer="Paris.") as srv:
        response = tavily(srv.url).search("capital of France", max_results=2)
        sent = srv.requests[-1]
    assert sent.method == "POST"
    assert sent.path == "/search"
    assert sent.headers["authorization"] == f"Bearer {DEFAULT_TAVILY_KEY}"
    assert "api_key" not in sent.json  # the key travels only in the header
    assert sent.json["query"] == "capital of France"
    assert sent.json["max_results"] == 2
    assert sent.json["topic"] == "general"
    assert sent.json["search_depth"] == "basic"
    assert sent.json["include_answer"] is True
    assert response.provider == "tavily"
    assert response.answer == "Paris."
    assert len(response.results) == 2  # max_results honoured; the corpus has 3 hits
    assert response.results[0].url == "https://example.org/paris"
    assert response.results[0].score == 1.0
    assert response.results[1].score == 0.5
    assert "largest city" in response.results[0].content
    assert response.elapsed_ms > 0


def test_tavily_appends_the_date_only_when_time_sensitive() -> None:
    with tavily_server(pages=CORPUS) as srv:
        provider = tavily(srv.url)
        current = provider.search("France election results", time_sensitive=True)
        plain = provider.search("France election results")
        again = provider.search("news of 2026-11-22", time_sensitive=True)
        sent = [r.json for r in srv.requests]
    assert sent[0]["query"] == "France election results 2026-11-22"
    assert sent[0]["topic"] == "news"
    assert current.query == "France election results 2026-11-22"
    assert sent[1]["query"] == "France election results"
    assert sent[1]["topic"] == "general"
    assert plain.query == "France election results"
    assert sent[2]["query"] == "news of 2026-11-22"  # already dated: not twice
    assert again.query == "news of 2026-11-22"


def test_tavily_default_date_is_todays() -> None:
    with tavily_server(pages=CORPUS) as srv:
        config = SearchConfig(
            provider="tavily", tavily_api_key=DEFAULT_TAVILY_KEY, tavily_base_url=srv.url
        )
        TavilyProvider(config).search("latest", time_sensitive=True)
        query = srv.requests[-1].json["query"]
    assert query.endswith(datetime.now(UTC).date().isoformat())


def test_tavily_rate_limit_honours_retry_after_then_succeeds() -> None:
    with tavily_server(pages=CORPUS, script=[Step.rate_limited(retry_after=1)]) as srv:
        started = time.monotonic()
        response = tavily(srv.url).search("capital of France")
        elapsed = time.monotonic() - started
        gap = srv.times[1] - srv.times[0]
    assert response.results[0].url == "https://example.org/paris"
    # The one second asked for, not the 10 ms backoff (upper bounds leave room for a busy
    # machine; the server-side gap carries scheduling jitter).
    assert 1.0 <= elapsed < 3.0
    assert 0.8 <= gap < 3.0


def test_tavily_retry_after_as_http_date_is_honoured() -> None:
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=2), usegmt=True)
    with tavily_server(pages=CORPUS, script=[Step.rate_limited(retry_after=when)]) as srv:
        started = time.monotonic()
        tavily(srv.url).search("capital of France")
        elapsed = time.monotonic() - started
    assert 0.9 <= elapsed < 3.5  # HTTP dates have whole seconds


def test_tavily_rate_limited_forever_raises() -> None:
    with tavily_server(script=[Step.rate_limited(retry_after=0.05)] * 10) as srv:
        with pytest.raises(SearchRateLimited) as info:
            tavily(srv.url, max_retries=2).search("anything")
        assert len(srv.requests) == 3
    assert info.value.retry_after_s == pytest.approx(0.05)


def test_tavily_retry_after_above_the_cap_fails_at_once() -> None:
    with tavily_server(script=[Step.rate_limited(retry_after=3600)]) as srv:
        started = time.monotonic()
        with pytest.raises(SearchRateLimited, match="cap"):
            tavily(srv.url, retry_after_cap_s=10).search("anything")
        assert time.monotonic() - started < 3  # not the hour asked for
        assert len(srv.requests) == 1


def test_tavily_hang_times_out_fast() -> None:
    with tavily_server(script=[Step.hang(30)] * 3) as srv:
        started = time.monotonic()
        with pytest.raises(SearchTimeout):
            tavily(srv.url, timeout_s=0.25, max_retries=1).search("anything")
        elapsed = time.monotonic() - started
        assert len(srv.requests) == 2
    assert elapsed < 3  # two 0.25 s attempts, not the 30 s hang


def test_tavily_malformed_json_is_a_bad_response() -> None:
    with tavily_server(script=[Step.malformed()]) as srv, pytest.raises(SearchBadResponse):
        tavily(srv.url).search("anything")


@pytest.mark.parametrize(
    "body",
    [{"query": "q"}, {"results": "nope"}, [1, 2, 3], {"results": None}],
    ids=["no-results", "results-not-list", "not-an-object", "results-null"],
)
def test_tavily_missing_fields_are_a_bad_response(body: Any) -> None:
    with tavily_server(script=[Step.reply(body)]) as srv, pytest.raises(SearchBadResponse):
        tavily(srv.url).search("anything")


def test_tavily_skips_odd_results_but_keeps_good_ones() -> None:
    results = [
        {"title": "no url"},
        "a string",
        {"url": "javascript:alert(1)", "title": "bad scheme"},
        {"url": "https://ok.example/a", "title": "OK", "score": "high",
         "published_date": "Sun, 22 Nov 2026 10:00:00 GMT"},
    ]  # fmt: skip
    with tavily_server(results=results) as srv:
        response = tavily(srv.url).search("anything")
    assert len(response.results) == 1
    only = response.results[0]
    assert (only.url, only.title, only.score) == ("https://ok.example/a", "OK", None)
    assert only.published_date == "2026-11-22T10:00:00+00:00"


def test_tavily_server_errors_are_retried() -> None:
    with tavily_server(pages=CORPUS, script=[Step.server_error(), Step.server_error(502)]) as srv:
        response = tavily(srv.url, max_retries=2).search("capital of France")
        assert len(srv.requests) == 3
    assert response.results


def test_tavily_server_errors_past_the_retries_are_unavailable() -> None:
    with tavily_server(script=[Step.server_error()] * 5) as srv:
        with pytest.raises(SearchUnavailable, match="500"):
            tavily(srv.url, max_retries=1).search("anything")
        assert len(srv.requests) == 2


def test_tavily_wrong_key_is_an_auth_error_without_retries() -> None:
    with tavily_server(api_key="tvly-right") as srv:
        with pytest.raises(SearchAuthError, match="401"):
            tavily(srv.url, tavily_api_key="tvly-wrong").search("anything")
        assert len(srv.requests) == 1
        assert srv.requests[0].headers["authorization"] == "Bearer tvly-wrong"


def test_tavily_empty_query_is_refused_before_sending() -> None:
    with tavily_server() as srv:
        with pytest.raises(InvalidInput):
            tavily(srv.url).search("   ")
        assert srv.requests == []


def test_tavily_fetch_uses_extract() -> None:
    url = "https://example.org/paris"
    with tavily_server(pages=CORPUS) as srv:
        page = tavily(srv.url).fetch(url)
        sent = srv.requests[-1]
    assert sent.path == "/extract"
    assert sent.json["urls"] == [url]
    assert sent.headers["authorization"] == f"Bearer {DEFAULT_TAVILY_KEY}"
    assert page.url == url
    assert page.text == CORPUS[url]


def test_tavily_fetch_falls_back_to_the_page_when_extract_fails() -> None:
    with tavily_server(pages=CORPUS) as api, page_server() as pages:
        provider = tavily(api.url)
        failed = provider.fetch(f"{pages.url}/article")  # not in Tavily's pages
        api.script(Step.server_error(), Step.server_error(), Step.server_error())
        errored = provider.fetch(f"{pages.url}/article")
        assert [r.path for r in api.requests] == ["/extract"] * 4
        assert len(pages.requests) == 2
    for page in (failed, errored):
        assert page.title == ARTICLE_TITLE
        assert ARTICLE_FACTS[1] in page.text


def test_tavily_extract_is_cut_at_the_size_limit() -> None:
    url = "https://example.org/long"
    with tavily_server(pages={url: "word " * 1000}) as srv:
        page = tavily(srv.url, fetch_max_bytes=1024).fetch(url)
    assert page.truncated
    assert len(page.text.encode()) <= 1024


def test_tavily_min_interval_spaces_requests() -> None:
    with tavily_server(pages=CORPUS) as srv:
        provider = tavily(srv.url, min_interval_s=0.25)
        started = time.monotonic()
        for _ in range(3):
            provider.search("capital")
        elapsed = time.monotonic() - started
        times = srv.times
    assert elapsed >= 0.5  # two waits of 0.25 s
    assert min(times[1] - times[0], times[2] - times[1]) >= 0.15  # arrival jitter allowed


# SearXNG --------------------------------------------------------------------------------


def test_searxng_search_parses_results_and_answers() -> None:
    with searxng_server(pages=CORPUS, answers=["Paris"]) as srv:
        response = searxng(srv.url).search("capital of France", max_results=1)
        sent = srv.requests[-1]
    assert sent.method == "GET"
    assert sent.path == "/search"
    assert sent.query["q"] == ["capital of France"]
    assert sent.query["format"] == ["json"]
    assert "time_range" not in sent.query
    assert response.provider == "searxng"
    assert response.answer == "Paris"
    assert [r.url for r in response.results] == ["https://example.org/paris"]


def test_searxng_time_sensitive_sets_time_range() -> None:
    with searxng_server(pages=CORPUS) as srv:
        response = searxng(srv.url, searxng_time_range="week").search(
            "France news", time_sensitive=True
        )
        sent = srv.requests[-1]
    assert sent.query["time_range"] == ["week"]
    assert sent.query["q"] == ["France news"]
    assert response.query == "France news"


def test_searxng_dates_scores_duplicates_and_dict_answers() -> None:
    results = [
        {"url": "https://a.example/", "title": "A", "content": "a", "engine": "bing",
         "publishedDate": "2026-11-20T08:30:00", "score": 2.5},
        {"url": "https://a.example/", "title": "A again", "engine": "brave"},
        {"url": "https://b.example/", "title": "B", "engine": "ddg", "publishedDate": None},
    ]  # fmt: skip
    answers = [{"answer": "From a dict", "url": "https://a.example/"}]
    with searxng_server(results=results, answers=answers) as srv:
        response = searxng(srv.url).search("anything", max_results=5)
    assert [r.url for r in response.results] == ["https://a.example/", "https://b.example/"]
    assert response.results[0].published_date == "2026-11-20T08:30:00"
    assert response.results[0].score == 2.5
    assert response.results[1].published_date is None
    assert response.answer == "From a dict"


def test_searxng_without_json_format_is_an_auth_error_with_a_hint() -> None:
    forbidden = Step(status=403, body=b"Forbidden", content_type="text/html")
    with (
        searxng_server(script=[forbidden]) as srv,
        pytest.raises(SearchAuthError, match=r"settings\.yml"),
    ):
        searxng(srv.url).search("anything")


def test_searxng_malformed_and_rate_limited() -> None:
    with searxng_server(pages=CORPUS, script=[Step.malformed()]) as srv:
        provider = searxng(srv.url)
        with pytest.raises(SearchBadResponse):
            provider.search("capital")
        srv.script(Step.rate_limited(retry_after=0.3))
        started = time.monotonic()
        assert provider.search("capital").results
        assert time.monotonic() - started >= 0.3
        assert len(srv.requests) == 3


def test_searxng_fetch_reads_the_page() -> None:
    with searxng_server() as srv, page_server() as pages:
        page = searxng(srv.url).fetch(f"{pages.url}/article")
        assert srv.requests == []
    assert page.title == ARTICLE_TITLE


# Config ---------------------------------------------------------------------------------


def test_build_provider_by_name() -> None:
    assert build_provider(None) is None
    assert build_provider({"provider": "none"}) is None
    tav = build_provider({"provider": "tavily", "tavily_api_key": "tvly-x"})
    sx = build_provider({"provider": "searxng", "searxng_url": "http://127.0.0.1:9"})
    assert isinstance(tav, TavilyProvider)
    assert isinstance(sx, SearxngProvider)
    assert isinstance(tav, SearchProvider)
    assert isinstance(sx, SearchProvider)


def test_tavily_without_a_key_is_a_clear_config_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TAVILY_API_KEY", raising=False)
    with pytest.raises(ConfigError, match="TAVILY_API_KEY"):
        build_provider({"provider": "tavily"})
    monkeypatch.setenv("TAVILY_API_KEY", "tvly-env")
    provider = build_provider({"provider": "tavily"})
    assert isinstance(provider, TavilyProvider)
    assert provider.http.client.headers["authorization"] == "Bearer tvly-env"


def test_searxng_without_url_and_bad_values_are_config_errors() -> None:
    with pytest.raises(ConfigError, match="searxng_url"):
        build_provider({"provider": "searxng"})
    with pytest.raises(ConfigError, match="invalid search configuration"):
        parse_search_config({"provider": "bing"})
    with pytest.raises(ConfigError):
        parse_search_config({"confidence_threshold": 1.5})


def test_config_defaults_and_secret_key() -> None:
    config = SearchConfig(provider="tavily", tavily_api_key="tvly-secret")
    assert config.tavily_base_url == "https://api.tavily.com"
    assert (config.max_results, config.confidence_threshold) == (5, 0.8)
    assert (config.max_iterations, config.pages_per_iteration) == (5, 3)
    assert config.fetch_max_bytes == 2 * 1024 * 1024
    assert "tvly-secret" not in repr(config)
    assert "tvly-secret" not in config.model_dump_json()


def test_missing_extra_is_reported_with_the_pip_line(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    from agentctx.errors import MissingExtra
    from agentctx.search import config as config_module
    from agentctx.search.fetch import html_to_text

    monkeypatch.setattr(config_module, "SEARCH_EXTRA", (("agentctx_absent_mod", "trafilatura"),))
    with pytest.raises(MissingExtra, match=r"agentctx\[search\]"):
        build_provider({"provider": "searxng", "searxng_url": "http://127.0.0.1:9"})
    monkeypatch.setitem(sys.modules, "trafilatura", None)  # as if not installed
    with pytest.raises(MissingExtra, match="trafilatura"):
        html_to_text("<p>x</p>")
