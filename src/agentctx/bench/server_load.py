"""The load of ``agentctx bench server``: concurrent clients and a foreign reader over HTTP.

Every client is one user with a key of its own and one session. It appends events
(single, batched, now and then a screenshot) with an ``Idempotency-Key`` each and builds
context windows, one request at a time, rotating over the replicas request by request,
so consecutive requests of one session, and the retry of a request, land on different
processes. A client records every key it sent and, for each acknowledged append, the
event id the server answered with; the bench compares that with the stored log.

Retries: an append that fails in transport or with a 5xx/429 is sent again with the same
key (up to :data:`ATTEMPTS` times). Besides, every seventh single append is sent twice on
purpose, as a client whose response got lost would, and the second answer must carry the
first one's event id. Neither may store an event twice.

The foreign reader is one more user that, for the whole run, asks for other users'
sessions, events, windows, images and blobs with its own key (also naming the victim's
``user_id`` outright, and trying to append), one request at a time. Under load that is
few requests, so after the window it sweeps: every probe against every session once.
Any 2xx answer is an isolation failure.

Everything runs on one asyncio loop in the calling process: cheap next to the servers,
and its CPU time is measured and reported.
"""

from __future__ import annotations

import asyncio
import base64
import io
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agentctx.bench.stats import Latency, chat_message, summarize
from agentctx.errors import MissingExtra

ATTEMPTS = 4  # an append is sent at most this often (the first try and three retries)
DUPLICATE_EVERY = 7  # every 7th single append is sent twice on purpose
BATCH_SIZE = 3
CONTEXT_BUDGET = 2000
# One op cycle of a client: mostly appends, a window every few events (before a model
# call, as an agent does), a batch now and then; every IMAGE_EVERY-th op a screenshot.
CYCLE = ("append", "append", "context", "append", "batch", "append", "append", "context")
IMAGE_EVERY = 40
SWEEP_CONCURRENCY = 8

SESSIONS = "POST /v1/sessions"
APPEND = "POST /v1/sessions/{id}/events"
APPEND_IMAGE = "POST /v1/sessions/{id}/events (image)"
BATCH = "POST /v1/sessions/{id}/events/batch"
CONTEXT = "POST /v1/sessions/{id}/context"
VERIFY = "GET /v1/sessions/{id}/verify"


@dataclass
class ClientState:
    """One client: its user, key and session, and what it sent and got acknowledged."""

    index: int
    user_id: str
    token: str
    session_id: str = ""
    sent: set[str] = field(default_factory=set)  # every idempotency key sent
    acked: dict[str, str] = field(default_factory=dict)  # key -> event id answered
    images: list[tuple[str, str]] = field(default_factory=list)  # (image_id, blob_id)
    duplicates_sent: int = 0  # deliberate second sends of an acknowledged append
    duplicates_same_event: int = 0  # ... answered with the first answer's event id
    verify: dict[str, Any] | None = None


@dataclass
class Recorder:
    """Latency per route and errors per (route, status) of the client requests."""

    samples: dict[str, list[float]] = field(default_factory=dict)
    errors: Counter[str] = field(default_factory=Counter)
    requests: int = 0

    def record(self, route: str, status: int | str, seconds: float) -> None:
        """One completed request (``status`` is the exception name when none came back)."""
        self.requests += 1
        self.samples.setdefault(route, []).append(seconds)
        if not (isinstance(status, int) and 200 <= status < 300):
            self.errors[f"{route} -> {status}"] += 1

    def latencies(self) -> dict[str, Latency]:
        """Each route's latency summary."""
        return {route: summarize(values) for route, values in self.samples.items() if values}


@dataclass
class ForeignProbes:
    """What the foreign reader tried, per probe: status counts; 2xx are successes."""

    statuses: dict[str, Counter[str]] = field(default_factory=dict)
    own_session_ok: bool = False
    in_window: int = 0  # probes sent during the timed window (the rest: the sweep after it)

    def record(self, probe: str, status: int | str) -> None:
        self.statuses.setdefault(probe, Counter())[str(status)] += 1

    @property
    def attempts(self) -> int:
        """Every probe sent."""
        return sum(sum(c.values()) for c in self.statuses.values())

    @property
    def succeeded(self) -> int:
        """Probes answered with a 2xx: each one an isolation failure."""
        return sum(n for c in self.statuses.values() for s, n in c.items() if s.startswith("2"))


def _httpx() -> Any:
    try:
        import httpx  # noqa: PLC0415 - the client extra
    except ImportError as exc:
        raise MissingExtra("client", "httpx") from exc
    return httpx


def screenshot(client: int, op: int) -> str:
    """A small PNG, distinct per client and op, as base64."""
    from PIL import Image, ImageDraw  # noqa: PLC0415

    image = Image.new("RGB", (96, 64), (client * 53 % 256, op * 29 % 256, 120))
    draw = ImageDraw.Draw(image)
    draw.rectangle((op % 60, client % 40, op % 60 + 30, client % 40 + 20), fill=(255, 255, 255))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return base64.b64encode(buffer.getvalue()).decode()


