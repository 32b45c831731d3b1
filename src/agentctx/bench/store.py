"""``agentctx bench store``: the session store against the OpenAI Agents SDK's ``SQLiteSession``.

Four measurements, on the same message texts for every system, in one run:

a. single-append latency: one message per call, one call at a time;
b. batched-append throughput: 1,000 events per call;
c. concurrent appends: 8 threads appending single messages into one shared session
   (afterwards agentctx's session must verify, with seq exactly 1..N);
d. reading the newest 100 events of sessions holding 1k, 10k and 100k events;
e. agentctx only: (a) in a session that already has 50,000 finished jobs (a long
   session's turn-end work), which an append must not pay for; then again with a
   turn-end hook that queues a (no-op) job after every append, run inline (measured
   last: a hook stays registered);
f. agentctx only: disk bytes per short session with its vectors (``bench.store_disk``).

``run_store_benchmark`` returns a ``StoreReport``; rendering lives in ``bench.report``.
"""

from __future__ import annotations

import contextlib
import tempfile
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field, model_validator

from agentctx.bench.machine import (
    Machine,
    load_average,
    machine_facts,
    postgres_facts,
    temporary_postgres,
)
from agentctx.bench.peer import PEER_INSTALL_HINT, PeerSubject, load_peer, peer_version
from agentctx.bench.stats import Latency, chat_messages, summarize
from agentctx.bench.store_disk import DiskResult, measure_subjects
from agentctx.bench.subjects import AgentctxSubject, StoreSubject
from agentctx.bench.targets import Target, evaluate_targets
from agentctx.engine import ContextEngine

Backend = Literal["sqlite", "postgresql"]
Progress = Callable[[str], None]
_ALL_BACKENDS: tuple[Backend, ...] = ("sqlite", "postgresql")


class StoreConfig(BaseModel):
    """Sizes of one store benchmark run (defaults: the full run)."""

    backends: list[Backend] = Field(default_factory=lambda: list(_ALL_BACKENDS))
    peer: bool = True
    pg_url: str | None = None
    workdir: Path | None = None  # where the temporary directory goes (default: system temp)
    single_appends: int = Field(default=2000, ge=1)
    single_warmup: int = Field(default=100, ge=0)
    finished_jobs: int = Field(default=50_000, ge=0)  # (e); 0 skips it
    batch_size: int = Field(default=1000, ge=1)
    batches: int = Field(default=20, ge=1)
    threads: int = Field(default=8, ge=1)
    appends_per_thread: int = Field(default=250, ge=1)
    warmup_per_thread: int = Field(default=5, ge=0)
    sizes: list[int] = Field(default_factory=lambda: [1_000, 10_000, 100_000], min_length=1)
    read_limit: int = Field(default=100, ge=1)
    reads: int = Field(default=500, ge=1)
    read_warmup: int = Field(default=50, ge=0)
    disk_sessions: int = Field(default=200, ge=0)  # (f); 0 skips it
    disk_data: Path | None = None  # (f): conversations to replay (default: synthetic)

    @model_validator(mode="after")
    def _check(self) -> StoreConfig:
        if not self.backends and not self.peer:
            raise ValueError("nothing to measure: no backend and no peer")
        if min(self.sizes) < self.read_limit:
            raise ValueError(f"every size must hold at least read_limit={self.read_limit} events")
        return self

    @classmethod
    def quick(cls, **overrides: object) -> StoreConfig:
        """Small sizes, for tests and smoke runs (figures are noisier)."""
        values: dict[str, object] = {
            "single_appends": 200,
            "single_warmup": 20,
            "finished_jobs": 2_000,
            "batches": 3,
            "appends_per_thread": 25,
            "sizes": [1_000, 5_000],
            "reads": 100,
            "read_warmup": 10,
            "disk_sessions": 30,
        }
        values.update(overrides)
        return cls.model_validate(values)


class SingleAppendResult(BaseModel):
    """(a) One message per call."""

    system: str
    latency: Latency


class JobsAppendResult(BaseModel):
    """(e) One message per call into a session with ``finished_jobs`` finished jobs."""

    system: str
    finished_jobs: int
    latency: Latency
    hook: bool = False  # each append queued a no-op turn-end job, run inline
    jobs_run: int = 0  # the hook's jobs done when the appends returned


