"""Real local HTTP servers speaking the wire formats of Tavily, SearXNG and plain web pages.

Each server runs on a free port in a thread, logs every request it receives, and can be
scripted to misbehave (rate limits, hangs, server errors, malformed JSON) one request at
a time. Import from any test module under ``tests``::

    from search.servers import Step, page_server, searxng_server, tavily_server

    with tavily_server(pages={"https://ex.org/a": "Paris is the capital of France."}) as srv:
        srv.script(Step.rate_limited(retry_after=1), Step.server_error())
        provider = TavilyProvider(SearchConfig(provider="tavily", tavily_api_key=srv.api_key,
                                               tavily_base_url=srv.url))
        provider.search("capital of France")
        srv.requests[-1].json["query"]             # what was sent
        srv.requests[-1].headers["authorization"]  # "Bearer tvly-test"

Servers
    ``tavily_server(api_key="tvly-test", pages=None, results=None, answer=None)``
        ``POST /search`` and ``POST /extract`` as Tavily documents them. The key must come
        as ``Authorization: Bearer <key>`` (or the legacy ``api_key`` body field), else 401
        ``{"detail": {"error": ...}}``. Without ``results`` the server is a tiny search
        engine over ``pages`` (url -> text): pages sharing words with the query, best first,
        each with a snippet and a score. ``results`` (a list of result dicts, or a callable
        taking the request body) overrides that. ``/extract`` returns ``raw_content`` for
        URLs in ``pages`` and lists the others under ``failed_results``.
    ``searxng_server(pages=None, results=None, answers=())``
        ``GET /search?q=...&format=json`` as SearXNG answers it (403 unless ``format=json``,
        as a SearXNG without the JSON format enabled does). Same corpus rules as above;
        ``results`` may be a callable taking the query parameters.
    ``page_server(pages=None)``
        Plain pages: ``pages`` maps a path to HTML text or a :class:`Page`. Built in:
        ``/article`` (:data:`ARTICLE_HTML`, with nav, script and footer around the article),
        ``/huge`` (an HTML page of :data:`HUGE_BYTES` bytes), ``/binary`` (a PNG),
        ``/plain`` (text/plain), ``/redirect/<n>`` (n redirects, then ``/article``),
        ``/slow`` (answers after 5 s); anything else is 404.

Every server object has ``url``, ``requests`` (a list of :class:`Recorded`: ``method``,
``path``, ``query``, ``headers`` lower-cased, ``body``, ``json``, ``time``),
``script(*steps)`` to queue :class:`Step` answers for the next API requests (page server:
any request), ``pending`` and ``close()``; it is a context manager. Hanging requests end
when the server closes, so a test never waits on them.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

DEFAULT_TAVILY_KEY = "tvly-test"

ARTICLE_TITLE = "The Lighthouse Keepers of Skerryvore"
ARTICLE_HTML = f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>{ARTICLE_TITLE}</title>
<script>window.trackingPixel = "NAV_SCRIPT_SHOULD_NOT_APPEAR";</script>
<style>body {{ font-family: serif; }} .STYLE_SHOULD_NOT_APPEAR {{}}</style>
</head>
<body>
<nav class="site-nav"><ul>
<li><a href="/">Home</a></li><li><a href="/news">MENU_LINK_SHOULD_NOT_APPEAR</a></li>
<li><a href="/about">About us</a></li></ul></nav>
<main>
<article>
<h1>{ARTICLE_TITLE}</h1>
<p class="byline">By Morag Campbell, 3 March 2026</p>
<p>The Skerryvore lighthouse stands on a reef twelve miles south-west of Tiree. Completed
in 1844 by Alan Stevenson, it rises 48 metres above the rocks and was for many years the
tallest lighthouse in Scotland. Its granite tower was cut on the Isle of Mull and shipped
out block by block.</p>
<p>The keepers lived in shifts of four weeks on the rock and two weeks ashore. They kept the
lamp burning from sunset to sunrise, wound the clockwork that turned the lens, and recorded
the weather every three hours in a log that survives in the National Records of Scotland.</p>
<p>In 1954 a fire gutted the interior of the tower. The light was restored in 1959 and
automated in 1994, when the last keepers left the reef.</p>
</article>
</main>
<aside class="sidebar"><h3>Related</h3><p>SIDEBAR_AD_SHOULD_NOT_APPEAR: buy a lamp today!</p>
</aside>
<footer><p>FOOTER_SHOULD_NOT_APPEAR Copyright 2026 Coastal Heritage Trust</p></footer>
<script>console.log("BODY_SCRIPT_SHOULD_NOT_APPEAR");</script>
</body>
</html>
"""
#: Sentences of the article a good extractor must keep.
ARTICLE_FACTS = (
    "twelve miles south-west of Tiree",
    "recorded the weather every three hours",
    "automated in 1994",
)
#: Markers of boilerplate a good extractor must drop.
ARTICLE_JUNK = (
    "NAV_SCRIPT_SHOULD_NOT_APPEAR",
    "BODY_SCRIPT_SHOULD_NOT_APPEAR",
    "STYLE_SHOULD_NOT_APPEAR",
    "MENU_LINK_SHOULD_NOT_APPEAR",
)
HUGE_BYTES = 6 * 1024 * 1024
PLAIN_TEXT = "Plain text page.\nSecond line of the plain text page.\n"
# The 8-byte PNG signature and a minimal IHDR: enough for anything sniffing the type.
PNG_BYTES = b"\x89PNG\r\n\x1a\n" + b"\x00\x00\x00\rIHDR" + bytes(200)


