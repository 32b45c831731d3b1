"""What search providers return: results of a query and the text of a fetched page."""

from __future__ import annotations

from datetime import datetime
from typing import Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field


class _Frozen(BaseModel):
    model_config = ConfigDict(frozen=True)


class SearchResult(_Frozen):
    """One hit of a web search."""

    url: str
    title: str = ""
    content: str = Field(default="", description="The snippet or extract the provider gave.")
    score: float | None = None
    published_date: str | None = Field(
        default=None, description="As the provider gave it (ISO date when it can be parsed)."
    )


class SearchResponse(_Frozen):
    """The answer of one search call."""

    provider: str
    query: str = Field(description="The query as sent (the date appended when time-sensitive).")
    results: tuple[SearchResult, ...] = ()
    answer: str | None = Field(default=None, description="A provider's own short answer.")
    elapsed_ms: float = 0.0


class PageContent(_Frozen):
    """A fetched page as text."""

    url: str
    title: str = ""
    text: str
    content_type: str = "text/html"
    status: int = 200
    truncated: bool = Field(default=False, description="The page was cut at the size limit.")
    fetched_at: datetime


@runtime_checkable
class SearchProvider(Protocol):
    """A web search service (Tavily, SearXNG, …)."""

    name: str

    def search(
        self, query: str, *, max_results: int = 5, time_sensitive: bool = False
    ) -> SearchResponse:
        """Search the web. ``time_sensitive``: the query asks about something current, so
        the provider may append today's date or restrict the time range."""
        ...

    def fetch(self, url: str) -> PageContent:
        """The readable text of one page (a provider's extract API, or a plain fetch)."""
        ...
