"""PageFetcher against a real local page server: limits, types, redirects, extraction."""

from __future__ import annotations

import itertools
import threading
import time

import pytest

from agentctx.errors import InvalidInput
from agentctx.search.errors import (
    PageTooLarge,
    SearchBadResponse,
    SearchError,
    SearchRateLimited,
    SearchTimeout,
    SearchUnavailable,
)
from agentctx.search.fetch import PageFetcher, html_to_text
from agentctx.search.http import RateLimiter, parse_retry_after
from search.servers import (
    ARTICLE_FACTS,
    ARTICLE_HTML,
    ARTICLE_JUNK,
    ARTICLE_TITLE,
    HUGE_BYTES,
    PLAIN_TEXT,
    Page,
    Step,
    page_server,
)


def fetcher(**kwargs: object) -> PageFetcher:
    options: dict[str, object] = {"timeout_s": 2.0, "max_retries": 0, "backoff_s": 0.01}
    options.update(kwargs)
    return PageFetcher(**options)  # type: ignore[arg-type]


def test_article_keeps_the_text_and_drops_boilerplate() -> None:
    with page_server() as srv:
        page = fetcher().fetch(f"{srv.url}/article")
    assert page.title == ARTICLE_TITLE
    assert page.status == 200
    assert page.content_type == "text/html"
    assert not page.truncated
    for fact in ARTICLE_FACTS:
        assert fact in page.text
    for junk in ARTICLE_JUNK:
        assert junk not in page.text
    assert "<p>" not in page.text


def test_html_to_text_falls_back_to_visible_text_on_tiny_pages() -> None:
    text, title = html_to_text(
        "<html><head><title>T</title><script>var HIDDEN=1;</script></head>"
        "<body><p>Only line.</p></body></html>"
    )
    assert title == "T"
    assert "Only line." in text
    assert "HIDDEN" not in text


def test_plain_text_is_returned_as_is() -> None:
    with page_server() as srv:
        page = fetcher().fetch(f"{srv.url}/plain")
    assert page.content_type == "text/plain"
    assert page.text == PLAIN_TEXT.strip()
    assert page.title == ""


def test_huge_page_is_cut_at_the_limit_and_marked_truncated() -> None:
    limit = 256 * 1024
    with page_server() as srv:
        started = time.monotonic()
        page = fetcher(max_bytes=limit).fetch(f"{srv.url}/huge")
        elapsed = time.monotonic() - started
    assert page.truncated
    assert "All work and no play" in page.text
    assert page.title == "Huge"
    assert 20 * limit < HUGE_BYTES  # the page really was much larger than what was read
    assert elapsed < 5


def test_page_exactly_at_the_limit_is_not_truncated() -> None:
    body = "<html><body><p>" + "x" * 2000 + "</p></body></html>"
    with page_server({"/exact": body}) as srv:
        page = fetcher(max_bytes=len(body)).fetch(f"{srv.url}/exact")
    assert not page.truncated
    assert "x" * 2000 in page.text


def test_page_without_text_in_the_limit_is_too_large() -> None:
    body = "<html><head><script>" + "var a = 1;\n" * 20000 + "</script></head><body>late</body>"
    with page_server({"/scripty": body}) as srv, pytest.raises(PageTooLarge):
        fetcher(max_bytes=4096).fetch(f"{srv.url}/scripty")


def test_binary_content_is_refused_without_reading_it() -> None:
    with page_server() as srv, pytest.raises(SearchBadResponse, match="image/png"):
        fetcher().fetch(f"{srv.url}/binary")


def test_xhtml_and_charset_are_honoured() -> None:
    body = "<html><head><title>Caf\u00e9</title></head><body><p>Cr\u00e8me br\u00fbl\u00e9e " * 3
    pages = {
        "/latin1": Page(body.encode("latin-1"), content_type="text/html; charset=iso-8859-1"),
        "/xhtml": Page(body.encode(), content_type="application/xhtml+xml"),
    }
    with page_server(pages) as srv:
        latin = fetcher().fetch(f"{srv.url}/latin1")
        xhtml = fetcher().fetch(f"{srv.url}/xhtml")
    assert "Cr\u00e8me br\u00fbl\u00e9e" in latin.text
    assert latin.title == "Caf\u00e9"
    assert xhtml.content_type == "application/xhtml+xml"
    assert "Cr\u00e8me" in xhtml.text


