"""Shared fixtures: every storage test runs on SQLite and on a real PostgreSQL.

PostgreSQL comes from the ``pgserver`` package (PostgreSQL 16 with pgvector),
started once per test process; each test gets a database of its own.
"""

from __future__ import annotations

import io
import os
import tempfile
import uuid
from collections.abc import Iterator, Sequence
from datetime import UTC, datetime, timedelta
from pathlib import Path

# pgserver's platformdirs wants a private runtime dir; give it one instead of a warning.
_runtime = Path(tempfile.gettempdir()) / f"agentctx-test-runtime-{os.getuid()}"
_runtime.mkdir(mode=0o700, exist_ok=True)
os.environ.setdefault("XDG_RUNTIME_DIR", str(_runtime))
# Follow-up work runs inline in the tests: a test reads what a turn's end computed as soon
# as the turn is over, and a search embeds what it searches. The default ("background":
# worker threads, the model loading as the engine starts) is tested by the tests that
# ask for it by name (tests/test_background_work.py and the benchmarks' tests).
os.environ.setdefault("AGENTCTX_JOBS", "inline")

import pgserver  # noqa: E402
import pytest  # noqa: E402
from PIL import Image, ImageDraw  # noqa: E402

from agentctx import ContextEngine, Session  # noqa: E402
from agentctx.events import EventDraft, EventType, Role, TextPart  # noqa: E402

BACKENDS = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def pg_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[pgserver.PostgresServer]:
    server = pgserver.get_server(tmp_path_factory.mktemp("pgdata"), cleanup_mode="stop")
    yield server
    server.cleanup()


def new_pg_database(server: pgserver.PostgresServer) -> str:
    """Create an empty database and return its URL."""
    name = "t_" + uuid.uuid4().hex[:16]
    server.psql(f"CREATE DATABASE {name};")
    return server.get_uri(name)


@pytest.fixture(params=BACKENDS)
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def db_url(backend: str, tmp_path: Path, request: pytest.FixtureRequest) -> str:
    if backend == "sqlite":
        return f"sqlite:///{tmp_path / 'agentctx.db'}"
    return new_pg_database(request.getfixturevalue("pg_server"))


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def engine(db_url: str, home: Path) -> Iterator[ContextEngine]:
    with ContextEngine(url=db_url, home=home) as eng:
        yield eng


@pytest.fixture
def quick_engine(tmp_path: Path) -> Iterator[ContextEngine]:
    """An engine on a SQLite file with the hashing embedder and jobs inline: for tests of
    how windows are made, which need neither the model nor a second backend."""
    with ContextEngine(
        url=f"sqlite:///{tmp_path / 'quick.db'}",
        home=tmp_path / "home",
        embeddings={"provider": "hashing"},
        jobs="inline",
    ) as eng:
        yield eng


def make_png(width: int = 320, height: int = 200, seed: int = 0) -> bytes:
    """A real PNG with some drawn content that differs by ``seed``."""
    image = Image.new("RGB", (width, height), (seed * 37 % 256, 90, 160))
    draw = ImageDraw.Draw(image)
    draw.rectangle((10 + seed % 50, 10, 120 + seed % 50, 80), fill=(255, 255, 255))
    draw.text((20, 100), f"frame {seed}", fill=(0, 0, 0))
    buffer = io.BytesIO()
    image.save(buffer, "PNG")
    return buffer.getvalue()


@pytest.fixture
def png() -> bytes:
    return make_png()


CHAT_START = datetime(2025, 1, 6, 18, 0, tzinfo=UTC)


def append_chat(
    session: Session, chat: Sequence[tuple[str, str]], *, user: str, start: int = 0
) -> None:
    """Append a chat's (author, text) turns, a minute apart from ``CHAT_START`` plus
    ``start`` minutes: ``user``'s as user input, everyone else's as agent responses."""
    for i, (who, text) in enumerate(chat, start=start):
        session.append(
            EventDraft(
                type=EventType.USER_INPUT if who == user else EventType.AGENT_RESPONSE,
                role=Role.USER if who == user else Role.ASSISTANT,
                author=who,
                parts=(TextPart(text=text),),
                ts=CHAT_START + timedelta(minutes=i),
            )
        )