@dataclass
class Page:
    """One page of the page server."""

    body: bytes | str
    content_type: str = "text/html; charset=utf-8"
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


@dataclass
class Step:
    """One scripted answer, used instead of the server's normal behaviour for one request."""

    status: int = 200
    json: Any = None
    body: bytes | None = None
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_type: str = "application/json"

    @classmethod
    def reply(cls, value: Any) -> Step:
        """A 200 with this JSON body."""
        return cls(json=value)

    @classmethod
    def rate_limited(cls, retry_after: float | str | None = 1) -> Step:
        """429; ``retry_after`` is sent as the ``Retry-After`` header (seconds or an HTTP
        date string), or not at all when None."""
        headers = {} if retry_after is None else {"Retry-After": _fmt(retry_after)}
        return cls(status=429, json={"detail": {"error": "Rate limit exceeded"}}, headers=headers)

    @classmethod
    def server_error(cls, status: int = 500) -> Step:
        return cls(status=status, json={"detail": {"error": "Internal server error"}})

    @classmethod
    def unauthorized(cls, status: int = 401) -> Step:
        return cls(status=status, json={"detail": {"error": "Unauthorized: invalid API key."}})

    @classmethod
    def malformed(cls) -> Step:
        """A 200 whose body is not JSON at all."""
        return cls(body=b'{"results": [ {"url": "https://trunc', content_type="application/json")

    @classmethod
    def hang(cls, seconds: float = 30.0) -> Step:
        """Answer only after ``seconds`` (or when the server closes): a timeout for clients."""
        return cls(json={"results": []}, delay=seconds)


def _fmt(value: float | str) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


@dataclass
class Recorded:
    """A request the server received."""

    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    time: float

    @property
    def json(self) -> Any:
        """The body parsed as JSON (None when empty or not JSON)."""
        try:
            return json.loads(self.body) if self.body else None
        except ValueError:
            return None


@dataclass
class _Answer:
    status: int
    body: bytes
    content_type: str
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0


Handler = Callable[["TestServer", Recorded], _Answer]


@dataclass
class TestServer:
    """A running server: its URL, the requests it received and its script."""

    __test__ = False  # not a pytest test class

    url: str = ""
    api_key: str | None = None
    requests: list[Recorded] = field(default_factory=list)
    scripted_paths: frozenset[str] | None = None
    _script: deque[Step] = field(default_factory=deque)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _closed: threading.Event = field(default_factory=threading.Event)
    _close: Callable[[], None] = lambda: None

    def script(self, *steps: Step) -> None:
        """Queue answers, one per coming (API) request, in order."""
        with self._lock:
            self._script.extend(steps)

    @property
    def pending(self) -> int:
        """Scripted answers not yet used."""
        return len(self._script)

    @property
    def times(self) -> list[float]:
        """``time.monotonic()`` of each request, in arrival order."""
        return [r.time for r in self.requests]

    def close(self) -> None:
        self._closed.set()
        self._close()

    def __enter__(self) -> TestServer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _next_step(self, path: str) -> Step | None:
        if self.scripted_paths is not None and path not in self.scripted_paths:
            return None
        with self._lock:
            return self._script.popleft() if self._script else None


def _json_answer(value: Any, status: int = 200, headers: dict[str, str] | None = None) -> _Answer:
    return _Answer(status, json.dumps(value).encode(), "application/json", dict(headers or {}))