def test_redirects_are_followed_up_to_the_limit() -> None:
    with page_server() as srv:
        page = fetcher(max_redirects=3).fetch(f"{srv.url}/redirect/3")
        assert page.url.endswith("/article")
        assert ARTICLE_FACTS[0] in page.text
        with pytest.raises(SearchBadResponse, match="redirects"):
            fetcher(max_redirects=3).fetch(f"{srv.url}/redirect/4")


def test_not_found_is_a_search_error() -> None:
    with page_server() as srv, pytest.raises(SearchError, match="404"):
        fetcher().fetch(f"{srv.url}/missing")


def test_slow_page_times_out_fast() -> None:
    with page_server() as srv:
        started = time.monotonic()
        with pytest.raises(SearchTimeout):
            fetcher(timeout_s=0.3).fetch(f"{srv.url}/slow")
        assert time.monotonic() - started < 3  # the 0.3 s timeout, not the 5 s page


def test_server_errors_are_retried_then_succeed() -> None:
    with page_server(script=[Step.server_error(503), Step.server_error()]) as srv:
        page = fetcher(max_retries=2).fetch(f"{srv.url}/article")
        assert len(srv.requests) == 3
    assert page.title == ARTICLE_TITLE


def test_server_errors_past_the_retries_are_unavailable() -> None:
    with page_server(script=[Step.server_error()] * 3) as srv:
        with pytest.raises(SearchUnavailable):
            fetcher(max_retries=1).fetch(f"{srv.url}/article")
        assert len(srv.requests) == 2


def test_rate_limited_page_honours_retry_after() -> None:
    with page_server(script=[Step.rate_limited(retry_after=0.4)]) as srv:
        started = time.monotonic()
        page = fetcher(max_retries=1).fetch(f"{srv.url}/article")
        elapsed = time.monotonic() - started
        assert len(srv.requests) == 2
    assert page.title == ARTICLE_TITLE
    assert elapsed >= 0.4


def test_unreachable_host_is_unavailable() -> None:
    with page_server() as srv:
        url = f"{srv.url}/article"
    with pytest.raises(SearchUnavailable):  # the server is closed: connection refused
        fetcher(max_retries=1).fetch(url)


def test_non_http_urls_are_refused() -> None:
    for url in ("file:///etc/passwd", "ftp://example.org/x", "not a url"):
        with pytest.raises(InvalidInput):
            fetcher().fetch(url)


def test_min_interval_spaces_requests_across_threads() -> None:
    with page_server() as srv:
        shared = fetcher(min_interval_s=0.25)
        threads = [
            threading.Thread(target=shared.fetch, args=(f"{srv.url}/plain",)) for _ in range(4)
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        times = sorted(srv.times)
    assert len(times) == 4
    gaps = [b - a for a, b in itertools.pairwise(times)]
    # Arrival times carry the scheduling jitter of a busy machine; the spacing is 0.25 s.
    assert min(gaps) >= 0.15
    assert times[-1] - times[0] >= 0.7


def test_rate_limiter_without_interval_never_sleeps() -> None:
    slept: list[float] = []
    limiter = RateLimiter(0.0, sleep=slept.append)
    for _ in range(5):
        limiter.wait()
    assert slept == []


def test_parse_retry_after_seconds_and_dates() -> None:
    from datetime import UTC, datetime

    now = datetime(2026, 11, 22, 12, 0, 0, tzinfo=UTC)
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after("0.5") == 0.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after("Sun, 22 Nov 2026 12:00:07 GMT", now=now) == 7.0
    assert parse_retry_after("Sun, 22 Nov 2026 11:00:00 GMT", now=now) == 0.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after("nan") is None
    assert parse_retry_after(None) is None


def test_rate_limited_page_past_the_cap_fails_at_once() -> None:
    with page_server(script=[Step.rate_limited(retry_after=120)]) as srv:
        started = time.monotonic()
        with pytest.raises(SearchRateLimited) as info:
            fetcher(max_retries=3, retry_after_cap_s=5).fetch(f"{srv.url}/article")
        assert time.monotonic() - started < 3  # not the 120 s asked for
        assert len(srv.requests) == 1
    assert info.value.retry_after_s == 120


def test_article_html_is_the_served_page() -> None:
    # Guards the fixture itself: the junk markers really are in what the server sends.
    for junk in ARTICLE_JUNK:
        assert junk in ARTICLE_HTML
