"""Turn-end conditions answered from the events a transaction wrote as the whole turn
(every append outside a turn) must answer as the database would, and the jobs a
session already has still run after such an append. On SQLite and PostgreSQL."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path

import pytest
from sqlalchemy import Connection, event, insert, select

from agentctx import ContextEngine, EventType
from agentctx.compaction.visual import turn_has_images
from agentctx.events import Event, utcnow
from agentctx.hitl import turn_may_need_human
from agentctx.job_statements import SESSION_HAS_JOBS, claimable
from agentctx.jobs import Job
from agentctx.sessions.session import Session
from agentctx.sessions.turn_end import WrittenEvent
from agentctx.storage.schema import jobs
from job_rows import job_row


class Probe:
    """A turn-end condition recording what the two built-in conditions answer from the
    written events; it wants no job itself."""

    def __init__(self) -> None:
        self.written_answers: list[tuple[bool, bool]] = []
        self.read_turns: list[str] = []

    def __call__(self, conn: Connection, user_id: str, session_id: str, turn_id: str) -> bool:
        self.read_turns.append(turn_id)
        return False

    def written(self, events: Sequence[WrittenEvent]) -> bool:
        self.written_answers.append(
            (turn_may_need_human.written(events), turn_has_images.written(events))
        )
        return False


def _appends(png: bytes) -> list[tuple[str, Callable[[Session], Event]]]:
    """Appends outside a turn, each ending a turn of its own: (name, append)."""
    return [
        ("plain message", lambda s: s.add_message("user", "book a table for two")),
        (
            "confidence in metadata",
            lambda s: s.add_message("assistant", "maybe Friday", metadata={"confidence": 0.3}),
        ),
        (
            "Confidence capitalized",
            lambda s: s.add_message("assistant", "perhaps", metadata={"Confidence": "low"}),
        ),
        (
            "confidence quoted in text",
            lambda s: s.add_message("user", 'I have "confidence" in this plan'),
        ),
        (
            "confidence in a payload",
            lambda s: s.add_event(EventType.REFLECTION, "check", payload={"confidence": 0.9}),
        ),
        ("an error", lambda s: s.add_event(EventType.ERROR, "timeout", payload={"code": 504})),
        ("a tool call", lambda s: s.add_tool_call("search", {"q": "Lisbon"})),
        ("an image", lambda s: s.add_message("user", "this screen", images=[png])),
    ]


@pytest.fixture
def quiet(db_url: str, home: Path) -> Iterator[ContextEngine]:
    """An engine whose own triggers write nothing (the probe sees only the test's turns)."""
    with ContextEngine(url=db_url, home=home, hitl={"enabled": False}) as engine:
        yield engine


def test_written_answers_equal_the_database_answers(quiet: ContextEngine, png: bytes) -> None:
    engine = quiet
    probe = Probe()
    engine.on_turn_end("probe", lambda job: None, when=probe)
    session = engine.create_session(user_id="u1")
    appends = _appends(png)
    ended: list[tuple[str, str]] = []
    for name, append in appends:
        ended.append((name, append(session).turn_id or ""))
    call = session.events(types=[EventType.TOOL_CALL])[0]
    result = session.add_tool_result(call.call_id or "", content="3 hits")
    ended.append(("a tool result", result.turn_id or ""))

    assert len(probe.written_answers) == len(ended)
    assert probe.read_turns == []  # no own turn was read back
    dialect = engine.db.dialect
    with engine.db.read() as conn:
        for (name, turn_id), (human, images) in zip(ended, probe.written_answers, strict=True):
            stored_human = turn_may_need_human(conn, "u1", session.id, turn_id)
            stored_images = turn_has_images(conn, "u1", session.id, turn_id)
            assert images == stored_images, name
            if name == "Confidence capitalized" and dialect == "postgresql":
                # PostgreSQL's LIKE is case-sensitive; the written answer lets the turn
                # through as SQLite's does (one job too many, never one too few).
                assert human and not stored_human
            else:
                assert human == stored_human, name
    answers = dict(zip([name for name, _ in ended], probe.written_answers, strict=True))
    assert answers["plain message"] == (False, False)
    assert answers["confidence in metadata"] == (True, False)
    assert answers["confidence quoted in text"] == (False, False)
    assert answers["an error"] == (True, False) and answers["a tool result"] == (True, False)
    assert answers["an image"] == (False, True)


def test_a_turn_ended_explicitly_is_read_from_the_database(engine: ContextEngine) -> None:
    probe = Probe()
    engine.on_turn_end("probe", lambda job: None, when=probe)
    session = engine.create_session(user_id="u1")
    with session.turn() as turn:
        turn.add_message("user", "first")
        turn.add_message("assistant", "second")
    assert probe.read_turns == [turn.turn_id] and probe.written_answers == []


def test_a_job_the_session_already_has_runs_after_an_append_that_queues_none(
    engine: ContextEngine,
) -> None:
    ran: list[str] = []
    engine.jobs.register("probe-job", lambda job: ran.append(job.session_id or ""))
    session = engine.create_session(user_id="u1")
    session.add_message("user", "hello")  # the turn-end jobs of the engine come and go
    with engine.db.write() as conn:
        engine.jobs.enqueue(conn, "probe-job", user_id="u1", session_id=session.id)
    assert ran == []
    # A plain message wants no turn-end job, but the transaction sees the waiting one.
    session.add_message("user", "book a table for two")
    assert ran == [session.id]
    assert engine.jobs.counts().get("pending", 0) == 0


def test_a_job_handler_sees_the_turn_that_queued_it(engine: ContextEngine, png: bytes) -> None:
    seen: list[Job] = []
    engine.on_turn_end("images", seen.append, when=turn_has_images)
    session = engine.create_session(user_id="u1")
    session.add_message("user", "no picture here")
    event = session.add_message("user", "this screen", images=[png])
    assert [job.turn_id for job in seen] == [event.turn_id]


def test_the_waiting_jobs_lookup_reads_no_finished_job(engine: ContextEngine) -> None:
    """Finished jobs stay until their session is deleted; the look-up after each append
    must read the partial index of waiting jobs, not walk every job the session had (8 ms an
    append beside 50,000 finished jobs on SQLite, 5 ms on PostgreSQL)."""
    session = engine.create_session(user_id="u1")
    statement = SESSION_HAS_JOBS.params(u="u1", s=session.id)
    dialect = engine.db.engine.dialect
    sql = str(statement.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    if dialect.name == "sqlite":
        with engine.db.read() as conn:
            plan = conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}").all()
        detail = " ".join(str(row[-1]) for row in plan)
        assert "USING INDEX ix_jobs_waiting (user_id=? AND session_id=?)" in detail, detail
        return
    # A session with many finished jobs, written at once (before autovacuum's analyze,
    # as when a backlog lands).
    finished = 20_000
    with engine.db.write() as conn:
        conn.execute(
            insert(jobs), [job_row(f"t{i}", session_id=session.id) for i in range(finished)]
        )
    with engine.db.read() as conn:
        plan = "\n".join(str(row[0]) for row in conn.exec_driver_sql(f"EXPLAIN ANALYZE {sql}"))
    assert "ix_jobs_waiting" in plan and "Rows Removed" not in plan, plan


def test_a_session_claim_reads_no_finished_job(engine: ContextEngine) -> None:
    """After an append that queues a job, the inline runner claims the session's first
    runnable job; that claim, its first-per-session subquery and its busy-session check
    must read the waiting jobs only (before the partial index was used there, an
    append beside 50,000 finished jobs took 32 ms on SQLite instead of 3)."""
    session = engine.create_session(user_id="u1")
    query = (
        select(jobs.c.job_id)
        .where(claimable(["turn_end:test"], session=True))
        .params(now=utcnow(), u="u1", s=session.id)
    )
    dialect = engine.db.engine.dialect
    sql = str(query.compile(dialect=dialect, compile_kwargs={"literal_binds": True}))
    if dialect.name == "sqlite":
        with engine.db.read() as conn:
            plan = [str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}")]
        reads = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
        assert reads and all("ix_jobs_waiting" in step for step in reads), plan
        return
    with engine.db.write() as conn:
        rows = [job_row(f"t{i}", session_id=session.id) for i in range(20_000)]
        conn.execute(insert(jobs), rows)
    with engine.db.read() as conn:
        plan = "\n".join(str(row[0]) for row in conn.exec_driver_sql(f"EXPLAIN ANALYZE {sql}"))
    removed = [int(line.rsplit(":", 1)[1]) for line in plan.splitlines() if "Rows Removed" in line]
    assert sum(removed) < 1_000, plan


def test_the_one_statement_claim_reads_no_finished_job(tmp_path: Path) -> None:
    """SQLite claims in one UPDATE ... RETURNING: as the claim's SELECT, its candidates,
    their first-per-session subquery and the busy-session check read the waiting jobs
    only; the rows it updates are found by their primary key."""
    claims: list[tuple[str, object]] = []

    def capture(conn: object, cursor: object, sql: str, params: object, *_: object) -> None:
        if sql.lstrip().upper().startswith("UPDATE JOBS") and "RETURNING" in sql.upper():
            claims.append((sql, params))

    engine = ContextEngine(url=f"sqlite:///{tmp_path / 'a.db'}", home=tmp_path, jobs="inline")
    try:
        ran: list[Job] = []
        engine.on_turn_end("turn_end:test", ran.append)
        session = engine.create_session(user_id="u1")
        event.listen(engine.db.engine, "before_cursor_execute", capture)
        session.add_message("user", "hello")
        event.remove(engine.db.engine, "before_cursor_execute", capture)
        assert [job.session_id for job in ran] == [session.id] and claims
        sql, params = claims[0]
        with engine.db.read() as conn:
            plan = [
                str(row[-1]) for row in conn.exec_driver_sql(f"EXPLAIN QUERY PLAN {sql}", params)
            ]
    finally:
        engine.close()
    reads = [step for step in plan if step.startswith(("SEARCH", "SCAN"))]
    assert reads, plan
    for step in reads:
        assert "ix_jobs_waiting" in step or "INTEGER PRIMARY KEY" in step, plan
