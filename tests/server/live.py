"""A real HTTP server for tests: uvicorn serving the app in a thread on a free port."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import uvicorn
from fastapi import FastAPI

from agentctx import ContextEngine
from agentctx.server.app import create_app
from agentctx.server.auth import ApiKeyStore
from agentctx.server.config import ServerConfig
from agentctx.server.runner import uvicorn_config


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Live:
    """A running server: its address and keys issued for tests."""

    url: str
    engine: ContextEngine
    keys: ApiKeyStore
    app: FastAPI

    def key(
        self, *users: str, scopes: tuple[str, ...] = ("read", "write"), tenant: str = "default"
    ) -> str:
        """Issue a key and return its token."""
        return self.keys.create(list(users), scopes, tenant=tenant)[1]


@contextmanager
def serve(
    engine: ContextEngine, config: ServerConfig | None = None, *, log_level: str = "warning"
) -> Iterator[Live]:
    """Serve ``engine`` over real HTTP until the block ends, configured as
    ``agentctx serve`` configures it."""
    port = free_port()
    config = (config or ServerConfig()).model_copy(update={"host": "127.0.0.1", "port": port})
    app = create_app(engine, config)
    server = uvicorn.Server(uvicorn_config(app, "127.0.0.1", port, log_level=log_level))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 20
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError("the test server did not start")
        time.sleep(0.01)
    try:
        yield Live(f"http://127.0.0.1:{port}", engine, ApiKeyStore(engine.db), app)
    finally:
        server.should_exit = True
        thread.join(timeout=10)
