"""The search sub-agent (seed 000 Phase 4): web search providers, page fetching, and an
agent that researches a question in a session of its own and reports back with sources."""

from agentctx.search.config import SearchConfig, build_provider, parse_search_config
from agentctx.search.errors import (
    PageTooLarge,
    SearchAuthError,
    SearchBadResponse,
    SearchError,
    SearchRateLimited,
    SearchTimeout,
    SearchUnavailable,
)
from agentctx.search.models import PageContent, SearchProvider, SearchResponse, SearchResult

__all__ = [
    "PageContent",
    "PageTooLarge",
    "SearchAuthError",
    "SearchBadResponse",
    "SearchConfig",
    "SearchError",
    "SearchProvider",
    "SearchRateLimited",
    "SearchResponse",
    "SearchResult",
    "SearchTimeout",
    "SearchUnavailable",
    "build_provider",
    "parse_search_config",
]
