"""``agentctx serve --demo``, the README's main command, as a real process."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import httpx

from server.live import free_port


def test_serve_demo_prints_a_working_admin_key_and_serves_the_inspector(tmp_path: Path) -> None:
    port = free_port()
    env = {**os.environ, "AGENTCTX_EMBEDDINGS": '{"provider": "hashing"}', "COLUMNS": "200"}
    command = [sys.executable, "-m", "agentctx.cli.main", "--home", str(tmp_path / "home")]
    process = subprocess.Popen(
        [*command, "serve", "--demo", "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: list[str] = []
    try:
        assert process.stdout is not None
        deadline = time.monotonic() + 120
        token = None
        while token is None and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            lines.append(line)
            found = re.search(r"/ui#key=(actx_\S+)", line)
            token = found.group(1) if found else None
        assert token is not None, "".join(lines)
        url = f"http://127.0.0.1:{port}"
        while time.monotonic() < deadline:
            try:
                if httpx.get(f"{url}/healthz").status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.1)
        headers = {"Authorization": f"Bearer {token}"}
        sessions = httpx.get(f"{url}/v1/sessions", params={"user_id": "demo-user"}, headers=headers)
        (demo,) = sessions.json()["items"]
        events = httpx.get(
            f"{url}/v1/sessions/{demo['session_id']}/events",
            params={"user_id": "demo-user"},
            headers=headers,
        ).json()["items"]
        assert any(p["kind"] == "image" for e in events for p in e["parts"])
        page = httpx.get(f"{url}/ui")
        assert page.status_code == 200 and "<script" in page.text
        assert httpx.get(f"{url}/v1/sessions").status_code == 401
    finally:
        process.terminate()
        process.wait(timeout=30)
    # A second start finds the key and issues none.
    again = subprocess.run(
        [*command, "keys", "list"], capture_output=True, text=True, env=env, check=True
    )
    assert "bootstrap" in again.stdout
