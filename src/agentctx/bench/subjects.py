"""What the store benchmark measures, as one interface, and agentctx's implementation of it.

Every system under test does the same work on the same message texts; each method
returns raw per-call durations in seconds and the benchmark turns them into figures.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy import func, insert, select

from agentctx.bench.stats import Worker, run_concurrently
from agentctx.engine import TURN_END_PREFIX, ContextEngine
from agentctx.events import EventDraft, EventType, TextPart, utcnow
from agentctx.jobs import Job
from agentctx.sessions.session import Session
from agentctx.storage.event_reads import newest_events_query
from agentctx.storage.schema import jobs

BENCH_USER = "bench-user"
BENCH_HOOK = "bench-no-op"
BENCH_AGENT = "bench-agent"


@dataclass(frozen=True, slots=True)
class ConcurrentRun:
    """What a concurrent-append run did, and whether the log came out right."""

    elapsed_s: float
    durations_s: list[float]
    expected: int
    stored: int
    order_ok: bool  # seq gap-free 1..N (where the system has one) and each writer's order kept
    chain_verified: bool | None  # None: the system keeps no verifiable chain
    detail: str


@dataclass(frozen=True, slots=True)
class JobsRun:
    """Appends beside finished jobs: their durations, and the hook's jobs that ran."""

    durations_s: list[float]
    jobs_run: int


class StoreSubject(Protocol):
    """A session store under test."""

    key: str
    label: str

    def single_appends(self, texts: Sequence[str], warmup: Sequence[str]) -> list[float]:
        """Append one message per call into one session; durations of the measured calls."""
        ...

    def batched_appends(
        self, batches: Sequence[Sequence[str]], warmup: Sequence[str]
    ) -> list[float]:
        """Append each batch in one call (texts to stored); durations per batch."""
        ...

    def concurrent_appends(
        self, per_thread: Sequence[Sequence[str]], warmup: Sequence[Sequence[str]]
    ) -> ConcurrentRun:
        """One thread per list, all appending single messages into one shared session."""
        ...

    def fill_history(self, size: int, texts: Sequence[str], batch_size: int) -> float:
        """Create a session holding ``size`` events (batched appends); seconds it took."""
        ...

    def read_last(self, size: int, limit: int, reads: int, warmup: int) -> list[float]:
        """Read the newest ``limit`` events of the ``size`` session repeatedly; durations."""
        ...

    def read_plan(self, size: int, limit: int) -> str | None:
        """How the database answers the newest-``limit`` read of the ``size`` session."""
        ...

    def close(self) -> None:
        """Release connections."""
        ...


def _no_op(_job: Job) -> None:
    """The benchmark's turn-end job: the cost measured is the queue's, not the work's."""


def writer_order_ok(stored: Sequence[str], per_writer: Sequence[Sequence[str]]) -> bool:
    """Every writer's messages are all stored, once each, in the order it wrote them."""
    position = {text: i for i, text in enumerate(stored)}
    if len(position) != len(stored):
        return False
    for texts in per_writer:
        places = [position.get(text, -1) for text in texts]
        if -1 in places or places != sorted(places):
            return False
    return True


