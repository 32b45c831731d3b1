"""Pooled PostgreSQL connections that died while idle are replaced before use."""

from __future__ import annotations

import time
from collections.abc import Iterator
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


@pytest.fixture
def pg(pg_server: pgserver.PostgresServer, tmp_path: Path) -> Iterator[tuple[ContextEngine, str]]:
    """An engine on a database of its own, with its URL (no background feed reads: only
    the test's statements use the pool)."""
    url = new_pg_database(pg_server)
    with ContextEngine(
        url=url, home=tmp_path, embeddings={"provider": "none"}, erasure_poll=None
    ) as engine:
        yield engine, url


def texts(engine: ContextEngine, session_id: str) -> list[str]:
    return [e.text for e in engine.get_session(session_id, "u1").events()]


def test_a_connection_killed_while_idle_is_replaced_unseen(
    pg: tuple[ContextEngine, str], pg_server: pgserver.PostgresServer
) -> None:
    engine, url = pg
    session = engine.create_session(user_id="u1")
    session.add_message("user", "before the restart")
    assert kill_connections(pg_server, url) >= 1
    time.sleep(ALIVE_BYPASS_SECONDS + 0.2)

    session.add_message("user", "after the restart")  # no error reaches the caller

    assert texts(engine, session.id) == ["before the restart", "after the restart"]


def test_a_connection_killed_just_after_use_fails_once_then_the_pool_recovers(
    pg: tuple[ContextEngine, str], pg_server: pgserver.PostgresServer
) -> None:
    engine, url = pg
    session = engine.create_session(user_id="u1")
    session.add_message("user", "one")
    assert kill_connections(pg_server, url) >= 1
    # Within the bypass window the connection is not checked: the append fails at its
    # first statement, with the engine's error type, and writes nothing.
    with pytest.raises(StorageError, match="connection was lost"):
        session.add_message("user", "two")

    session.add_message("user", "three")

    assert texts(engine, session.id) == ["one", "three"]
    assert engine.get_session(session.id, "u1").verify().ok
