"""Tavily's search API (https://docs.tavily.com): ``POST /search`` and ``POST /extract``.

The key travels as ``Authorization: Bearer <key>``. A time-sensitive query gets today's
date appended (``"… 2026-11-22"``, unless the query already names it) and Tavily's
``news`` topic, so results about "the latest release" are about this week's, not a
cached year-old page. :meth:`TavilyProvider.fetch` asks ``/extract`` for the page text
and, when Tavily cannot extract it (or fails), fetches the page itself.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from datetime import UTC, date, datetime

from agentctx.errors import InvalidInput
from agentctx.search.config import SearchConfig
from agentctx.search.errors import SearchAuthError, SearchError
from agentctx.search.fetch import PageFetcher
from agentctx.search.http import HttpClient
from agentctx.search.models import PageContent, SearchResponse, SearchResult
from agentctx.search.providers.common import result_list, to_result

#: Tavily's largest ``max_results``.
TAVILY_MAX_RESULTS = 20


def _today() -> date:
    return datetime.now(UTC).date()


class TavilyProvider:
    """Search and page extraction through Tavily; see the module doc.

    ``today`` gives the date appended to time-sensitive queries (UTC by default;
    injectable for tests). ``fetcher`` is the fallback for pages ``/extract`` fails on.
    Errors are the typed :mod:`agentctx.search.errors`, per :mod:`agentctx.search.http`.
    """

    name = "tavily"

    def __init__(
        self,
        config: SearchConfig,
        *,
        today: Callable[[], date] = _today,
        fetcher: PageFetcher | None = None,
        http: HttpClient | None = None,
    ) -> None:
        key = config.api_key()
        if key is None:
            raise SearchAuthError("tavily needs an API key (tavily_api_key or $TAVILY_API_KEY)")
        self.config = config
        self._base = config.tavily_base_url.rstrip("/")
        self._today = today
        self.http = http or HttpClient(
            "tavily",
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            backoff_s=config.backoff_s,
            retry_after_cap_s=config.retry_after_cap_s,
            min_interval_s=config.min_interval_s,
            headers={"Authorization": f"Bearer {key}"},
        )
        self.fetcher = fetcher or PageFetcher.from_config(config)

    def close(self) -> None:
        self.http.close()
        self.fetcher.close()

    def query_for(self, query: str, *, time_sensitive: bool) -> str:
        """The query as sent: today's date appended when time-sensitive."""
        query = " ".join(query.split())
        if not query:
            raise InvalidInput("the search query is empty")
        if time_sensitive:
            today = self._today().isoformat()
            if today not in query:
                query = f"{query} {today}"
        return query

    def search(
        self, query: str, *, max_results: int = 5, time_sensitive: bool = False
    ) -> SearchResponse:
        """Search with Tavily; ``time_sensitive`` appends the date and uses topic news."""
        sent = self.query_for(query, time_sensitive=time_sensitive)
        limit = max(1, min(max_results, TAVILY_MAX_RESULTS))
        body = {
            "query": sent,
            "max_results": limit,
            "search_depth": self.config.tavily_search_depth,
            "topic": "news" if time_sensitive else "general",
            "include_answer": True,
            "include_raw_content": False,
            "include_images": False,
        }
        started = time.monotonic()
        answer = self.http.json("POST", f"{self._base}/search", body=body, what="search")
        results: list[SearchResult] = []
        for item in result_list(answer, "tavily"):
            result = to_result(item, date_key="published_date")
            if result is not None:
                results.append(result)
        short = answer.get("answer")
        return SearchResponse(
            provider=self.name,
            query=sent,
            results=tuple(results[:limit]),
            answer=short.strip() if isinstance(short, str) and short.strip() else None,
            elapsed_ms=(time.monotonic() - started) * 1000,
        )

    def fetch(self, url: str) -> PageContent:
        """The page text from ``/extract``; the plain page fetch when Tavily cannot."""
        try:
            page = self._extract(url)
        except SearchError:
            page = None
        return page if page is not None else self.fetcher.fetch(url)

    def _extract(self, url: str) -> PageContent | None:
        answer = self.http.json(
            "POST",
            f"{self._base}/extract",
            body={"urls": [url], "extract_depth": "basic", "format": "text"},
            what="extract",
        )
        for item in result_list(answer, "tavily"):
            if not isinstance(item, dict):
                continue
            text = item.get("raw_content")
            if not isinstance(text, str) or not text.strip():
                continue
            raw = text.encode()
            truncated = len(raw) > self.config.fetch_max_bytes
            if truncated:
                text = raw[: self.config.fetch_max_bytes].decode(errors="ignore")
            return PageContent(
                url=str(item.get("url") or url),
                title=str(item.get("title") or ""),
                text=text.strip(),
                content_type="text/plain",
                truncated=truncated,
                fetched_at=datetime.now(UTC),
            )
        return None
