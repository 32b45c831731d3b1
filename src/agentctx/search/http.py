"""The HTTP behaviour every search provider and the page fetcher share.

:class:`HttpClient` wraps one ``httpx.Client`` and guarantees, for each call:

- Every failure surfaces as a :class:`~agentctx.search.errors.SearchError` subclass,
  never as an httpx exception, a ``KeyError`` or a ``ValueError`` from bad JSON.
- Connection errors, timeouts and 5xx answers are retried ``max_retries`` times with
  exponential backoff (``backoff_s``, doubled each time, with up to 10% jitter).
- A 429 waits for ``Retry-After`` (seconds or an HTTP date) when it is at most
  ``retry_after_cap_s``, then retries; a longer wait, no retries left, or no usable
  header after the last retry raises :class:`SearchRateLimited` with the server's wait.
- 401/403 raise :class:`SearchAuthError` at once (retrying cannot fix a key).
- Requests of one client start at least ``min_interval_s`` apart, across threads.
"""

from __future__ import annotations

import email.utils
import math
import random
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from typing import Any, TypeVar

import httpx
import orjson

from agentctx.search.errors import (
    SearchAuthError,
    SearchBadResponse,
    SearchError,
    SearchRateLimited,
    SearchTimeout,
    SearchUnavailable,
)

T = TypeVar("T")

USER_AGENT = "agentctx-search/0.1 (+https://github.com/agentctx)"


class RateLimiter:
    """Spaces calls at least ``min_interval_s`` apart; safe across threads.

    Each caller reserves the next free slot under a lock and sleeps outside it, so
    concurrent callers queue up instead of all firing when the interval ends.
    """

    def __init__(
        self,
        min_interval_s: float,
        *,
        clock: Callable[[], float] = time.monotonic,
        sleep: Callable[[float], None] = time.sleep,
    ) -> None:
        self.min_interval_s = min_interval_s
        self._clock = clock
        self._sleep = sleep
        self._next = 0.0
        self._lock = threading.Lock()

    def wait(self) -> None:
        """Block until this caller may send."""
        if self.min_interval_s <= 0:
            return
        with self._lock:
            now = self._clock()
            start = max(now, self._next)
            self._next = start + self.min_interval_s
        if start > now:
            self._sleep(start - now)


