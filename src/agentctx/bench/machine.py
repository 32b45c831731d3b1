"""Facts about the machine and servers a benchmark ran on, recorded next to its figures."""

from __future__ import annotations

import contextlib
import os
import platform
import sqlite3
import subprocess
import warnings
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

from pydantic import BaseModel
from sqlalchemy import text

from agentctx.errors import MissingExtra
from agentctx.storage.database import Database


class Machine(BaseModel):
    """Hardware and software the figures were measured with."""

    nproc: int
    cpu_model: str
    memory_gb: float | None
    platform: str
    python: str
    sqlite: str
    agentctx: str
    revision: str | None = None  # git commit of the measured source tree, "+dirty" if edited
    filesystem: str | None
    # Other work on the machine skews figures; the 1/5/15-minute load shows whether there was any.
    load_average_start: list[float] = []
    load_average_end: list[float] = []
    postgres: str | None = None
    postgres_settings: dict[str, str] = {}
    peer: str | None = None
    peer_sqlite_synchronous: int | None = None
    agentctx_settings: dict[str, str] = {}

    def fact_lines(self) -> list[str]:
        """CPU, software, load and the settings the figures were measured with, a line each."""
        lines = [
            f"CPU: {self.cpu_model}, {self.nproc} cores; memory: {self.memory_gb} GB",
            f"Python {self.python}; SQLite {self.sqlite}; agentctx {self.agentctx}"
            + (f" (git {self.revision})" if self.revision else ""),
            f"load average (1/5/15 min) at start: {self.load_average_start}, "
            f"at end: {self.load_average_end}",
        ]
        if self.agentctx_settings:
            lines.append(
                "agentctx settings: "
                + ", ".join(f"{key}={value}" for key, value in self.agentctx_settings.items())
            )
        return lines


def cpu_model() -> str:
    """The CPU model name from /proc/cpuinfo (or the platform's processor string)."""
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def memory_gb() -> float | None:
    """Total memory from /proc/meminfo."""
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 1024 / 1024, 1)
    return None


def filesystem_of(path: Path) -> str | None:
    """The filesystem type holding ``path`` (fsync cost depends on it: tmpfs makes it free)."""
    best, kind = "", None
    with contextlib.suppress(OSError):
        resolved = str(path.resolve())
        for line in Path("/proc/mounts").read_text().splitlines():
            fields = line.split()
            if len(fields) < 3:
                continue
            mount = fields[1]
            inside = resolved == mount or resolved.startswith(mount.rstrip("/") + "/")
            if inside and len(mount) > len(best):
                best, kind = mount, f"{fields[2]} ({fields[0]} on {mount})"
    return kind


def load_average() -> list[float]:
    """The 1, 5 and 15-minute load averages (empty where the OS has none)."""
    try:
        return [round(value, 2) for value in os.getloadavg()]
    except OSError:
        return []


def _git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, timeout=10, check=True
    ).stdout.strip()


def source_revision() -> str | None:
    """The git commit agentctx was imported from, when it runs from a checkout."""
    package = Path(__file__).resolve().parents[1]
    try:
        head = _git(package, "rev-parse", "--short", "HEAD")
        dirty = _git(package, "status", "--porcelain", "--untracked-files=no", "--", ".")
    except (OSError, subprocess.SubprocessError):
        return None
    return f"{head}+dirty" if dirty else head


def machine_facts(workdir: Path) -> Machine:
    """Everything about this machine that does not need a server connection."""
    try:
        version = metadata.version("agentctx")
    except metadata.PackageNotFoundError:
        version = "unknown"
    return Machine(
        nproc=os.cpu_count() or 0,
        cpu_model=cpu_model(),
        memory_gb=memory_gb(),
        platform=platform.platform(),
        python=platform.python_version(),
        sqlite=sqlite3.sqlite_version,
        agentctx=version,
        revision=source_revision(),
        filesystem=filesystem_of(workdir),
        load_average_start=load_average(),
    )


def postgres_facts(db: Database) -> tuple[str, dict[str, str]]:
    """The server version and the settings that decide commit cost."""
    names = ("fsync", "synchronous_commit", "wal_sync_method", "shared_buffers")
    with db.read() as conn:
        version = str(conn.execute(text("SHOW server_version")).scalar_one())
        settings = {name: str(conn.execute(text(f"SHOW {name}")).scalar_one()) for name in names}
    return version, settings


@contextlib.contextmanager
def temporary_postgres(parent: Path) -> Iterator[str]:
    """Start a throwaway PostgreSQL server under ``parent``; yields a fresh database's URL."""
    try:
        with warnings.catch_warnings():
            # platformdirs warns when XDG_RUNTIME_DIR is unset; its /tmp fallback works.
            warnings.simplefilter("ignore")
            import pgserver  # noqa: PLC0415 - optional, only when no --pg-url is given
    except ImportError as exc:
        raise MissingExtra("dev", "pgserver") from exc
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        server = pgserver.get_server(  # type: ignore[attr-defined]
            parent / "pgdata", cleanup_mode="stop"
        )
    try:
        server.psql("CREATE DATABASE agentctx_bench;")
        yield server.get_uri("agentctx_bench")
    finally:
        server.cleanup()