def _serve(server: TestServer, handler: Handler) -> TestServer:
    class _Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

        def _handle(self) -> None:
            parts = urlsplit(self.path)
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            rec = Recorded(
                method=self.command,
                path=parts.path,
                query=parse_qs(parts.query),
                headers={k.lower(): v for k, v in self.headers.items()},
                body=body,
                time=time.monotonic(),
            )
            with server._lock:
                server.requests.append(rec)
            step = server._next_step(parts.path)
            if step is not None:
                raw = step.body if step.body is not None else json.dumps(step.json).encode()
                answer = _Answer(step.status, raw, step.content_type, step.headers, step.delay)
            else:
                answer = handler(server, rec)
            if answer.delay and server._closed.wait(answer.delay):
                return
            try:
                self.send_response(answer.status)
                self.send_header("Content-Type", answer.content_type)
                self.send_header("Content-Length", str(len(answer.body)))
                for key, value in answer.headers.items():
                    self.send_header(key, value)
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(answer.body)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (size limit, timeout): fine

        do_GET = do_POST = do_HEAD = _handle  # noqa: N815 - http.server's names

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    httpd.daemon_threads = True
    httpd.block_on_close = False  # a hanging handler must not block close()
    thread = threading.Thread(target=httpd.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    host, port = httpd.server_address[:2]
    server.url = f"http://{host!s}:{port}"

    def close() -> None:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=5)

    server._close = close
    return server


# ---------------------------------------------------------------------------------------
# A tiny search engine over a corpus of pages


_WORD = re.compile(r"\w+", re.UNICODE)


def _words(text: str) -> set[str]:
    return {w.lower() for w in _WORD.findall(text) if len(w) > 2}


def _title_of(url: str, text: str) -> str:
    first = text.strip().split(".")[0]
    return first[:80] if first else url


def rank(pages: dict[str, str], query: str, limit: int) -> list[dict[str, Any]]:
    """Pages sharing words with ``query``, best first, as ``url``/``title``/``content``/
    ``score`` dicts (the score is the share of query words the page contains)."""
    wanted = _words(query)
    hits: list[tuple[float, str, str]] = []
    for url, text in pages.items():
        if not wanted:
            break
        score = len(wanted & _words(text)) / len(wanted)
        if score > 0:
            hits.append((score, url, text))
    hits.sort(key=lambda h: (-h[0], h[1]))
    return [
        {"url": url, "title": _title_of(url, text), "content": text[:300], "score": round(s, 4)}
        for s, url, text in hits[:limit]
    ]


# ---------------------------------------------------------------------------------------
# Tavily


@contextlib.contextmanager
def tavily_server(
    *,
    api_key: str = DEFAULT_TAVILY_KEY,
    pages: dict[str, str] | None = None,
    results: list[dict[str, Any]] | Callable[[dict[str, Any]], list[dict[str, Any]]] | None = None,
    answer: str | None = None,
    script: tuple[Step, ...] | list[Step] = (),
) -> Iterator[TestServer]:
    """A Tavily-compatible API (``POST /search``, ``POST /extract``); see the module doc."""
    corpus = dict(pages or {})

    def unauthorized(rec: Recorded) -> bool:
        body = rec.json if isinstance(rec.json, dict) else {}
        return (
            rec.headers.get("authorization") != f"Bearer {api_key}"
            and body.get("api_key") != api_key
        )

    def handle(srv: TestServer, rec: Recorded) -> _Answer:
        if rec.method != "POST" or rec.path not in ("/search", "/extract"):
            return _json_answer({"detail": "Not Found"}, 404)
        if unauthorized(rec):
            return _json_answer(
                {"detail": {"error": "Unauthorized: missing or invalid API key."}}, 401
            )
        body = rec.json
        if not isinstance(body, dict):
            return _json_answer({"detail": {"error": "Invalid JSON body"}}, 400)
        started = time.monotonic()
        if rec.path == "/extract":
            urls = body.get("urls")
            urls = [urls] if isinstance(urls, str) else list(urls or [])
            ok = [{"url": u, "raw_content": corpus[u], "images": []} for u in urls if u in corpus]
            failed = [{"url": u, "error": "Failed to fetch url"} for u in urls if u not in corpus]
            return _json_answer(
                {
                    "results": ok,
                    "failed_results": failed,
                    "response_time": round(time.monotonic() - started, 3),
                }
            )
        query = body.get("query")
        if not isinstance(query, str) or not query.strip():
            return _json_answer({"detail": {"error": "Query is missing."}}, 400)
        limit = int(body.get("max_results") or 5)
        if callable(results):
            hits = results(body)
        elif results is not None:
            hits = list(results)
        else:
            hits = rank(corpus, query, limit)
        out: dict[str, Any] = {
            "query": query,
            "follow_up_questions": None,
            "answer": answer if body.get("include_answer") else None,
            "images": [],
            "results": [
                {"raw_content": None, **h} if isinstance(h, dict) else h for h in hits[:limit]
            ],
            "response_time": round(time.monotonic() - started, 3),
        }
        return _json_answer(out)

    srv = _serve(
        TestServer(api_key=api_key, scripted_paths=frozenset({"/search", "/extract"})), handle
    )
    srv.script(*script)
    try:
        yield srv
    finally:
        srv.close()