class AgentctxSubject:
    """agentctx's ``Session`` on one ``ContextEngine`` (SQLite or PostgreSQL)."""

    def __init__(self, engine: ContextEngine, backend: str) -> None:
        self.engine = engine
        self.key = f"agentctx-{backend}"
        self.label = f"agentctx ({backend})"
        self._histories: dict[int, Session] = {}

    def _new_session(self) -> Session:
        return self.engine.create_session(user_id=BENCH_USER, agent_id=BENCH_AGENT)

    @staticmethod
    def _drafts(texts: Sequence[str]) -> list[EventDraft]:
        return [
            EventDraft(type=EventType.USER_INPUT, parts=(TextPart(text=text),)) for text in texts
        ]

    def single_appends(self, texts: Sequence[str], warmup: Sequence[str]) -> list[float]:
        """See ``StoreSubject.single_appends``."""
        return self._timed_appends(self._new_session(), texts, warmup)

    @staticmethod
    def _timed_appends(
        session: Session, texts: Sequence[str], warmup: Sequence[str]
    ) -> list[float]:
        for text in warmup:
            session.add_message("user", text)
        durations = []
        for text in texts:
            started = time.perf_counter()
            session.add_message("user", text)
            durations.append(time.perf_counter() - started)
        return durations

    def appends_beside_finished_jobs(
        self, texts: Sequence[str], warmup: Sequence[str], finished: int, *, hook: bool = False
    ) -> JobsRun:
        """:meth:`single_appends` into a session whose background work left ``finished``
        jobs done, as a long session's turn-end jobs do (they stay until the session is
        deleted). Each append asks whether the session has jobs waiting; with ``hook``, a
        turn-end hook (it stays registered) queues a no-op job after each, which the
        append then claims and runs inline."""
        if hook:
            self.engine.on_turn_end(BENCH_HOOK, _no_op)
        session = self._new_session()
        now = utcnow()
        done = {
            "kind": "turn_end:bench",
            "user_id": BENCH_USER,
            "session_id": session.id,
            "payload": {},
            "status": "done",
            "attempts": 1,
            "max_attempts": 1,
            "run_after": now,
            "created_at": now,
            "updated_at": now,
        }
        with self.engine.db.write() as conn:
            for start in range(0, finished, 10_000):
                rows = [
                    {**done, "turn_id": f"t{i}"}
                    for i in range(start, min(finished, start + 10_000))
                ]
                conn.execute(insert(jobs), rows)
        durations = self._timed_appends(session, texts, warmup)
        with self.engine.db.read() as conn:
            ran = conn.execute(
                select(func.count()).where(
                    jobs.c.session_id == session.id,
                    jobs.c.kind == TURN_END_PREFIX + BENCH_HOOK,
                    jobs.c.status == "done",
                )
            ).scalar_one()
        return JobsRun(durations, int(ran))

    def batched_appends(
        self, batches: Sequence[Sequence[str]], warmup: Sequence[str]
    ) -> list[float]:
        """See ``StoreSubject.batched_appends``; building the drafts is part of the timing."""
        session = self._new_session()
        session.append(*self._drafts(warmup))
        durations = []
        for batch in batches:
            started = time.perf_counter()
            session.append(*self._drafts(batch))
            durations.append(time.perf_counter() - started)
        return durations

    def concurrent_appends(
        self, per_thread: Sequence[Sequence[str]], warmup: Sequence[Sequence[str]]
    ) -> ConcurrentRun:
        """See ``StoreSubject.concurrent_appends``; checks seq, per-writer order and the chain."""
        session = self._new_session()

        def worker(texts: Sequence[str], warm: Sequence[str]) -> Worker:
            def run(barrier: threading.Barrier) -> list[float]:
                for text in warm:
                    session.add_message("user", text)
                barrier.wait()
                durations = []
                for text in texts:
                    started = time.perf_counter()
                    session.add_message("user", text)
                    durations.append(time.perf_counter() - started)
                return durations

            return run

        elapsed, durations = run_concurrently(
            [worker(texts, warm) for texts, warm in zip(per_thread, warmup, strict=True)]
        )
        events = session.events()
        expected = sum(map(len, per_thread)) + sum(map(len, warmup))
        seqs = [event.seq for event in events]
        seq_ok = seqs == list(range(1, expected + 1))
        writers = [[*warm, *texts] for texts, warm in zip(per_thread, warmup, strict=True)]
        order_ok = seq_ok and writer_order_ok([event.text for event in events], writers)
        report = session.verify()
        detail = (
            f"seq 1..{expected} gap-free" if seq_ok else f"SEQ WRONG ({len(seqs)} events)"
        ) + (
            ", chain verified"
            if report.ok
            else f", CHAIN BAD at seq {report.first_bad_seq}: {report.reason}"
        )
        if seq_ok and not order_ok:
            detail += ", WRITER ORDER LOST"
        return ConcurrentRun(
            elapsed_s=elapsed,
            durations_s=durations,
            expected=expected,
            stored=len(events),
            order_ok=order_ok,
            chain_verified=report.ok,
            detail=detail,
        )

    def fill_history(self, size: int, texts: Sequence[str], batch_size: int) -> float:
        """See ``StoreSubject.fill_history``."""
        session = self._new_session()
        started = time.perf_counter()
        for start in range(0, size, batch_size):
            session.append(*self._drafts(texts[start : start + batch_size]))
        elapsed = time.perf_counter() - started
        if session.refresh().last_seq != size:
            raise AssertionError(f"history of {size} events holds {session.info.last_seq}")
        self._histories[size] = session
        return elapsed

    def read_last(self, size: int, limit: int, reads: int, warmup: int) -> list[float]:
        """See ``StoreSubject.read_last``; checks every answer is the newest ``limit`` events."""
        session = self._histories[size]
        for _ in range(warmup):
            session.events(last=limit)
        wanted = list(range(size - limit + 1, size + 1))
        durations = []
        for _ in range(reads):
            started = time.perf_counter()
            answer = session.events(last=limit)
            durations.append(time.perf_counter() - started)
            if [event.seq for event in answer] != wanted:
                raise AssertionError(f"events(last={limit}) did not return seq {wanted[0]}..{size}")
        return durations

    def read_plan(self, size: int, limit: int) -> str | None:
        """The query plan of ``events(last=limit)``: its plan nodes, outermost first.

        The statement and parameters are the ones ``events(last=limit)`` runs (from
        ``newest_events_query``), so the plan is the one of the query agentctx runs. On
        PostgreSQL the plan depends on table statistics, which autovacuum gathers on its
        own schedule, so the report records which plan the figures were measured with.
        """
        session = self._histories[size]
        db = self.engine.db
        with db.read() as conn:
            statement, driver_params = newest_events_query(
                conn, session.user_id, session.id, limit=limit, live_at=utcnow()
            )
            # A list would read as many parameter sets; positional parameters go as a tuple.
            params = tuple(driver_params) if isinstance(driver_params, list) else driver_params
            if db.dialect == "sqlite":
                rows = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {statement}", params)
                return "; ".join(str(row[3]) for row in rows)
            lines = [str(row[0]) for row in conn.exec_driver_sql(f"EXPLAIN {statement}", params)]
        nodes = [line.strip().removeprefix("->").split("  (cost")[0].strip() for line in lines]
        return " > ".join(node for node in nodes if node and ":" not in node)

    def close(self) -> None:
        """See ``StoreSubject.close``."""
        self._histories.clear()
        self.engine.close()
