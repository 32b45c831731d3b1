"""A PostgreSQL append waits for the server as few times as its reads need, and what the
server refuses at COMMIT (now sent in the pipeline's last batch) still stores nothing.

Round trips are counted on the wire: libpq's own trace of every protocol message
(``PQtrace``) on the pooled connections, a turn each time the client, having sent, reads
what the server answered."""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pgserver
import pytest
from sqlalchemy import event, select

from agentctx import ContextEngine, Session
from agentctx.errors import InvalidEvent, StorageError
from agentctx.storage.schema import audit
from conftest import new_pg_database


@pytest.fixture
def pg(pg_server: pgserver.PostgresServer, tmp_path: Path) -> Iterator[ContextEngine]:
    """An engine on a database of its own; nothing in the background uses its pool."""
    with ContextEngine(
        url=new_pg_database(pg_server),
        home=tmp_path / "home",
        embeddings={"provider": "none"},
        erasure_poll=None,
    ) as engine:
        yield engine


class WireTrace:
    """libpq's trace of every connection the engine checks out while it is on."""

    def __init__(self, engine: ContextEngine, path: Path) -> None:
        self._path = path
        self._file = path.open("w")
        self._traced: list[Any] = []
        self._engine = engine.db.engine
        event.listen(self._engine, "checkout", self._on_checkout)

    def _on_checkout(self, dbapi_connection: Any, _record: Any, _proxy: Any) -> None:
        dbapi_connection.pgconn.trace(self._file.fileno())
        self._traced.append(dbapi_connection)

    def stop(self) -> list[str]:
        """Stop tracing; the traced messages' directions, in order (F: to the server)."""
        event.remove(self._engine, "checkout", self._on_checkout)
        for connection in self._traced:
            connection.pgconn.untrace()
        self._file.close()
        lines = self._path.read_text().splitlines()
        return [line.split("\t")[1] for line in lines if line.count("\t") >= 3]


def round_trips(directions: list[str]) -> int:
    """How many times the client waited for the server: each run of messages to the
    server followed by the server's answer."""
    runs = [direction for direction, _ in itertools.groupby(directions)]
    return sum(1 for sent, answered in itertools.pairwise(runs) if (sent, answered) == ("F", "B"))


def traced(engine: ContextEngine, tmp_path: Path, write: Any) -> int:
    trace = WireTrace(engine, tmp_path / "wire.trace")
    try:
        write()
    finally:
        directions = trace.stop()
    assert directions, "libpq traced nothing"
    return round_trips(directions)


def test_an_append_outside_a_turn_waits_for_the_server_twice(
    pg: ContextEngine, tmp_path: Path
) -> None:
    session = pg.create_session(user_id="u1")
    for i in range(3):  # the pool's connection and the compiled statements are warm
        session.add_message("user", f"warming up {i}")

    trips = traced(pg, tmp_path, lambda: session.add_message("user", "the one counted"))

    # BEGIN with the head and the turn-end jobs check; the turn, the event, the head's
    # update, the audit record and the COMMIT.
    assert trips == 2
    assert [e.text for e in session.events()][-1] == "the one counted"
    assert session.verify().ok


def test_an_agents_appends_in_a_turn_wait_for_the_server_twice(
    pg: ContextEngine, tmp_path: Path
) -> None:
    """The user's message, a tool call, its result and the answer, each in a turn that is
    open: the BEGIN, the turn's state, the call ids' earlier events and the head are sent
    together, then the writes with the COMMIT."""
    session = pg.create_session(user_id="u1")
    with session.turn() as turn:
        turn.add_message("user", "warming up")
        turn.add_tool_call("lookup", {"id": 0}, call_id="c0")
        turn.add_tool_result("c0", content="warm")
    with session.turn() as turn:
        trips = [
            traced(pg, tmp_path, lambda: turn.add_message("user", "find order 7")),
            traced(pg, tmp_path, lambda: turn.add_tool_call("lookup", {"id": 7}, call_id="c1")),
            traced(pg, tmp_path, lambda: turn.add_tool_result("c1", content="order 7: shipped")),
            traced(pg, tmp_path, lambda: turn.add_message("assistant", "It has shipped.")),
        ]
    assert trips == [2, 2, 2, 2]
    result = [e for e in session.events() if e.call_id == "c1"][-1]
    assert result.meta.tool_name == "lookup"  # the result took its call's tool name
    assert session.verify().ok


def test_tool_links_are_still_checked_when_read_with_the_head(pg: ContextEngine) -> None:
    """The call ids' stored events, read with the head, still refuse a result without
    its call, a second result, and a call id reused while its call is unanswered."""
    session = pg.create_session(user_id="u1")
    with session.turn() as turn:
        with pytest.raises(InvalidEvent, match="unknown call_id"):
            turn.add_tool_result("nope", content="x")
        turn.add_tool_call("lookup", {"id": 1}, call_id="c1")
        with pytest.raises(InvalidEvent, match="no tool_result yet"):
            turn.add_tool_call("lookup", {"id": 2}, call_id="c1")
        turn.add_tool_result("c1", content="one")
        with pytest.raises(InvalidEvent, match="already has a tool_result"):
            turn.add_tool_result("c1", content="two")
    assert [e.type.value for e in session.events()] == ["tool_call", "tool_result"]
    assert session.verify().ok


