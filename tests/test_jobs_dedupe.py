"""A job queued with a dedupe key is queued once, however often and by however many
writers it is asked for (a retried turn end, two processes ending the same turn).
On SQLite and PostgreSQL."""

from __future__ import annotations

import threading

from sqlalchemy import select

from agentctx import ContextEngine
from agentctx.storage.schema import jobs


def _keys(engine: ContextEngine) -> list[str | None]:
    with engine.db.read() as conn:
        return list(conn.execute(select(jobs.c.dedupe_key).order_by(jobs.c.job_id)).scalars())


def test_a_key_is_queued_once_across_and_within_transactions(engine: ContextEngine) -> None:
    for _ in range(2):
        with engine.db.write() as conn:
            engine.jobs.enqueue(conn, "k", session_id="s1", dedupe_key="k:s1:t1")
            engine.jobs.enqueue(conn, "k", session_id="s1", dedupe_key="k:s1:t1")
    with engine.db.write() as conn:
        engine.jobs.enqueue(conn, "k", session_id="s1", dedupe_key="k:s1:t2")
        engine.jobs.enqueue(conn, "k", session_id="s1")  # no key: always queued
        engine.jobs.enqueue(conn, "k", session_id="s1")
    assert _keys(engine) == ["k:s1:t1", "k:s1:t2", None, None]


def test_writers_racing_for_one_key_queue_it_once_without_error(engine: ContextEngine) -> None:
    writers = 6
    start = threading.Barrier(writers)
    errors: list[BaseException] = []

    def write(number: int) -> None:
        try:
            start.wait(10)
            with engine.db.write() as conn:
                engine.jobs.enqueue(conn, "k", payload={"writer": number}, dedupe_key="k:race")
        except BaseException as exc:  # reported below
            errors.append(exc)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert errors == []
    assert _keys(engine) == ["k:race"]
