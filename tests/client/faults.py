"""httpx transports that put a real network's failures between the client and a real
server: responses lost after the server acted, a proxy answering 503, counting."""

from __future__ import annotations

from collections.abc import Callable

import httpx

Match = Callable[[httpx.Request], bool]


def any_request(_: httpx.Request) -> bool:
    return True


class Faults(httpx.BaseTransport):
    """Forwards every request to the real server over HTTP and records it.

    ``lose(match, times)``: the next ``times`` matching requests reach the server and
    are processed, but their responses are dropped and the client sees the connection
    die (``httpx.ReadError``), as when a load balancer resets it.
    ``unavailable(match, times)``: the next ``times`` matching requests are answered
    503 by the proxy without reaching the server.
    """

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.sent: list[tuple[str, str]] = []
        self._lose: list[tuple[Match, int]] = []
        self._unavailable: list[tuple[Match, int]] = []

    def lose(self, match: Match = any_request, times: int = 1) -> None:
        self._lose.append((match, times))

    def unavailable(self, match: Match = any_request, times: int = 1) -> None:
        self._unavailable.append((match, times))

    @staticmethod
    def _take(rules: list[tuple[Match, int]], request: httpx.Request) -> bool:
        for index, (match, times) in enumerate(rules):
            if times > 0 and match(request):
                rules[index] = (match, times - 1)
                return True
        return False

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        self.sent.append((request.method, request.url.path))
        if self._take(self._unavailable, request):
            return httpx.Response(
                503,
                json={"error": {"code": "storage_error", "message": "proxy: upstream down"}},
                headers={"Retry-After": "0"},
            )
        response = self.inner.handle_request(request)
        if self._take(self._lose, request):
            response.read()
            response.close()
            raise httpx.ReadError("connection reset after the server answered", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def posts_to(suffix: str) -> Match:
    return lambda r: r.method == "POST" and r.url.path.endswith(suffix)
