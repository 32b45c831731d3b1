"""``agentctx bench server``: server replicas under concurrent clients, then the log audited.

For each backend the bench opens a fresh database (a SQLite file, or a PostgreSQL the
bench starts with ``pgserver`` unless ``pg_url`` is given), issues one API key per client
user and one for a foreign reader, and starts the replicas as separate processes
(``python -m agentctx.cli.main --url URL --home HOME serve``: PostgreSQL gets
``replicas`` of them, SQLite one), all sharing the database and the blob folder.
:mod:`agentctx.bench.server_load` then drives them for ``seconds``.

Afterwards the stored log is compared with what the clients saw, through the engine
(the database itself, not the server): every acknowledged append must be stored exactly
once under its idempotency key with the event id the client was given (``lost``,
``duplicated``), each session's seqs must run 1..N, and every session's hash chain must
verify (asked of a replica over HTTP). Any 2xx answer to the foreign reader is an
isolation failure. CPU time of the replicas, of PostgreSQL and of the load generator is
measured over the timed window, since all of them share the machine's cores.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import secrets
import time
from collections import Counter
from collections.abc import Callable, Collection, Mapping, Sequence
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from agentctx.bench.machine import (
    Machine,
    load_average,
    machine_facts,
    postgres_facts,
    temporary_postgres,
)
from agentctx.bench.server_load import ClientState, ForeignProbes, Load, Recorder
from agentctx.bench.server_procs import Cpu, CpuMeter, replicas
from agentctx.bench.stats import Latency
from agentctx.engine import ContextEngine
from agentctx.llm.embeddings import local_model_installed

Backend = Literal["sqlite", "postgres"]
Progress = Callable[[str], None]


class ServerBackend(enum.StrEnum):
    """Which backends ``agentctx bench server`` runs on."""

    sqlite = "sqlite"
    postgres = "postgres"
    both = "both"

    def backends(self) -> list[Backend]:
        """The backends to run, PostgreSQL first."""
        if self is ServerBackend.both:
            return ["postgres", "sqlite"]
        return ["postgres"] if self is ServerBackend.postgres else ["sqlite"]


class ServerBenchConfig(BaseModel):
    """What to run: clients, duration, replicas (PostgreSQL; SQLite runs one), backends."""

    clients: int = Field(default=64, ge=1)
    seconds: float = Field(default=60.0, gt=0)
    replicas: int = Field(default=2, ge=1)
    backends: list[Backend] = Field(default_factory=ServerBackend.both.backends, min_length=1)
    embedder: str = "auto"  # the replicas' embeddings provider (auto: as `agentctx serve`)
    pg_url: str | None = None
    workdir: Path | None = None
    startup_timeout_s: float = Field(default=180.0, gt=0)
    command: str = ""


class RouteStats(BaseModel):
    """One route's requests in the timed window."""

    route: str
    requests: int
    errors: int
    latency: Latency


class SessionCheck(BaseModel):
    """One session's stored log against what its client was told."""

    acked: int
    stored: int
    lost: int  # acknowledged, yet missing or stored under another event id
    duplicated: int  # events stored beyond the first under one idempotency key
    unacked_stored: int  # sent, no answer reached the client, stored once: fine
    other: int  # stored events the client never sent (a foreign write would be one)
    seq_ok: bool  # seqs are exactly 1..N


class Integrity(BaseModel):
    """The audit of every client session after the run."""

    sessions: int = 0
    acked: int = 0
    stored: int = 0
    lost: int = 0
    duplicated: int = 0
    unacked_stored: int = 0
    other: int = 0
    seq_broken: int = 0
    verify_ok: int = 0
    verify_failed: int = 0
    duplicates_sent: int = 0
    duplicates_same_event: int = 0

    def add(self, check: SessionCheck, verified: bool) -> None:
        """Fold in one session."""
        self.sessions += 1
        self.acked += check.acked
        self.stored += check.stored
        self.lost += check.lost
        self.duplicated += check.duplicated
        self.unacked_stored += check.unacked_stored
        self.other += check.other
        self.seq_broken += 0 if check.seq_ok else 1
        self.verify_ok += 1 if verified else 0
        self.verify_failed += 0 if verified else 1


