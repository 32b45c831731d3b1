"""``agentctx serve --demo``, the README's main command, as a real process.

The first start prints an admin key inside an inspector link that opens the demo
session; a restart (keys exist) prints the command that issues a key, which works as
printed: it is run through a shell, from a folder whose files a bare ``*`` would match.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import httpx

from agentctx import ContextEngine
from agentctx.demo import DEMO_USER
from agentctx.server.auth import ApiKeyStore
from server.live import free_port

ENV = {**os.environ, "AGENTCTX_EMBEDDINGS": '{"provider": "hashing"}', "COLUMNS": "200"}
AGENTCTX = [sys.executable, "-m", "agentctx.cli.main"]


@dataclass
class Served:
    """A running ``agentctx serve`` and what it printed so far."""

    process: subprocess.Popen[str]
    url: str
    lines: list[str] = field(default_factory=list)

    def read_until(self, pattern: str, timeout: float = 120) -> re.Match[str]:
        """Read output lines until one matches ``pattern``."""
        assert self.process.stdout is not None
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.lines.append(line)
            found = re.search(pattern, line)
            if found:
                return found
        raise AssertionError(f"no line matches {pattern!r}:\n{''.join(self.lines)}")

    def wait_ready(self, timeout: float = 60) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{self.url}/healthz").status_code == 200:
                    return
            except httpx.TransportError:
                time.sleep(0.1)
        raise AssertionError("the server did not start:\n" + "".join(self.lines))


@contextmanager
def serve(home: Path, *args: str) -> Iterator[Served]:
    port = free_port()
    process = subprocess.Popen(
        [*AGENTCTX, "--home", str(home), "serve", "--port", str(port), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=ENV,
    )
    try:
        yield Served(process, f"http://127.0.0.1:{port}")
    finally:
        process.terminate()
        process.wait(timeout=30)


def run_printed(command: str, cwd: Path) -> str:
    """Run a printed ``agentctx …`` line through ``sh`` (``agentctx`` standing for this
    interpreter's module); returns its stdout."""
    assert command.startswith("agentctx "), command
    line = shlex.join(AGENTCTX) + command.removeprefix("agentctx")
    result = subprocess.run(
        ["sh", "-c", line], cwd=cwd, capture_output=True, text=True, env=ENV, check=False
    )
    assert result.returncode == 0, (line, result.stdout, result.stderr)
    return result.stdout


def get(served: Served, token: str, path: str, **params: str) -> httpx.Response:
    return httpx.get(
        f"{served.url}{path}", params=params, headers={"Authorization": f"Bearer {token}"}
    )


def test_serve_demo_prints_links_and_commands_that_work_as_printed(tmp_path: Path) -> None:
    home = tmp_path / "agentctx home"  # a space: printed paths are quoted

    # First start: an admin key in a link that names the demo user and session.
    with serve(home, "--demo") as served:
        link = urlsplit(served.read_until(r"^inspector: (http://\S+)$").group(1))
        fragment = {name: values[0] for name, values in parse_qs(link.fragment).items()}
        assert link.path == "/ui" and set(fragment) == {"key", "user", "session"}
        token, sid = fragment["key"], fragment["session"]
        assert token.startswith("actx_") and fragment["user"] == DEMO_USER
        served.wait_ready()
        (demo,) = get(served, token, "/v1/sessions", user_id=DEMO_USER).json()["items"]
        assert demo["session_id"] == sid
        events = get(served, token, f"/v1/sessions/{sid}/events", user_id=DEMO_USER)
        assert any(p["kind"] == "image" for e in events.json()["items"] for p in e["parts"])
        page = httpx.get(f"{served.url}/ui")
        assert page.status_code == 200 and "<script" in page.text
        assert httpx.get(f"{served.url}/v1/sessions").status_code == 401

    # A restart issues no key: it prints the view of the new demo session and the
    # command that issues a key able to open it.
    with serve(home, "--demo") as served:
        sid = served.read_until(r"^inspector: http://\S+/ui#/sessions/(\S+)$").group(1)
        issue = served.read_until(r"to issue one: (agentctx .+)$").group(1)
        assert "actx_" not in "".join(served.lines)
        served.wait_ready()
        printed = run_printed(issue, cwd=tmp_path)
        found = re.search(r"actx_\S+", printed)
        assert found is not None, printed
        token = found.group(0)
        events = get(served, token, f"/v1/sessions/{sid}/events")  # no user_id needed
        assert events.status_code == 200 and events.json()["items"]

    # Without --demo the key acts for any user; the '*' reaches agentctx unexpanded
    # (tmp_path holds the home folder, which a bare * would match).
    with serve(home) as served:
        issue = served.read_until(r"to issue one: (agentctx .+)$").group(1)
    printed = run_printed(issue, cwd=tmp_path)
    found = re.search(r"^key ([0-9a-f]{16}) ", printed, re.M)
    assert found is not None, printed
    key_id = found.group(1)
    with ContextEngine(home=home) as engine:
        keys = {key.key_id: key for key in ApiKeyStore(engine.db).list()}
    assert keys[key_id].users == ("*",) and keys[key_id].scopes == ("read",)
    assert sorted(key.label or "" for key in keys.values()) == [
        "bootstrap",
        "inspector",
        "inspector",
    ]