class Load:
    """The clients and the foreign reader of one run against ``bases`` (replica URLs)."""

    def __init__(self, bases: Sequence[str], *, timeout_s: float = 120.0) -> None:
        httpx = _httpx()
        self.bases = list(bases)
        self.recorder = Recorder()
        self.foreign = ForeignProbes()
        self._timeout = httpx.Timeout(timeout_s)
        self._http: Any = None
        self.window_events = 0  # events acknowledged (first sends) in the timed window
        self._turn = 0
        self._measuring = False

    # -- transport ---------------------------------------------------------------------

    def _base(self) -> str:
        self._turn += 1
        return self.bases[self._turn % len(self.bases)]

    async def _send(  # noqa: PLR0917 - route, method, path, token, body, key
        self,
        route: str,
        method: str,
        path: str,
        token: str,
        body: Any = None,
        key: str | None = None,
        *,
        measured: bool = True,
    ) -> Any:
        """One request to the next replica, recorded while measuring unless ``measured``
        is false (the foreign reader's). None on a transport error."""
        headers = {"Authorization": f"Bearer {token}"}
        if key is not None:
            headers["Idempotency-Key"] = key
        started = time.perf_counter()
        status: int | str
        try:
            response = await self._http.request(
                method, self._base() + path, json=body, headers=headers
            )
            status = response.status_code
        except _httpx().HTTPError as exc:
            response, status = None, type(exc).__name__
        if measured and self._measuring:
            self.recorder.record(route, status, time.perf_counter() - started)
        return response

    async def _append(
        self, client: ClientState, route: str, path: str, body: Any, key: str
    ) -> list[dict[str, Any]] | None:
        """Append with retries under the same key; the stored events, or None."""
        client.sent.add(key)
        for attempt in range(ATTEMPTS):
            response = await self._send(route, "POST", path, client.token, body, key)
            if response is not None and response.status_code == 201:
                data = response.json()
                return data if isinstance(data, list) else [data]
            retryable = response is None or response.status_code in (429, 500, 502, 503, 504)
            if not retryable:
                return None
            await asyncio.sleep(0.05 * 2**attempt)
        return None

    # -- clients -----------------------------------------------------------------------

    async def _open(self, client: ClientState) -> None:
        """Create the client's session, then append a screenshot and build a window (warm-up)."""
        response = await self._send(SESSIONS, "POST", "/v1/sessions", client.token, {})
        if response is None or response.status_code != 201:
            status = "no answer" if response is None else response.status_code
            raise RuntimeError(f"client {client.index} could not create its session: {status}")
        client.session_id = response.json()["session_id"]
        # A screenshot first, so the foreign reader has image and blob ids to ask for.
        await self._op(client, -1, "image")
        await self._op(client, -1, "context")

    async def _op(self, client: ClientState, n: int, kind: str) -> None:
        path = f"/v1/sessions/{client.session_id}"
        text = chat_message(client.index * 100_000 + max(n, 0))
        if kind == "context":
            body = {"query": text, "budget": CONTEXT_BUDGET}
            await self._send(CONTEXT, "POST", f"{path}/context", client.token, body)
            return
        key = f"c{client.index}-{'w' if n < 0 else n}"
        if kind == "batch":
            drafts = [_draft(i, f"{text} (part {i})") for i in range(BATCH_SIZE)]
            events = await self._append(
                client, BATCH, f"{path}/events/batch", {"events": drafts}, key
            )
            for i, event in enumerate(events or []):
                client.acked[f"{key}:{i}"] = event["event_id"]
            self.window_events += len(events or []) if self._measuring else 0
            return
        route, draft = APPEND, _draft(n, text)
        if kind == "image":
            route = APPEND_IMAGE
            image = {"kind": "image_data", "data": screenshot(client.index, n)}
            draft = {"type": "user_input", "parts": [{"kind": "text", "text": text}, image]}
        events = await self._append(client, route, f"{path}/events", {"event": draft}, key)
        if not events:
            return
        client.acked[key] = events[0]["event_id"]
        self.window_events += len(events) if self._measuring else 0
        client.images.extend(
            (p["image_id"], p["blob_id"]) for p in events[0]["parts"] if p["kind"] == "image"
        )
        if kind == "append" and n % DUPLICATE_EVERY == 0:
            client.duplicates_sent += 1
            again = await self._append(client, route, f"{path}/events", {"event": draft}, key)
            if again and again[0]["event_id"] == events[0]["event_id"]:
                client.duplicates_same_event += 1

    async def _client(self, client: ClientState, deadline: float) -> None:
        n = 0
        while time.perf_counter() < deadline:
            kind = "image" if n % IMAGE_EVERY == IMAGE_EVERY - 1 else CYCLE[n % len(CYCLE)]
            await self._op(client, n, kind)
            n += 1

    # -- the foreign reader ------------------------------------------------------------

    def _probes(self, victim: ClientState, n: int) -> list[tuple[str, str, str, Any]]:
        sid, path = victim.session_id, f"/v1/sessions/{victim.session_id}"
        probes: list[tuple[str, str, str, Any]] = [
            ("GET /v1/sessions/{id}", "GET", path, None),
            ("GET /v1/sessions/{id}/events", "GET", f"{path}/events", None),
            (
                "GET /v1/sessions/{id}/events?user_id=<owner>",
                "GET",
                f"{path}/events?user_id={victim.user_id}",
                None,
            ),
            ("POST /v1/sessions/{id}/context", "POST", f"{path}/context", {"query": "x"}),
            ("GET /v1/sessions/{id}/verify", "GET", f"{path}/verify", None),
            ("GET /v1/sessions/{id}/images", "GET", f"{path}/images", None),
            (
                "POST /v1/sessions/{id}/events (write)",
                "POST",
                f"{path}/events",
                {"event": _draft(0, f"foreign write {n} into {sid}")},
            ),
        ]
        if victim.images:
            image_id, blob_id = victim.images[n % len(victim.images)]
            probes += [
                ("GET /v1/images/{image}", "GET", f"/v1/images/{image_id}", None),
                ("GET /v1/blobs/{blob}", "GET", f"/v1/blobs/{blob_id}", None),
                ("GET /v1/sessions/{id}/images/{image}", "GET", f"{path}/images/{image_id}", None),
            ]
        return probes

    async def _probe(self, reader: ClientState, victim: ClientState, n: int, which: int) -> None:
        name, method, path, body = self._probes(victim, n)[which]
        key = f"foreign-{n}-{which}" if method == "POST" else None
        response = await self._send(
            "foreign", method, path, reader.token, body, key, measured=False
        )
        self.foreign.record(name, "no answer" if response is None else response.status_code)

    async def _foreign(
        self, reader: ClientState, victims: Sequence[ClientState], deadline: float
    ) -> None:
        own = await self._send(
            "own", "GET", f"/v1/sessions/{reader.session_id}", reader.token, measured=False
        )
        self.foreign.own_session_ok = own is not None and own.status_code == 200
        n = 0
        while time.perf_counter() < deadline:
            victim = victims[n % len(victims)]
            await self._probe(reader, victim, n, n % len(self._probes(victim, n)))
            n += 1
        self.foreign.in_window = self.foreign.attempts

    async def _sweep(self, reader: ClientState, victims: Sequence[ClientState]) -> None:
        """Every probe against every session once, after the window (a few at a time)."""
        gate = asyncio.Semaphore(SWEEP_CONCURRENCY)

        async def one(victim: ClientState, which: int) -> None:
            async with gate:
                await self._probe(reader, victim, -1 - victim.index, which)

        await asyncio.gather(*(one(v, i) for v in victims for i in range(len(self._probes(v, 0)))))

    # -- the run -----------------------------------------------------------------------

    async def run(
        self,
        clients: Sequence[ClientState],
        reader: ClientState,
        seconds: float,
        *,
        on_window: Callable[[str], None] | None = None,
    ) -> float:
        """Open every session, run the clients and the reader for ``seconds``, then ask
        a replica to verify each session and sweep the foreign probes. Returns the timed
        window's length (until the last in-flight request answered); ``on_window`` hears
        "start" and "end"."""
        mark = on_window or (lambda _: None)
        httpx = _httpx()
        size = len(clients) + 8
        # Idle connections are dropped before uvicorn's 5 s keep-alive timeout closes them:
        # otherwise a request may go out on a connection the server is closing (ReadError).
        limits = httpx.Limits(
            max_connections=size, max_keepalive_connections=size, keepalive_expiry=2.0
        )
        async with httpx.AsyncClient(timeout=self._timeout, limits=limits) as http:
            self._http = http
            await asyncio.gather(*(self._open(c) for c in [*clients, reader]))
            mark("start")
            self._measuring = True
            started = time.perf_counter()
            deadline = started + seconds
            await asyncio.gather(
                *(self._client(c, deadline) for c in clients),
                self._foreign(reader, clients, deadline),
            )
            elapsed = time.perf_counter() - started
            self._measuring = False
            mark("end")
            await asyncio.gather(*(self._verify(c) for c in clients))
            await self._sweep(reader, clients)
        return elapsed

    async def _verify(self, client: ClientState) -> None:
        path = f"/v1/sessions/{client.session_id}/verify"
        response = await self._send(VERIFY, "GET", path, client.token)
        if response is not None and response.status_code == 200:
            client.verify = response.json()


def _draft(n: int, text: str) -> dict[str, Any]:
    kind = "user_input" if n % 2 == 0 else "agent_response"
    return {"type": kind, "parts": [{"kind": "text", "text": text}]}