class Isolation(BaseModel):
    """The foreign reader's probes: status counts per probe; 2xx are failures."""

    attempts: int
    in_window: int  # the attempts made under load; the others swept every session after
    succeeded: int
    own_session_ok: bool  # its key works: the refusals are not a broken key
    statuses: dict[str, dict[str, int]]


class BackendRun(BaseModel):
    """One backend's run."""

    backend: Backend
    replicas: int
    clients: int
    elapsed_s: float
    requests: int
    requests_per_s: float
    events_per_s: float
    routes: list[RouteStats]
    errors: dict[str, int]
    integrity: Integrity
    isolation: Isolation
    cpu: Cpu
    postgres: str | None = None
    postgres_settings: dict[str, str] = {}
    settings: dict[str, str] = {}  # the engine settings the replicas ran with

    @property
    def failures(self) -> list[str]:
        """The invariants this run broke (empty: it passed)."""
        i = self.integrity
        checks = {
            "events lost": i.lost,
            "events duplicated": i.duplicated,
            "foreign events stored": i.other,
            "sessions with seq gaps": i.seq_broken,
            "sessions failing verify": i.verify_failed,
            "foreign reads that succeeded": self.isolation.succeeded,
        }
        found = [f"{name}: {count}" for name, count in checks.items() if count]
        if not self.isolation.own_session_ok:
            found.append("the foreign reader's own key did not work")
        return found


class ServerBenchReport(BaseModel):
    """Everything ``agentctx bench server`` measured."""

    config: ServerBenchConfig
    machine: Machine
    runs: list[BackendRun]
    total_s: float

    @property
    def passed(self) -> bool:
        """No lost or duplicated events, every session verified, no foreign read."""
        return not any(run.failures for run in self.runs)


def check_session(
    acked: Mapping[str, str],
    sent: Collection[str],
    stored: Sequence[tuple[int, str | None, str]],
) -> SessionCheck:
    """Compare a session's stored events ``(seq, idempotency_key, event_id)`` with the
    keys its client ``sent`` and the event ids it was answered with (``acked``; a batch
    sent as ``K`` stores ``K:0``, ``K:1``…)."""
    counts = Counter(key for _, key, _ in stored if key is not None)
    pairs = {(key, event_id) for _, key, event_id in stored}

    def ours(key: str | None) -> bool:
        return key is not None and (key in sent or key.rpartition(":")[0] in sent)

    seqs = sorted(seq for seq, _, _ in stored)
    return SessionCheck(
        acked=len(acked),
        stored=len(stored),
        lost=sum(1 for pair in acked.items() if pair not in pairs),
        duplicated=sum(n - 1 for n in counts.values()),
        unacked_stored=sum(1 for key in counts if ours(key) and key not in acked),
        other=sum(1 for _, key, _ in stored if not ours(key)),
        seq_ok=seqs == list(range(1, len(seqs) + 1)),
    )


# -- one backend -----------------------------------------------------------------------


def _routes(recorder: Recorder) -> list[RouteStats]:
    errors = Counter[str]()
    for label, count in recorder.errors.items():
        errors[label.split(" -> ")[0]] += count
    return [
        RouteStats(route=route, requests=latency.count, errors=errors[route], latency=latency)
        for route, latency in recorder.latencies().items()
    ]


def _isolation(probes: ForeignProbes) -> Isolation:
    return Isolation(
        attempts=probes.attempts,
        in_window=probes.in_window,
        succeeded=probes.succeeded,
        own_session_ok=probes.own_session_ok,
        statuses={name: dict(sorted(c.items())) for name, c in probes.statuses.items()},
    )


def _audit(engine: ContextEngine, clients: Sequence[ClientState]) -> Integrity:
    integrity = Integrity()
    for client in clients:
        events = engine.get_session(client.session_id, client.user_id).events()
        stored = [(e.seq, e.idempotency_key, e.event_id) for e in events]
        check = check_session(client.acked, client.sent, stored)
        report = client.verify or {}
        verified = bool(report.get("ok")) and report.get("events_checked") == len(stored)
        integrity.add(check, verified)
        integrity.duplicates_sent += client.duplicates_sent
        integrity.duplicates_same_event += client.duplicates_same_event
    return integrity


