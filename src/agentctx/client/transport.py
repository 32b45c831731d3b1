"""The client's HTTP transport: one pooled ``httpx.Client``, timeouts, retries, errors.

Retries (with exponential backoff and jitter, honouring ``Retry-After``) follow what
is safe to repeat:

* ``retry="safe"``: reads, and writes that cannot apply twice (appends carry an
  ``Idempotency-Key``; a session the client named itself; ending a turn). Retried
  after any transport failure, including a response lost after the server acted,
  and after a 503.
* ``retry="unsent"``: writes that could apply twice or whose retry would report a
  false conflict (compare-and-set, adding a memory). Retried only when the request
  certainly never reached the server (the connection could not be made).

A failure response becomes the agentctx error whose ``code`` the body names
(:func:`agentctx.client.errors.error_from_response`); a server that stays unreachable
raises :class:`~agentctx.client.errors.ServerUnavailable`.
"""

from __future__ import annotations

import functools
import random
import time
from collections.abc import Mapping
from typing import Any, Literal, TypeVar, cast

import orjson
from pydantic import TypeAdapter

from agentctx.client.errors import ServerUnavailable, error_from_response
from agentctx.errors import AgentCtxError, MissingExtra

try:
    import httpx
except ImportError as exc:  # pragma: no cover - the client extra is installed in tests
    raise MissingExtra("client", "httpx") from exc

T = TypeVar("T")
Retry = Literal["safe", "unsent"]
Params = Mapping[str, Any]

# Failures in which the request never left the client: repeating it is always safe.
_UNSENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout)


@functools.cache
def _adapter(tp: Any) -> TypeAdapter[Any]:
    return TypeAdapter(tp)


def parse(response: httpx.Response, tp: type[T]) -> T:
    """The response body validated as ``tp`` (a model, ``list[Event]``, a dataclass…)."""
    value: T = _adapter(cast(Any, tp)).validate_json(response.content)
    return value


class Transport:
    """Sends the API's requests; thread-safe (one connection pool shared by all threads)."""

    def __init__(
        self,
        url: str,
        api_key: str | None,
        *,
        timeout: float = 30.0,
        retries: int = 3,
        backoff: float = 0.2,
        max_backoff: float = 5.0,
        max_connections: int = 32,
        transport: httpx.BaseTransport | None = None,
        headers: Mapping[str, str] | None = None,
    ) -> None:
        from agentctx import __version__  # noqa: PLC0415 - agentctx imports this package lazily

        self.url = url.rstrip("/")
        self.retries = max(0, retries)
        self.backoff = backoff
        self.max_backoff = max_backoff
        base = {"User-Agent": f"agentctx-client/{__version__}", "Accept": "application/json"}
        if api_key:
            base["Authorization"] = f"Bearer {api_key}"
        self._client = httpx.Client(
            base_url=self.url,
            headers={**base, **(headers or {})},
            timeout=httpx.Timeout(timeout, connect=min(timeout, 10.0)),
            limits=httpx.Limits(
                max_connections=max_connections,
                max_keepalive_connections=max(1, max_connections // 2),
            ),
            transport=transport,
        )

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Params | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
        retry: Retry = "safe",
    ) -> httpx.Response:
        """Send a request (retrying as ``retry`` allows); the response if it succeeded,
        else the agentctx error its body names."""
        query = {k: v for k, v in (params or {}).items() if v is not None}
        send_headers = dict(headers or {})
        content: bytes | None = None
        if json is not None:
            # Encoded once: every retry sends the same bytes (and the same Idempotency-Key).
            content = orjson.dumps(json)
            send_headers["Content-Type"] = "application/json"
        for attempt in range(self.retries + 1):
            last = attempt == self.retries
            try:
                response = self._client.request(
                    method, path, params=query, content=content, headers=send_headers
                )
            except httpx.TransportError as exc:
                if not last and (retry == "safe" or isinstance(exc, _UNSENT)):
                    self._pause(attempt, None)
                    continue
                raise ServerUnavailable(
                    f"{method} {path} failed: {type(exc).__name__}: {exc or 'no response'}"
                ) from exc
            if response.status_code == 503 and retry == "safe" and not last:
                self._pause(attempt, response.headers.get("Retry-After"))
                continue
            if response.is_success:
                return response
            raise self._error(response)
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _error(self, response: httpx.Response) -> AgentCtxError:
        try:
            body = response.json()
        except ValueError:
            body = None
        return error_from_response(response.status_code, body)

    def _pause(self, attempt: int, retry_after: str | None) -> None:
        delay = min(self.max_backoff, self.backoff * (2**attempt))
        delay *= 0.5 + random.random() / 2  # jitter: clients that failed together spread out
        if retry_after is not None and retry_after.strip().isdigit():
            delay = max(delay, min(self.max_backoff, float(retry_after)))
        time.sleep(delay)

    def close(self) -> None:
        """Close the pooled connections."""
        self._client.close()
