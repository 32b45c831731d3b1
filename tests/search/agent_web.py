"""A small local web for the search agent's tests: several page servers (each its own
site, by port) and the corpus a Tavily or SearXNG test server searches over."""

from __future__ import annotations

import contextlib
import html
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from agentctx import ContextEngine
from agentctx.search.config import SearchConfig
from search.servers import TestServer, page_server

QUESTION = "When was the Skerryvore lighthouse automated?"

# Pages that answer QUESTION: each site states every key term, in different words.
GOOD = {
    "/skerryvore": (
        "The Skerryvore lighthouse stands on a reef south-west of Tiree. "
        "The Skerryvore lighthouse was automated in 1994, when the last keepers left. "
        "PAGE_ONLY_MARKER_ALPHA: the granite was cut on Mull."
    ),
    "/history": (
        "A short history of Scottish lights. "
        "Skerryvore lighthouse was finally automated in 1994 by the Northern Lighthouse Board. "
        "PAGE_ONLY_MARKER_BETA: keepers worked four-week shifts."
    ),
    "/keepers": (
        "Life of the keepers on the rock. "
        "After a fire in 1954, the Skerryvore lighthouse was restored and later automated "
        "in 1994. PAGE_ONLY_MARKER_GAMMA: the log survives."
    ),
}
# Pages that share no key term with QUESTION.
IRRELEVANT = {
    "/cats": "Cats sleep for most of the day. They are popular pets in many homes.",
    "/bread": "Sourdough bread needs a starter, flour, water and salt. Bake it hot.",
    "/chess": "Chess openings such as the Sicilian Defence reward careful study.",
}


def page_html(title: str, text: str) -> str:
    """``text`` as a simple article page."""
    paragraphs = "".join(f"<p>{html.escape(part)}.</p>" for part in text.split(". ") if part)
    return (
        f"<html><head><title>{html.escape(title)}</title></head><body><article>"
        f"<h1>{html.escape(title)}</h1>{paragraphs}</article></body></html>"
    )


@dataclass
class Web:
    """Running page servers and the corpus (url -> text) they serve."""

    servers: list[TestServer]
    corpus: dict[str, str]

    def url(self, site: int, path: str) -> str:
        return f"{self.servers[site].url}{path}"

    def results(self, paths: dict[str, str], *, dated: bool = False) -> list[dict[str, Any]]:
        """Search hits for every page of ``paths`` on every site (Tavily's format)."""
        hits = []
        for url, text in self.corpus.items():
            if any(url.endswith(path) for path in paths):
                hit = {"url": url, "title": text.split(".")[0], "content": text[:60], "score": 0.9}
                if dated:
                    hit["published_date"] = "2025-03-01"
                hits.append(hit)
        return hits


@contextlib.contextmanager
def local_web(sites: list[dict[str, str]]) -> Iterator[Web]:
    """One page server per entry of ``sites`` (path -> text), each its own site."""
    with contextlib.ExitStack() as stack:
        servers = [
            stack.enter_context(
                page_server({path: page_html(path.strip("/"), text) for path, text in site.items()})
            )
            for site in sites
        ]
        corpus = {
            f"{server.url}{path}": text
            for server, site in zip(servers, sites, strict=True)
            for path, text in site.items()
        }
        yield Web(servers, corpus)


def tavily_config(url: str, api_key: str, **overrides: Any) -> SearchConfig:
    """A Tavily configuration for a local server: no retries, short timeouts."""
    values: dict[str, Any] = {
        "provider": "tavily",
        "tavily_api_key": api_key,
        "tavily_base_url": url,
        "max_retries": 0,
        "timeout_s": 2.0,
        "backoff_s": 0.0,
        "retry_after_cap_s": 0.5,
        **overrides,
    }
    return SearchConfig(**values)


def searxng_config(url: str, **overrides: Any) -> SearchConfig:
    values: dict[str, Any] = {
        "provider": "searxng",
        "searxng_url": url,
        "max_retries": 0,
        "timeout_s": 2.0,
        "backoff_s": 0.0,
        **overrides,
    }
    return SearchConfig(**values)


def make_engine(db_url: str, home: Path, **overrides: Any) -> ContextEngine:
    """An engine for search tests: hashing embeddings (no model to load) and, unless
    overridden, no PII redaction (the local servers' 127.0.0.1 URLs would be redacted as
    IP addresses in what is stored, which the tests compare with what was sent)."""
    values: dict[str, Any] = {
        "embeddings": {"provider": "hashing"},
        "redaction": {"enabled": False},
        **overrides,
    }
    return ContextEngine(url=db_url, home=home, **values)
