"""A real redis-server for the cache tests, on a free port in a temporary folder."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import redis

from agentctx import ContextEngine
from agentctx.cache import HotCache


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class RedisServer:
    """One redis-server process (no persistence); stop, pause and resume it at will."""

    def __init__(self, folder: Path) -> None:
        binary = shutil.which("redis-server")
        assert binary, "redis-server is not installed (apt-get install -y redis-server)"
        self.folder = folder
        self.port = _free_port()
        self.process = subprocess.Popen(
            [
                binary,
                "--port",
                str(self.port),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
                str(folder),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        client = redis.Redis(port=self.port, socket_timeout=1)
        deadline = time.monotonic() + 10
        while True:
            try:
                client.ping()
                break
            except redis.ConnectionError:
                if time.monotonic() > deadline or self.process.poll() is not None:
                    self.stop()
                    raise RuntimeError("redis-server did not start") from None
                time.sleep(0.02)
        client.close()

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def client(self) -> redis.Redis:
        return redis.Redis(port=self.port, socket_timeout=2)

    def pause(self) -> None:
        """Freeze the server: connections hang (the slow, worst case of a dead Redis)."""
        self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        self.process.send_signal(signal.SIGCONT)

    def stop(self) -> None:
        """Kill the server (SIGKILL, as a crash would)."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGCONT)
            self.process.kill()
            self.process.wait(timeout=10)


@contextmanager
def redis_server(folder: Path) -> Iterator[RedisServer]:
    server = RedisServer(folder)
    try:
        yield server
    finally:
        server.stop()


def attach_cache(engine: ContextEngine, cache: HotCache) -> None:
    """What the engine's wiring does with ``settings.cache``: both services read
    through ``cache``, and deletions drop from it."""
    engine.cache = cache
    engine._service.cache = cache
    engine.memory.use_cache(cache)
    engine._data.erasures.held.cache = cache


def make_engine(
    db_url: str, home: Path, server: RedisServer | None, **cache: object
) -> ContextEngine:
    """An engine on ``db_url`` (lightweight embeddings); with ``server``, reading
    through a Redis cache configured by ``cache``, else through none."""
    from agentctx.cache import CacheConfig, build_cache

    engine = ContextEngine(
        url=db_url,
        home=home,
        embeddings={"provider": "hashing"},
        cache={"local_events": 0} if server is None else {},
    )
    if server is not None:
        config = CacheConfig.model_validate({"url": server.url, "timeout_ms": 500, **cache})
        attach_cache(engine, build_cache(config))
    return engine