def parse_retry_after(value: str | None, *, now: datetime | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` header: delta-seconds or an HTTP date.

    None when absent or unparseable; a date in the past gives 0.
    """
    if value is None or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        pass
    else:
        return None if math.isnan(seconds) else max(seconds, 0.0)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return max((when - (now or datetime.now(UTC))).total_seconds(), 0.0)


class _Retry(Exception):
    """A retryable failure: the error to raise when retries run out, and a forced wait."""

    def __init__(self, error: SearchError, wait_s: float | None = None) -> None:
        super().__init__(str(error))
        self.error = error
        self.wait_s = wait_s


def _detail(response: httpx.Response) -> str:
    """The provider's error message, short (bodies of errors may be anything)."""
    try:
        body = orjson.loads(response.read()[:4096])
    except (orjson.JSONDecodeError, httpx.HTTPError):
        return ""
    if isinstance(body, dict):
        detail = body.get("detail", body.get("error", body.get("message")))
        if isinstance(detail, dict):
            detail = detail.get("error", detail.get("message"))
        if isinstance(detail, str):
            return f": {detail[:200]}"
    return ""


class HttpClient:
    """One provider's HTTP connection pool with retries, backoff and a rate limit.

    ``name`` prefixes error messages. ``sleep`` and ``now`` are injectable for tests;
    ``transport`` lets tests hand httpx a transport of their own.
    """

    def __init__(
        self,
        name: str,
        *,
        timeout_s: float = 15.0,
        max_retries: int = 2,
        backoff_s: float = 0.5,
        retry_after_cap_s: float = 30.0,
        min_interval_s: float = 0.0,
        max_redirects: int = 5,
        headers: Mapping[str, str] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        now: Callable[[], datetime] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.name = name
        self.timeout_s = timeout_s
        self.max_retries = max_retries
        self.backoff_s = backoff_s
        self.retry_after_cap_s = retry_after_cap_s
        self._sleep = sleep
        self._now = now or (lambda: datetime.now(UTC))
        self.limiter = RateLimiter(min_interval_s, sleep=sleep)
        self.client = httpx.Client(
            timeout=httpx.Timeout(timeout_s),
            headers={"User-Agent": USER_AGENT, **dict(headers or {})},
            follow_redirects=False,
            max_redirects=max_redirects,
            transport=transport,
        )

    def close(self) -> None:
        self.client.close()

    def __enter__(self) -> HttpClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------------------

    def check(self, response: httpx.Response) -> None:
        """Raise the typed error for a failed answer (retryable ones as ``_Retry``)."""
        status = response.status_code
        if status < 400:
            return
        what = f"{self.name} answered HTTP {status}"
        if status == 429:
            wait = parse_retry_after(response.headers.get("Retry-After"), now=self._now())
            raise _Retry(SearchRateLimited(f"{what} (rate limited)", retry_after_s=wait), wait)
        if status in (401, 403):
            raise SearchAuthError(f"{what}{_detail(response)}: check the API key")
        if status >= 500:
            raise _Retry(SearchUnavailable(f"{what}{_detail(response)}"))
        raise SearchError(f"{what}{_detail(response)}")

    def run(self, op: Callable[[httpx.Client], T], *, what: str) -> T:
        """Run ``op`` (one request on the client) with the guarantees of this module.

        ``op`` calls :meth:`check` on its response and may raise SearchError itself
        (not retried). ``what`` names the request in error messages.
        """
        attempt = 0
        while True:
            self.limiter.wait()
            try:
                return op(self.client)
            except _Retry as retry:
                failure = retry
            except httpx.TimeoutException as exc:
                failure = _Retry(
                    SearchTimeout(f"{self.name}: {what} timed out after {self.timeout_s:g}s")
                )
                failure.__cause__ = exc
            except httpx.TooManyRedirects as exc:
                raise SearchBadResponse(f"{self.name}: {what}: too many redirects") from exc
            except httpx.TransportError as exc:
                failure = _Retry(
                    SearchUnavailable(f"{self.name}: {what} failed: {type(exc).__name__}: {exc}")
                )
                failure.__cause__ = exc
            except httpx.HTTPError as exc:  # e.g. an invalid URL
                raise SearchError(f"{self.name}: {what} failed: {exc}") from exc
            error = failure.error
            wait = failure.wait_s
            if (
                isinstance(error, SearchRateLimited)
                and wait is not None
                and wait > self.retry_after_cap_s
            ):
                raise SearchRateLimited(
                    f"{error} and asks to wait {wait:g}s, more than the "
                    f"{self.retry_after_cap_s:g}s cap",
                    retry_after_s=wait,
                ) from failure.__cause__
            if attempt >= self.max_retries:
                raise error from failure.__cause__
            if wait is None:
                wait = self.backoff_s * (2**attempt) * (1 + random.random() / 10)
            attempt += 1
            self._sleep(wait)

    def json(
        self,
        method: str,
        url: str,
        *,
        body: Mapping[str, Any] | None = None,
        params: Mapping[str, str | int] | None = None,
        headers: Mapping[str, str] | None = None,
        what: str = "request",
    ) -> dict[str, Any]:
        """Send a request and return its JSON object body (SearchBadResponse otherwise)."""

        def op(client: httpx.Client) -> dict[str, Any]:
            response = client.request(
                method,
                url,
                json=dict(body) if body is not None else None,
                params=dict(params) if params is not None else None,
                headers=dict(headers or {}),
            )
            self.check(response)
            try:
                value = orjson.loads(response.content)
            except orjson.JSONDecodeError as exc:
                raise SearchBadResponse(
                    f"{self.name}: {what} answered with malformed JSON ({exc})"
                ) from exc
            if not isinstance(value, dict):
                raise SearchBadResponse(
                    f"{self.name}: {what} answered with JSON {type(value).__name__}, not an object"
                )
            return value

        return self.run(op, what=what)