class BatchAppendResult(BaseModel):
    """(b) ``batch_size`` events per call."""

    system: str
    batch_size: int
    batches: int
    events: int
    seconds: float
    events_per_s: float
    batch_latency: Latency


class ConcurrentAppendResult(BaseModel):
    """(c) ``threads`` writers, one shared session."""

    system: str
    threads: int
    events: int
    seconds: float
    events_per_s: float
    latency: Latency
    stored: int
    expected: int
    order_ok: bool
    chain_verified: bool | None
    detail: str


class ReadLastResult(BaseModel):
    """(d) The newest ``limit`` events of a session holding ``size``."""

    system: str
    size: int
    limit: int
    fill_seconds: float
    fill_events_per_s: float
    latency: Latency
    plan: str | None = None  # the database's plan for the read, where recorded


class StoreReport(BaseModel):
    """Everything one run measured, with the machine it ran on."""

    benchmark: str = "store"
    started_at: datetime
    config: StoreConfig
    machine: Machine
    systems: dict[str, str]  # key -> label, in measuring order
    peer_key: str | None
    single: list[SingleAppendResult] = Field(default_factory=list)
    batched: list[BatchAppendResult] = Field(default_factory=list)
    concurrent: list[ConcurrentAppendResult] = Field(default_factory=list)
    reads: list[ReadLastResult] = Field(default_factory=list)
    beside_jobs: list[JobsAppendResult] = Field(default_factory=list)
    disk: list[DiskResult] = Field(default_factory=list)
    targets: list[Target] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)


def run_store_benchmark(config: StoreConfig, progress: Progress | None = None) -> StoreReport:
    """Run every measurement of ``config`` on every system and return the report."""
    say = progress or (lambda _message: None)
    with tempfile.TemporaryDirectory(prefix="agentctx-bench-", dir=config.workdir) as tmp:
        workdir = Path(tmp)
        report = StoreReport(
            started_at=datetime.now(UTC),
            config=config,
            machine=machine_facts(workdir),
            systems={},
            peer_key=None,
        )
        with _subjects(config, workdir, report, say) as subjects:
            for subject in subjects:
                report.systems[subject.key] = subject.label
            _measure(config, subjects, report, say)
            report.disk = measure_subjects(
                subjects,
                sessions=config.disk_sessions,
                workdir=workdir,
                data=config.disk_data,
                progress=say,
            )
        report.machine.load_average_end = load_average()
        report.targets = evaluate_targets(report)
        return report


@contextlib.contextmanager
def _subjects(
    config: StoreConfig, workdir: Path, report: StoreReport, say: Progress
) -> Iterator[list[StoreSubject]]:
    subjects: list[StoreSubject] = []
    with contextlib.ExitStack() as stack:
        for backend in config.backends:
            url = f"sqlite:///{workdir / 'agentctx.db'}"
            if backend == "postgresql":
                if config.pg_url is not None:
                    url = config.pg_url
                else:
                    say("starting a temporary PostgreSQL server")
                    url = stack.enter_context(temporary_postgres(workdir))
            # The store alone: follow-up work inline, so that no background embedding of
            # what is appended competes with the appends measured (bench agentstep
            # measures the defaults, background work and all).
            engine = ContextEngine(url=url, home=workdir / f"home-{backend}", jobs="inline")
            subject = AgentctxSubject(engine, backend)
            stack.callback(subject.close)
            subjects.append(subject)
            if backend == "postgresql":
                version, settings = postgres_facts(engine.db)
                report.machine.postgres, report.machine.postgres_settings = version, settings
            else:
                report.machine.agentctx_settings = {
                    "sqlite_synchronous": engine.settings.sqlite_synchronous,
                    "audit_file": str(engine.settings.audit_file_enabled).lower(),
                    "jobs": engine.settings.jobs,
                }
        if config.peer:
            session_class = load_peer()
            if session_class is None:
                note = f"peer skipped: openai-agents is not installed ({PEER_INSTALL_HINT})"
                say(note)
                report.notes.append(note)
            else:
                peer = PeerSubject(session_class, workdir / "peer.db")
                stack.callback(peer.close)
                subjects.append(peer)
                report.peer_key = peer.key
                report.machine.peer = f"openai-agents {peer_version()}"
                report.machine.peer_sqlite_synchronous = peer.synchronous_mode()
        yield subjects


