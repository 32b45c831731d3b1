"""Which web search provider the search agent uses, how it is reached, and the agent's knobs.

With provider ``none`` (the default) :func:`build_provider` returns None: no search, no
network. In the environment the whole block is one JSON value, like every nested setting::

    AGENTCTX_SEARCH='{"provider": "searxng", "searxng_url": "http://localhost:8888"}'

The Tavily key is a secret: it never appears in ``repr``, ``str`` or a dump of the
configuration. When not given, ``$TAVILY_API_KEY`` is used.
"""

from __future__ import annotations

import importlib.util
import os
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from agentctx.errors import ConfigError

if TYPE_CHECKING:
    from agentctx.search.models import SearchProvider

SearchProviderName = Literal["none", "tavily", "searxng"]
TimeRange = Literal["day", "week", "month", "year"]

#: The environment variable read when ``tavily_api_key`` is not configured.
TAVILY_KEY_ENV = "TAVILY_API_KEY"


class SearchConfig(BaseModel):
    """The search provider, its HTTP behaviour, page fetching and the search agent's loop."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: SearchProviderName = Field(
        default="none", description="none (no web search), tavily, or searxng (self-hosted)."
    )
    tavily_api_key: SecretStr | None = Field(
        default=None, description="The Tavily key; default $TAVILY_API_KEY. Never shown."
    )
    tavily_base_url: str = Field(default="https://api.tavily.com", min_length=1)
    tavily_search_depth: Literal["basic", "advanced"] = "basic"
    searxng_url: str | None = Field(
        default=None,
        description="The SearXNG instance, e.g. http://localhost:8888 (JSON "
        "format enabled in its settings.yml).",
    )
    searxng_time_range: TimeRange = Field(
        default="month", description="The time_range SearXNG gets for time-sensitive queries."
    )
    timeout_s: float = Field(default=15.0, gt=0, le=600, description="Seconds per request.")
    max_retries: int = Field(
        default=2,
        ge=0,
        le=10,
        description="Retries of a request that failed with 429, 5xx, a timeout or a lost "
        "connection, with exponential backoff (Retry-After honoured up to the cap).",
    )
    backoff_s: float = Field(
        default=0.5, ge=0, le=60, description="First backoff; doubled on each retry."
    )
    retry_after_cap_s: float = Field(
        default=30.0,
        ge=0,
        le=3600,
        description="The longest Retry-After waited for; a longer one fails at once.",
    )
    min_interval_s: float = Field(
        default=0.0,
        ge=0,
        le=600,
        description="Client-side rate limit: the least time between two requests of one "
        "provider (also between its page fetches).",
    )
    fetch_max_bytes: int = Field(
        default=2 * 1024 * 1024,
        ge=1024,
        le=100 * 1024 * 1024,
        description="Bytes read of a page; the rest is cut and the page marked truncated.",
    )
    fetch_max_redirects: int = Field(default=5, ge=0, le=30)
    max_results: int = Field(default=5, ge=1, le=50, description="Results per search.")
    confidence_threshold: float = Field(
        default=0.8,
        ge=0,
        le=1,
        description="The search agent stops once its answer is at least this confident.",
    )
    max_iterations: int = Field(
        default=5, ge=1, le=50, description="The search agent's most search rounds."
    )
    pages_per_iteration: int = Field(
        default=3, ge=0, le=20, description="Pages the search agent reads per round."
    )

    def api_key(self) -> str | None:
        """The Tavily key: configured, else ``$TAVILY_API_KEY``, else None."""
        if self.tavily_api_key is not None and self.tavily_api_key.get_secret_value():
            return self.tavily_api_key.get_secret_value()
        return os.environ.get(TAVILY_KEY_ENV) or None


#: What the ``search`` extra installs: (import name, distribution name).
SEARCH_EXTRA = (
    ("httpx", "httpx"),
    ("trafilatura", "trafilatura"),
    ("lxml_html_clean", "lxml_html_clean"),
)


def require_search_extra() -> None:
    """Raise MissingExtra unless the ``search`` extra is installed (nothing is imported)."""
    from agentctx.errors import MissingExtra  # noqa: PLC0415 - keep the module import light

    for module, package in SEARCH_EXTRA:
        if importlib.util.find_spec(module) is None:
            raise MissingExtra("search", package)


def parse_search_config(value: SearchConfig | dict[str, object] | None) -> SearchConfig:
    """A :class:`SearchConfig` from a mapping (YAML, settings); errors as ConfigError."""
    if isinstance(value, SearchConfig):
        return value
    try:
        return SearchConfig.model_validate(value or {})
    except ValidationError as exc:
        raise ConfigError(f"invalid search configuration: {exc}") from exc


def build_provider(config: SearchConfig | dict[str, object] | None) -> SearchProvider | None:
    """The provider ``config`` describes; None for provider ``none``.

    Nothing is sent over the network here. Raises ConfigError when the provider lacks
    what it needs (Tavily: a key; SearXNG: a URL), and MissingExtra when the ``search``
    extra (httpx, trafilatura) is not installed.
    """
    config = parse_search_config(config)
    if config.provider == "none":
        return None
    require_search_extra()
    if config.provider == "tavily":
        if config.api_key() is None:
            raise ConfigError(
                "search provider 'tavily' needs an API key: set search.tavily_api_key or "
                f"${TAVILY_KEY_ENV} (get one at https://app.tavily.com), or use provider "
                "'searxng' or 'none'"
            )
        from agentctx.search.providers.tavily import TavilyProvider  # noqa: PLC0415

        return TavilyProvider(config)
    if not config.searxng_url:
        raise ConfigError("search provider 'searxng' needs searxng_url, e.g. http://localhost:8888")
    from agentctx.search.providers.searxng import SearxngProvider  # noqa: PLC0415

    return SearxngProvider(config)
