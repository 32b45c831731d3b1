"""Fetch one web page and turn it into readable text (no JavaScript is run).

:class:`PageFetcher` guarantees:

- At most ``max_bytes`` of the body are read: the body is streamed and the connection
  dropped at the limit, the text cut there and the page marked ``truncated``. A page
  that yields no readable text from its first ``max_bytes`` raises PageTooLarge.
- Only ``text/html``, ``application/xhtml+xml`` and ``text/plain`` are read; any other
  type (images, PDFs, archives) raises SearchBadResponse before its body is read.
- Redirects are followed up to ``max_redirects``; more raise SearchBadResponse.
- The whole fetch (every retry included) ends within about ``(max_retries + 1) *
  timeout_s``: each attempt has a wall-clock deadline, not only a per-read timeout,
  so a server dribbling bytes cannot hold it forever.

HTML becomes text with trafilatura (the ``search`` extra): it finds the main content of
a page and drops navigation, sidebars, footers, scripts and styles, which a plain
tag-stripper keeps. Its pure-Python dependencies install from wheels, and it is well
maintained and widely used for exactly this job.
"""

from __future__ import annotations

import codecs
import re
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import httpx

from agentctx.errors import InvalidInput, MissingExtra
from agentctx.search.errors import PageTooLarge, SearchBadResponse, SearchTimeout
from agentctx.search.http import HttpClient
from agentctx.search.models import PageContent

if TYPE_CHECKING:
    from agentctx.search.config import SearchConfig

TEXT_TYPES = frozenset({"text/html", "application/xhtml+xml", "text/plain"})
_HTML_TYPES = frozenset({"text/html", "application/xhtml+xml"})
_CHUNK = 64 * 1024
_META_CHARSET = re.compile(rb"""<meta[^>]+charset=["']?([A-Za-z0-9_.:-]+)""", re.IGNORECASE)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title>", re.IGNORECASE | re.DOTALL)
_SPACES = re.compile(r"[ \t\r\f\v]+")


def _trafilatura() -> Any:
    try:
        # Optional and slow to import; importing ``extract`` also fails when trafilatura's
        # own dependency lxml_html_clean is missing.
        import trafilatura  # noqa: PLC0415
        from trafilatura import extract  # noqa: F401, PLC0415
    except ImportError as exc:
        raise MissingExtra("search", "trafilatura") from exc
    return trafilatura


def html_to_text(html: str) -> tuple[str, str]:
    """The main text and the title of an HTML page (both may be empty)."""
    trafilatura = _trafilatura()
    text = trafilatura.extract(
        html, include_comments=False, include_tables=True, include_links=False, deduplicate=False
    )
    if not text:
        # No main content found (short or unusual pages): all visible text instead.
        text = trafilatura.html2txt(html) or ""
    title = ""
    try:
        meta = trafilatura.extract_metadata(html)
    except Exception:  # metadata is optional: the <title> regex below is the fallback
        meta = None
    if meta is not None and meta.title:
        title = str(meta.title)
    else:
        found = _TITLE.search(html)
        title = _SPACES.sub(" ", found.group(1)).strip() if found else ""
    return _tidy(str(text)), title


def _tidy(text: str) -> str:
    lines = (_SPACES.sub(" ", line).strip() for line in text.splitlines())
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def _charset(response: httpx.Response, head: bytes) -> str:
    declared = response.charset_encoding
    if not declared:
        found = _META_CHARSET.search(head[:4096])
        declared = found.group(1).decode("ascii") if found else None
    try:
        return codecs.lookup(declared or "utf-8").name
    except LookupError:  # a charset Python does not know: UTF-8 is the best guess
        return "utf-8"


class PageFetcher:
    """Fetches pages over plain HTTP(S) and extracts their text; see the module doc."""

    def __init__(
        self,
        *,
        max_bytes: int = 2 * 1024 * 1024,
        timeout_s: float = 15.0,
        max_retries: int = 1,
        max_redirects: int = 5,
        min_interval_s: float = 0.0,
        retry_after_cap_s: float = 10.0,
        backoff_s: float = 0.5,
        http: HttpClient | None = None,
    ) -> None:
        self.max_bytes = max_bytes
        self.timeout_s = timeout_s
        self.max_redirects = max_redirects
        self.http = http or HttpClient(
            "page fetch",
            timeout_s=timeout_s,
            max_retries=max_retries,
            backoff_s=backoff_s,
            retry_after_cap_s=retry_after_cap_s,
            min_interval_s=min_interval_s,
            max_redirects=max_redirects,
            headers={
                "Accept": "text/html,application/xhtml+xml,text/plain;q=0.9,*/*;q=0.1",
            },
        )

    @classmethod
    def from_config(cls, config: SearchConfig) -> PageFetcher:
        return cls(
            max_bytes=config.fetch_max_bytes,
            timeout_s=config.timeout_s,
            max_retries=config.max_retries,
            max_redirects=config.fetch_max_redirects,
            min_interval_s=config.min_interval_s,
            retry_after_cap_s=config.retry_after_cap_s,
            backoff_s=config.backoff_s,
        )

    def close(self) -> None:
        self.http.close()

    def fetch(self, url: str) -> PageContent:
        """The readable text of ``url``; see the module doc for the guarantees."""
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise InvalidInput(f"not an http(s) URL: {url!r}")

        def op(client: httpx.Client) -> PageContent:
            deadline = time.monotonic() + self.timeout_s
            with client.stream("GET", url, follow_redirects=True) as response:
                self.http.check(response)
                mime = response.headers.get("Content-Type", "").split(";")[0].strip().lower()
                if mime and mime not in TEXT_TYPES:
                    raise SearchBadResponse(
                        f"{url} is {mime}, not a text page (text/html, text/plain, "
                        "application/xhtml+xml)"
                    )
                chunks: list[bytes] = []
                size = 0
                truncated = False
                for chunk in response.iter_bytes(_CHUNK):
                    if time.monotonic() > deadline:
                        raise SearchTimeout(
                            f"{url} took longer than {self.timeout_s:g}s to download"
                        )
                    chunks.append(chunk)
                    size += len(chunk)
                    if size > self.max_bytes:
                        # Stop reading: leaving the block closes the connection.
                        truncated = True
                        break
                raw = b"".join(chunks)[: self.max_bytes]
                if not mime:
                    mime = "text/plain" if b"\x00" not in raw[:1024] else ""
                    if raw.lstrip()[:1] == b"<":
                        mime = "text/html"
                    if not mime:
                        raise SearchBadResponse(f"{url} has no content type and is binary")
                encoding = _charset(response, raw)
                final_url = str(response.url)
                status = response.status_code
            text_in = raw.decode(encoding, errors="replace" if not truncated else "ignore")
            if mime in _HTML_TYPES:
                text, title = html_to_text(text_in)
            else:
                text, title = _tidy(text_in), ""
            if truncated and not text:
                raise PageTooLarge(f"{url}: no readable text in its first {self.max_bytes} bytes")
            return PageContent(
                url=final_url,
                title=title,
                text=text,
                content_type=mime,
                status=status,
                truncated=truncated,
                fetched_at=datetime.now(UTC),
            )

        return self.http.run(op, what=f"fetch {url}")
