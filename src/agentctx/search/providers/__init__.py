"""Web search providers: Tavily (hosted API) and SearXNG (self-hosted metasearch)."""

from agentctx.search.providers.searxng import SearxngProvider
from agentctx.search.providers.tavily import TavilyProvider

__all__ = ["SearxngProvider", "TavilyProvider"]