def _measure(
    config: StoreConfig, subjects: list[StoreSubject], report: StoreReport, say: Progress
) -> None:
    # (a) single appends
    warmup = chat_messages(0, config.single_warmup)
    texts = chat_messages(config.single_warmup, config.single_appends)
    for subject in subjects:
        say(f"single appends: {subject.label}")
        durations = subject.single_appends(texts, warmup)
        report.single.append(SingleAppendResult(system=subject.key, latency=summarize(durations)))

    # (e) single appends beside finished jobs (agentctx only: the peer runs no jobs)
    _beside_jobs(config, subjects, report, say, texts=texts, warmup=warmup, hook=False)

    # (b) batched appends
    size = config.batch_size
    warm_batch = chat_messages(0, size)
    batches = [chat_messages(size * (i + 1), size) for i in range(config.batches)]
    for subject in subjects:
        say(f"batched appends: {subject.label}")
        durations = subject.batched_appends(batches, warm_batch)
        total = sum(durations)
        events = size * len(batches)
        report.batched.append(
            BatchAppendResult(
                system=subject.key,
                batch_size=size,
                batches=len(batches),
                events=events,
                seconds=total,
                events_per_s=events / total,
                batch_latency=summarize(durations),
            )
        )

    # (c) concurrent appends into one session
    per, warm = config.appends_per_thread, config.warmup_per_thread
    stride = per + warm
    warm_lists = [chat_messages(i * stride, warm) for i in range(config.threads)]
    text_lists = [chat_messages(i * stride + warm, per) for i in range(config.threads)]
    for subject in subjects:
        say(f"concurrent appends ({config.threads} threads): {subject.label}")
        run = subject.concurrent_appends(text_lists, warm_lists)
        events = per * config.threads
        report.concurrent.append(
            ConcurrentAppendResult(
                system=subject.key,
                threads=config.threads,
                events=events,
                seconds=run.elapsed_s,
                events_per_s=events / run.elapsed_s,
                latency=summarize(run.durations_s),
                stored=run.stored,
                expected=run.expected,
                order_ok=run.order_ok,
                chain_verified=run.chain_verified,
                detail=run.detail,
            )
        )

    # (d) newest-N reads as history grows
    corpus = chat_messages(0, max(config.sizes))
    for subject in subjects:
        for history in sorted(config.sizes):
            say(f"filling a {history:,}-event session: {subject.label}")
            fill = subject.fill_history(history, corpus[:history], config.batch_size)
            say(f"reading the newest {config.read_limit} of {history:,}: {subject.label}")
            durations = subject.read_last(
                history, config.read_limit, config.reads, config.read_warmup
            )
            report.reads.append(
                ReadLastResult(
                    system=subject.key,
                    size=history,
                    limit=config.read_limit,
                    fill_seconds=fill,
                    fill_events_per_s=history / fill,
                    latency=summarize(durations),
                    plan=subject.read_plan(history, config.read_limit),
                )
            )

    # (e) again, each append queueing a job that runs inline (last: the hook stays)
    _beside_jobs(config, subjects, report, say, texts=texts, warmup=warmup, hook=True)


def _beside_jobs(
    config: StoreConfig,
    subjects: list[StoreSubject],
    report: StoreReport,
    say: Progress,
    *,
    texts: list[str],
    warmup: list[str],
    hook: bool,
) -> None:
    """(e): single appends beside ``config.finished_jobs`` finished jobs, each queueing a
    no-op turn-end job run inline when ``hook``; agentctx only."""
    if not config.finished_jobs:
        return
    for subject in subjects:
        if not isinstance(subject, AgentctxSubject):
            continue
        what = "with a turn-end job" if hook else "alone"
        say(
            f"single appends beside {config.finished_jobs:,} finished jobs, {what}: {subject.label}"
        )
        beside = subject.appends_beside_finished_jobs(
            texts, warmup, config.finished_jobs, hook=hook
        )
        report.beside_jobs.append(
            JobsAppendResult(
                system=subject.key,
                finished_jobs=config.finished_jobs,
                latency=summarize(beside.durations_s),
                hook=hook,
                jobs_run=beside.jobs_run,
            )
        )
