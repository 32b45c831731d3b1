"""The processes of ``agentctx bench server``: replicas, and the CPU time they spend.

Replicas are ``python -m agentctx.cli.main --url URL --home HOME serve`` processes, one
uvicorn server each, sharing the database and the blob folder. CPU time is read from
``/proc`` (Linux): per replica, summed over the PostgreSQL processes of the bench's own
server, for the calling process (the load generator), and the machine's busy share.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from pathlib import Path

from pydantic import BaseModel


class Cpu(BaseModel):
    """CPU seconds spent during the timed window, and the machine's busy share."""

    wall_s: float
    replicas_s: list[float]
    postgres_s: float | None = None
    load_generator_s: float
    machine_busy: float  # busy share of all cores, 0..1


def free_port() -> int:
    """A TCP port free on 127.0.0.1 right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


_TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def process_cpu_s(pid: int) -> float:
    """User + system CPU seconds of a process so far (0 once it is gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return 0.0
    return (int(fields[11]) + int(fields[12])) / _TICKS


def machine_cpu() -> tuple[float, float]:
    """(busy, total) jiffies of all cores so far, from /proc/stat."""
    with contextlib.suppress(OSError, ValueError):
        values = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
        idle = values[3] + (values[4] if len(values) > 4 else 0)
        return float(sum(values) - idle), float(sum(values))
    return 0.0, 0.0


def postgres_pids(datadir: Path) -> list[int]:
    """The postmaster serving ``datadir`` and its backends."""
    parents: set[int] = set()
    table: dict[int, int] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        with contextlib.suppress(OSError, IndexError, ValueError):
            if str(datadir) in (entry / "cmdline").read_bytes().decode(errors="replace"):
                parents.add(int(entry.name))
            table[int(entry.name)] = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
    return sorted(parents | {pid for pid, ppid in table.items() if ppid in parents})


class Replica:
    """One ``agentctx serve`` process."""

    def __init__(self, process: subprocess.Popen[bytes], port: int, log: Path) -> None:
        self.process = process
        self.base = f"http://127.0.0.1:{port}"
        self.log = log

    def wait_ready(self, timeout_s: float) -> None:
        """Wait until ``/readyz`` answers 200 (the process imported, migrated, serves)."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                tail = self.log.read_text(errors="replace")[-2000:]
                raise RuntimeError(f"replica {self.base} exited: {tail}")
            with (
                contextlib.suppress(OSError, urllib.error.URLError),
                urllib.request.urlopen(f"{self.base}/readyz", timeout=5) as response,
            ):
                if response.status == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"replica {self.base} not ready after {timeout_s:.0f} s")


@contextlib.contextmanager
def replicas(url: str, home: Path, count: int, embedder: str) -> Iterator[list[Replica]]:
    """Start ``count`` replicas on ``url`` sharing ``home`` (blobs); stop them at the end.

    The processes are started, not waited for: call ``wait_ready`` on each.
    """
    env = dict(os.environ)
    if embedder != "auto":
        env["AGENTCTX_EMBEDDINGS"] = f'{{"provider": "{embedder}"}}'
    started: list[Replica] = []
    try:
        for index in range(count):
            port = free_port()
            log = home.parent / f"replica-{index}.log"
            command = [
                *(sys.executable, "-m", "agentctx.cli.main", "--url", url, "--home", str(home)),
                *("serve", "--host", "127.0.0.1", "--port", str(port)),
                *("--no-bootstrap-key", "--no-ui", "--log-level", "warning"),
            ]
            with log.open("wb") as sink:
                process = subprocess.Popen(command, env=env, stdout=sink, stderr=subprocess.STDOUT)
            started.append(Replica(process, port, log))
        yield started
    finally:
        for replica in started:
            replica.process.terminate()
        for replica in started:
            try:
                replica.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                replica.process.kill()
                replica.process.wait()


class CpuMeter:
    """CPU readings at the start and the end of the timed window (``on_window``)."""

    def __init__(self, replica_pids: Sequence[int], postgres_dir: Path | None) -> None:
        self._replicas = list(replica_pids)
        self._postgres_dir = postgres_dir
        self._marks: dict[str, tuple[float, dict[int, float], float, float, float]] = {}

    def __call__(self, when: str) -> None:
        pids = [*self._replicas, *(postgres_pids(self._postgres_dir) if self._postgres_dir else [])]
        busy, total = machine_cpu()
        own = sum(os.times()[:2])
        self._marks[when] = (
            time.perf_counter(),
            {p: process_cpu_s(p) for p in pids},
            own,
            busy,
            total,
        )

    def result(self) -> Cpu:
        """What was spent between "start" and "end"."""
        t0, cpu0, own0, busy0, total0 = self._marks["start"]
        t1, cpu1, own1, busy1, total1 = self._marks["end"]
        # A PostgreSQL backend born in the window counts from zero; one that ended is lost.
        spent = {pid: cpu1[pid] - cpu0.get(pid, 0.0) for pid in cpu1}
        postgres = [value for pid, value in spent.items() if pid not in self._replicas]
        return Cpu(
            wall_s=round(t1 - t0, 3),
            replicas_s=[round(spent.get(pid, 0.0), 2) for pid in self._replicas],
            postgres_s=round(sum(postgres), 2) if self._postgres_dir else None,
            load_generator_s=round(own1 - own0, 2),
            machine_busy=round((busy1 - busy0) / (total1 - total0), 3) if total1 > total0 else 0.0,
        )