def run_backend(
    config: ServerBenchConfig, backend: Backend, workdir: Path, progress: Progress
) -> BackendRun:
    """Start a database and the replicas, run the load, audit the log."""
    count = config.replicas if backend == "postgres" else 1
    workdir.mkdir(parents=True, exist_ok=True)
    with contextlib.ExitStack() as stack:
        datadir: Path | None = None
        if backend == "sqlite":
            url = f"sqlite:///{workdir / 'agentctx.db'}"
        elif config.pg_url:
            url = config.pg_url
        else:
            progress("starting PostgreSQL (pgserver)")
            url = stack.enter_context(temporary_postgres(workdir))
            datadir = workdir / "pgdata"
        home = workdir / "home"
        # The bench's own engine migrates the database before any replica starts, issues
        # the keys while they boot, and reads the stored log afterwards.
        engine = stack.enter_context(
            ContextEngine(url=url, home=home, embeddings={"provider": "none"})
        )
        progress(f"{backend}: starting {count} replica(s)")
        servers = stack.enter_context(replicas(url, home, count, config.embedder))
        from agentctx.server.auth import ApiKeyStore  # noqa: PLC0415 - the server extra

        keys = ApiKeyStore(engine.db)
        run_id = secrets.token_hex(3)
        clients = [
            ClientState(i, user, keys.create([user])[1])
            for i, user in ((i, f"bench-{run_id}-{i}") for i in range(config.clients))
        ]
        foreign = f"bench-{run_id}-foreign"
        reader = ClientState(-1, foreign, keys.create([foreign])[1])
        for server in servers:
            server.wait_ready(config.startup_timeout_s)
        meter = CpuMeter([s.process.pid for s in servers], datadir)
        progress(f"{backend}: {config.clients} clients for {config.seconds:g} s")
        load = Load([s.base for s in servers])
        elapsed = asyncio.run(load.run(clients, reader, config.seconds, on_window=meter))
        progress(f"{backend}: auditing {len(clients)} sessions")
        integrity = _audit(engine, clients)
        pg_version, pg_settings = postgres_facts(engine.db) if backend == "postgres" else (None, {})
        s = engine.settings
        settings = {
            "jobs": s.jobs,
            "redaction": str(s.redaction.enabled),
            "sqlite_synchronous": s.sqlite_synchronous,
            "pool_size": str(s.pool_size),
        }
    routes = _routes(load.recorder)
    return BackendRun(
        backend=backend,
        replicas=count,
        clients=config.clients,
        elapsed_s=round(elapsed, 3),
        requests=load.recorder.requests,
        requests_per_s=round(load.recorder.requests / elapsed, 1),
        events_per_s=round(load.window_events / elapsed, 1),
        routes=routes,
        errors=dict(load.recorder.errors.most_common()),
        integrity=integrity,
        isolation=_isolation(load.foreign),
        cpu=meter.result(),
        postgres=pg_version,
        postgres_settings=pg_settings,
        settings=settings,
    )


def run_server_benchmark(
    config: ServerBenchConfig, progress: Progress | None = None
) -> ServerBenchReport:
    """Run every configured backend in turn and collect the report."""
    say = progress or (lambda _: None)
    started = time.perf_counter()
    with contextlib.ExitStack() as stack:
        if config.workdir is None:
            import tempfile  # noqa: PLC0415

            workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="actx-srv-")))
        else:
            workdir = config.workdir
            workdir.mkdir(parents=True, exist_ok=True)
        machine = machine_facts(workdir)
        runs = [run_backend(config, b, workdir / b, say) for b in config.backends]
    machine.load_average_end = load_average()
    pg = next((r for r in runs if r.postgres), None)
    if pg is not None:
        machine.postgres, machine.postgres_settings = pg.postgres, pg.postgres_settings
    embedder = config.embedder
    if embedder == "auto":
        embedder = f"auto ({'local' if local_model_installed() else 'hashing'})"
    machine.agentctx_settings = {
        "embeddings": embedder,
        **runs[0].settings,
        "replica": "one uvicorn process each",
    }
    return ServerBenchReport(
        config=config, machine=machine, runs=runs, total_s=round(time.perf_counter() - started, 1)
    )