# ---------------------------------------------------------------------------------------
# SearXNG


@contextlib.contextmanager
def searxng_server(
    *,
    pages: dict[str, str] | None = None,
    results: list[dict[str, Any]]
    | Callable[[dict[str, list[str]]], list[dict[str, Any]]]
    | None = None,
    answers: tuple[str, ...] | list[str] = (),
    script: tuple[Step, ...] | list[Step] = (),
) -> Iterator[TestServer]:
    """A SearXNG-compatible ``GET /search?format=json``; see the module doc."""
    corpus = dict(pages or {})

    def handle(srv: TestServer, rec: Recorded) -> _Answer:
        if rec.path != "/search":
            return _Answer(404, b"Not Found", "text/plain")
        if rec.query.get("format", [""])[0] != "json":
            return _Answer(403, b"Forbidden", "text/html")
        query = rec.query.get("q", [""])[0]
        if callable(results):
            hits = results(rec.query)
        elif results is not None:
            hits = list(results)
        else:
            hits = [
                {
                    **h,
                    "engine": "duckduckgo",
                    "engines": ["duckduckgo", "brave"],
                    "category": "general",
                    "positions": [i + 1],
                    "parsed_url": [*urlsplit(h["url"]), ""],
                }
                for i, h in enumerate(rank(corpus, query, 20))
            ]
        out = {
            "query": query,
            "number_of_results": len(hits),
            "results": hits,
            "answers": list(answers),
            "corrections": [],
            "infoboxes": [],
            "suggestions": [],
            "unresponsive_engines": [],
        }
        return _json_answer(out)

    srv = _serve(TestServer(scripted_paths=frozenset({"/search"})), handle)
    srv.script(*script)
    try:
        yield srv
    finally:
        srv.close()


# ---------------------------------------------------------------------------------------
# Plain pages


def _builtin_pages() -> dict[str, Page]:
    filler = "<p>" + "All work and no play makes a long page. " * 20 + "</p>\n"
    head = f"<html><head><title>Huge</title></head><body><article><h1>Huge</h1>\n{filler}"
    reps = (HUGE_BYTES - len(head)) // len(filler) + 1
    huge = (head + filler * reps + "</article></body></html>").encode()
    return {
        "/article": Page(ARTICLE_HTML),
        "/huge": Page(huge),
        "/binary": Page(PNG_BYTES, content_type="image/png"),
        "/plain": Page(PLAIN_TEXT, content_type="text/plain; charset=utf-8"),
        "/slow": Page(ARTICLE_HTML, delay=5.0),
    }


@contextlib.contextmanager
def page_server(
    pages: dict[str, str | Page] | None = None,
    *,
    script: tuple[Step, ...] | list[Step] = (),
) -> Iterator[TestServer]:
    """Plain web pages; see the module doc."""
    table = _builtin_pages()
    for path, page in (pages or {}).items():
        table[path] = page if isinstance(page, Page) else Page(page)

    def handle(srv: TestServer, rec: Recorded) -> _Answer:
        m = re.fullmatch(r"/redirect/(\d+)", rec.path)
        if m:
            n = int(m.group(1))
            target = "/article" if n <= 1 else f"/redirect/{n - 1}"
            return _Answer(302, b"", "text/html", {"Location": target})
        page = table.get(rec.path)
        if page is None:
            return _Answer(404, b"<html><body>Not found</body></html>", "text/html")
        raw = page.body.encode() if isinstance(page.body, str) else page.body
        return _Answer(page.status, raw, page.content_type, dict(page.headers), page.delay)

    srv = _serve(TestServer(), handle)
    srv.script(*script)
    try:
        yield srv
    finally:
        srv.close()
