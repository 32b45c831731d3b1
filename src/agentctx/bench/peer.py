"""The peer: the OpenAI Agents SDK's ``SQLiteSession`` on a SQLite file.

Its API is async only (each call hops to a worker thread with ``asyncio.to_thread``),
so every measurement runs its whole timing loop inside one event loop; per-call
durations are taken around the ``await``, as an agent using it would experience them.
"""

from __future__ import annotations

import asyncio
import contextlib
import sqlite3
import threading
import time
from collections.abc import Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

from agentctx.bench.stats import Worker, run_concurrently
from agentctx.bench.subjects import ConcurrentRun, writer_order_ok

PEER_INSTALL_HINT = "pip install 'agentctx[bench]'"
PEER_LABEL = "openai-agents SQLiteSession"


def load_peer() -> type[Any] | None:
    """The ``SQLiteSession`` class, or None when ``openai-agents`` is not installed."""
    try:
        from agents.memory import SQLiteSession  # noqa: PLC0415 - optional dependency
    except ImportError:
        return None
    return SQLiteSession


def peer_version() -> str | None:
    """The installed ``openai-agents`` version."""
    try:
        return metadata.version("openai-agents")
    except metadata.PackageNotFoundError:
        return None


def _item(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


class PeerSubject:
    """``SQLiteSession`` sessions sharing one SQLite file."""

    key = "peer-sqlitesession"
    label = PEER_LABEL

    def __init__(self, session_class: type[Any], db_path: Path) -> None:
        self._class = session_class
        self.db_path = db_path
        self._sessions: list[Any] = []
        self._histories: dict[int, Any] = {}
        self._texts: dict[int, Sequence[str]] = {}  # what each history was filled with
        self._counter = 0

    def _new_session(self) -> Any:
        self._counter += 1
        session = self._class(f"bench-{self._counter}", db_path=self.db_path)
        self._sessions.append(session)
        return session

    def synchronous_mode(self) -> int:
        """SQLite's ``synchronous`` setting a fresh connection gets (the peer sets none)."""
        with contextlib.closing(sqlite3.connect(self.db_path)) as conn:
            return int(conn.execute("PRAGMA synchronous").fetchone()[0])

    def single_appends(self, texts: Sequence[str], warmup: Sequence[str]) -> list[float]:
        """See ``StoreSubject.single_appends``."""
        session = self._new_session()

        async def run() -> list[float]:
            for text in warmup:
                await session.add_items([_item(text)])
            durations = []
            for text in texts:
                started = time.perf_counter()
                await session.add_items([_item(text)])
                durations.append(time.perf_counter() - started)
            return durations

        return asyncio.run(run())

    def batched_appends(
        self, batches: Sequence[Sequence[str]], warmup: Sequence[str]
    ) -> list[float]:
        """See ``StoreSubject.batched_appends``; building the items is part of the timing."""
        session = self._new_session()

        async def run() -> list[float]:
            await session.add_items([_item(text) for text in warmup])
            durations = []
            for batch in batches:
                started = time.perf_counter()
                await session.add_items([_item(text) for text in batch])
                durations.append(time.perf_counter() - started)
            return durations

        return asyncio.run(run())

    def concurrent_appends(
        self, per_thread: Sequence[Sequence[str]], warmup: Sequence[Sequence[str]]
    ) -> ConcurrentRun:
        """See ``StoreSubject.concurrent_appends``: one event loop per writer thread."""
        session = self._new_session()

        def worker(texts: Sequence[str], warm: Sequence[str]) -> Worker:
            async def body(barrier: threading.Barrier) -> list[float]:
                for text in warm:
                    await session.add_items([_item(text)])
                barrier.wait()  # blocks this thread's loop, which has nothing else to run
                durations = []
                for text in texts:
                    started = time.perf_counter()
                    await session.add_items([_item(text)])
                    durations.append(time.perf_counter() - started)
                return durations

            def run(barrier: threading.Barrier) -> list[float]:
                return asyncio.run(body(barrier))

            return run

        elapsed, durations = run_concurrently(
            [worker(texts, warm) for texts, warm in zip(per_thread, warmup, strict=True)]
        )
        items = asyncio.run(session.get_items())
        stored = [str(item["content"]) for item in items]
        expected = sum(map(len, per_thread)) + sum(map(len, warmup))
        writers = [[*warm, *texts] for texts, warm in zip(per_thread, warmup, strict=True)]
        order_ok = len(stored) == expected and writer_order_ok(stored, writers)
        return ConcurrentRun(
            elapsed_s=elapsed,
            durations_s=durations,
            expected=expected,
            stored=len(stored),
            order_ok=order_ok,
            chain_verified=None,
            detail=f"{len(stored)}/{expected} stored, "
            + ("writer order kept" if order_ok else "WRITER ORDER LOST"),
        )

    def fill_history(self, size: int, texts: Sequence[str], batch_size: int) -> float:
        """See ``StoreSubject.fill_history``."""
        session = self._new_session()

        async def run() -> float:
            started = time.perf_counter()
            for start in range(0, size, batch_size):
                await session.add_items([_item(text) for text in texts[start : start + batch_size]])
            return time.perf_counter() - started

        elapsed = asyncio.run(run())
        self._histories[size] = session
        self._texts[size] = texts
        return elapsed

    def read_last(self, size: int, limit: int, reads: int, warmup: int) -> list[float]:
        """See ``StoreSubject.read_last``; checks every answer holds the newest ``limit`` items."""
        session = self._histories[size]

        wanted = list(self._texts[size][max(0, size - limit) : size])

        async def run() -> list[float]:
            for _ in range(warmup):
                await session.get_items(limit=limit)
            durations = []
            for _ in range(reads):
                started = time.perf_counter()
                answer = await session.get_items(limit=limit)
                durations.append(time.perf_counter() - started)
                if [item["content"] for item in answer] != wanted:
                    raise AssertionError(
                        f"get_items(limit={limit}) did not return the newest items"
                    )
            return durations

        return asyncio.run(run())

    def read_plan(self, size: int, limit: int) -> str | None:
        """See ``StoreSubject.read_plan`` (not recorded for the peer)."""
        return None

    def close(self) -> None:
        """See ``StoreSubject.close``."""
        for session in self._sessions:
            session.close()
        self._sessions.clear()
        self._histories.clear()
        self._texts.clear()