def test_the_jobs_check_sent_with_the_head_still_finds_waiting_jobs(
    pg: ContextEngine, tmp_path: Path
) -> None:
    """The append's answer to "has the session jobs to run" comes from the read sent with
    the head: a job another turn left waiting is found (and run inline by the append)."""
    ran: list[str | None] = []
    pg.on_turn_end("note", lambda job: ran.append(job.turn_id))
    session = pg.create_session(user_id="u1")
    with pg.db.write() as conn:
        pg.jobs.enqueue(conn, "other:kind", user_id="u1", session_id=session.id)
    pg.jobs.register("other:kind", lambda job: ran.append("other"))

    session.add_message("user", "hello")

    assert "other" in ran and len(ran) == 2  # the waiting job and this turn's own


def _refuse_at_commit(engine: ContextEngine) -> None:
    """A deferred constraint trigger: an event by the author "refused" is refused when
    its transaction commits, not when it is inserted."""
    with engine.db.write() as conn:
        conn.exec_driver_sql(
            "CREATE FUNCTION refuse_event() RETURNS trigger LANGUAGE plpgsql AS "
            "$$ BEGIN RAISE EXCEPTION 'refused at commit'; END $$"
        )
        conn.exec_driver_sql(
            "CREATE CONSTRAINT TRIGGER refuse_at_commit AFTER INSERT ON events "
            "DEFERRABLE INITIALLY DEFERRED FOR EACH ROW "
            "WHEN (NEW.author = 'refused') EXECUTE FUNCTION refuse_event()"
        )


def _appends_audited(engine: ContextEngine, session: Session) -> list[str]:
    with engine.db.read() as conn:
        return list(
            conn.execute(
                select(audit.c.status).where(
                    audit.c.session_id == session.id, audit.c.action == "append"
                )
            ).scalars()
        )


def test_a_refusal_at_commit_stores_nothing_and_the_connection_goes_on(
    pg: ContextEngine,
) -> None:
    _refuse_at_commit(pg)
    session = pg.create_session(user_id="u1")
    session.add_message("user", "kept")
    audited = _appends_audited(pg, session)

    # Pipelined (a message outside a turn) and not (an idempotency key is looked up
    # first): either way a typed error, the server's reason in it.
    with pytest.raises(StorageError, match="refused at commit"):
        session.add_message("user", "refused text", author="refused")
    with pytest.raises(StorageError, match="refused at commit"):
        session.add_message("user", "refused again", author="refused", idempotency_key="k1")

    # Nothing of it stored: not the event, its turn's record, the head's move, nor an
    # audit row of a success (the failure is audited apart, as every failed write is).
    assert [e.text for e in session.events()] == ["kept"]
    assert session.verify().ok
    assert _appends_audited(pg, session)[: len(audited)] == audited
    assert "ok" not in _appends_audited(pg, session)[len(audited) :]
    # The pooled connection is clean: the next appends (pipelined and not) go on.
    session.add_message("user", "after")
    with session.turn() as turn:
        turn.add_message("user", "inside a turn")
    assert [e.text for e in session.events()] == ["kept", "after", "inside a turn"]
    assert session.verify().ok


def test_a_write_that_sent_its_own_begin_gives_its_connection_back_as_it_found_it(
    pg: ContextEngine,
) -> None:
    """A pipelined write sends its BEGIN itself, the driver in autocommit mode meanwhile;
    every connection goes back to the pool out of that mode, whether the write committed,
    raised in its block or was refused at its COMMIT. A pooled connection left in it
    would commit each statement of a later transaction on its own."""
    _refuse_at_commit(pg)
    modes: list[bool] = []

    def on_checkin(dbapi_connection: Any, _record: Any) -> None:
        if dbapi_connection is not None:
            modes.append(dbapi_connection.autocommit)

    event.listen(pg.db.engine, "checkin", on_checkin)
    try:
        session = pg.create_session(user_id="u1")
        session.add_message("user", "kept")  # committed
        with session.turn() as turn, pytest.raises(InvalidEvent, match="unknown call_id"):
            turn.add_tool_result("nope", content="x")  # raised in the block, after the reads
        with pytest.raises(StorageError, match="refused at commit"):
            session.add_message("user", "refused", author="refused")  # refused at COMMIT
        # Not pipelined (its key is looked up first): a transaction of its own.
        session.add_message("user", "keyed", idempotency_key="k1")
    finally:
        event.remove(pg.db.engine, "checkin", on_checkin)
    assert len(modes) >= 4
    assert not any(modes), modes
    assert [e.text for e in session.events()] == ["kept", "keyed"]
    assert session.verify().ok
