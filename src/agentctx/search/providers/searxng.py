"""SearXNG's JSON API (``GET /search?q=…&format=json``), for a self-hosted instance.

The instance must have the ``json`` format enabled (``search.formats`` in its
settings.yml); otherwise it answers 403, reported as SearchAuthError with that hint.
A time-sensitive query gets SearXNG's ``time_range`` (``searxng_time_range``, default
month) instead of a date in the text: SearXNG passes it to every engine that supports it.
Pages are fetched directly (SearXNG has no extract API).
"""

from __future__ import annotations

import time

from agentctx.errors import ConfigError, InvalidInput
from agentctx.search.config import SearchConfig
from agentctx.search.errors import SearchAuthError
from agentctx.search.fetch import PageFetcher
from agentctx.search.http import HttpClient
from agentctx.search.models import PageContent, SearchResponse, SearchResult
from agentctx.search.providers.common import result_list, to_result


def _answer(value: object) -> str | None:
    """SearXNG's first answer: a string (older versions) or ``{"answer": ...}``."""
    if not isinstance(value, list):
        return None
    for item in value:
        text = item.get("answer") if isinstance(item, dict) else item
        if isinstance(text, str) and text.strip():
            return text.strip()
    return None


class SearxngProvider:
    """Search through a SearXNG instance; see the module doc."""

    name = "searxng"

    def __init__(
        self,
        config: SearchConfig,
        *,
        fetcher: PageFetcher | None = None,
        http: HttpClient | None = None,
    ) -> None:
        if not config.searxng_url:
            raise ConfigError("search provider 'searxng' needs searxng_url")
        self.config = config
        self._base = config.searxng_url.rstrip("/")
        self.http = http or HttpClient(
            "searxng",
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            backoff_s=config.backoff_s,
            retry_after_cap_s=config.retry_after_cap_s,
            min_interval_s=config.min_interval_s,
            headers={"Accept": "application/json"},
        )
        self.fetcher = fetcher or PageFetcher.from_config(config)

    def close(self) -> None:
        self.http.close()
        self.fetcher.close()

    def search(
        self, query: str, *, max_results: int = 5, time_sensitive: bool = False
    ) -> SearchResponse:
        """Search; ``time_sensitive`` restricts results to ``searxng_time_range``."""
        sent = " ".join(query.split())
        if not sent:
            raise InvalidInput("the search query is empty")
        params: dict[str, str | int] = {"q": sent, "format": "json", "pageno": 1}
        if time_sensitive:
            params["time_range"] = self.config.searxng_time_range
        started = time.monotonic()
        try:
            answer = self.http.json("GET", f"{self._base}/search", params=params, what="search")
        except SearchAuthError as exc:
            raise SearchAuthError(
                f"{exc} (is the json format enabled in the instance's settings.yml, "
                "search.formats?)"
            ) from exc
        results: list[SearchResult] = []
        seen: set[str] = set()
        for item in result_list(answer, "searxng"):
            result = to_result(item, date_key="publishedDate")
            if result is not None and result.url not in seen:
                seen.add(result.url)
                results.append(result)
        return SearchResponse(
            provider=self.name,
            query=sent,
            results=tuple(results[: max(1, max_results)]),
            answer=_answer(answer.get("answers")),
            elapsed_ms=(time.monotonic() - started) * 1000,
        )

    def fetch(self, url: str) -> PageContent:
        """The page text, fetched directly."""
        return self.fetcher.fetch(url)
