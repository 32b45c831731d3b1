"""Pooled PostgreSQL connections that died while idle are replaced before use."""

from __future__ import annotations

import time
from pathlib import Path

import pgserver
import pytest
from sqlalchemy.engine import make_url

from agentctx import ContextEngine
from agentctx.errors import StorageError
from agentctx.storage.database import ALIVE_BYPASS_SECONDS
from conftest import new_pg_database


def kill_connections(server: pgserver.PostgresServer, url: str) -> int:
    """Terminate every server process serving ``url``'s database; how many there were."""
    name = make_url(url).database
    out = server.psql(
        "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
        f"WHERE datname = '{name}' AND pid <> pg_backend_pid();"
    )
    return int(out.split("\n")[2].strip())


def test_a_connection_killed_while_idle_is_replaced_unseen(
    pg_server: pgserver.PostgresServer, tmp_path: Path
) -> None:
    url = new_pg_database(pg_server)
    with ContextEngine(
        url=url, home=tmp_path, embeddings={"provider": "none"}, erasure_poll=None
    ) as engine:
        session = engine.create_session(user_id="u1")
        session.add_message("user", "before the restart")
        assert kill_connections(pg_server, url) >= 1
        time.sleep(ALIVE_BYPASS_SECONDS + 0.2)

        session.add_message("user", "after the restart")  # no error reaches the caller

        assert [e.text for e in engine.get_session(session.id, "u1").events()] == [
            "before the restart",
            "after the restart",
        ]


def test_a_connection_killed_just_after_use_fails_once_then_the_pool_recovers(
    pg_server: pgserver.PostgresServer, tmp_path: Path
) -> None:
    url = new_pg_database(pg_server)
    with ContextEngine(
        url=url, home=tmp_path, embeddings={"provider": "none"}, erasure_poll=None
    ) as engine:
        session = engine.create_session(user_id="u1")
        session.add_message("user", "one")
        kill_connections(pg_server, url)
        # Within the bypass window the connection is not checked: the append fails at its
        # first statement, with the engine's error type, and writes nothing.
        with pytest.raises(StorageError, match="connection was lost"):
            session.add_message("user", "two")
        session.add_message("user", "three")
        texts = [e.text for e in engine.get_session(session.id, "u1").events()]
        assert texts == ["one", "three"]
        assert engine.get_session(session.id, "u1").verify().ok


@pytest.mark.parametrize("idle", [0.0, ALIVE_BYPASS_SECONDS + 0.2])
def test_reads_after_idle_periods_work(
    pg_server: pgserver.PostgresServer, tmp_path: Path, idle: float
) -> None:
    url = new_pg_database(pg_server)
    with ContextEngine(
        url=url, home=tmp_path, embeddings={"provider": "none"}, erasure_poll=None
    ) as engine:
        session = engine.create_session(user_id="u1")
        for i in range(3):
            session.add_message("user", f"m{i}")
            time.sleep(idle)
        assert len(session.events(last=2)) == 2
