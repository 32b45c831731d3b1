"""With redaction on, personal data planted in every field of every REST write path (and
in the query strings of reads) reaches no storage: not the database, not the blob
files, not the audit file, not a log record (the access log included). Real HTTP server;
SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from agentctx import ContextEngine
from conftest import make_png
from privacy.pii_corpus import (
    FILE_NAMES,
    PLANTS,
    database_text,
    files_text,
    identifier,
    leaks,
    missing_negatives,
    planted_json,
    planted_text,
    root_logging,
)
from server.live import serve
from server.logcapture import captured_logs


@pytest.fixture
def debug_root() -> Iterator[None]:
    with root_logging():
        yield


def _ok(response: httpx.Response) -> Any:
    assert response.status_code < 300, response.text
    return response.json()


def _write_everything(client: httpx.Client) -> None:
    """Plant the corpus in every field of every REST write path."""
    words = planted_text()
    doc = planted_json()
    person = f"{PLANTS[13].text} {PLANTS[0].value}"
    session = _ok(
        client.post("/v1/sessions", json={"state": doc, "config": {"notes": doc}, "metadata": doc})
    )
    base = f"/v1/sessions/{session['session_id']}"
    turn = _ok(client.post(f"{base}/turns", json={"author": person}))
    events: list[dict[str, Any]] = [
        {
            "type": "user_input",
            "author": person,
            "parts": [{"kind": "text", "text": words}, {"kind": "json", "data": doc}],
            "meta": {"model": f"model {PLANTS[0].text}", "extra": doc},
            "idempotency_key": identifier("idem", 0),
        },
        *(
            {
                "type": "tool_call",
                "call_id": identifier("call", i),
                "parts": [{"kind": "json", "data": {**doc, "path": f"/tmp/{name}"}}],
                "payload": {"name": f"open_{name}"},
                "meta": {"tool_name": f"open_{name}", "model": identifier("model", i)},
            }
            for i, name in enumerate(FILE_NAMES)
        ),
        *(
            {
                "type": "tool_result",
                "call_id": identifier("call", i),
                "author": person,
                "parts": [
                    {"kind": "text", "text": (words + "\n") * 20},
                    {"kind": "json", "data": {"rows": [doc] * 10}},
                ],
                "meta": {"extra": {name: doc}},
            }
            for i, name in enumerate(FILE_NAMES)
        ),
    ]
    _ok(client.post(f"{base}/events/batch", json={"events": events, "turn_id": turn["turn_id"]}))
    for plant in PLANTS:  # one-line labels: one value each
        _ok(
            client.post(
                f"{base}/events",
                json={
                    "event": {
                        "type": "agent_response",
                        "author": plant.text,
                        "parts": [{"kind": "text", "text": plant.text}],
                        "meta": {"model": f"model {plant.text}"},
                    },
                    "turn_id": turn["turn_id"],
                },
            )
        )
    image = {"kind": "image_data", "data": base64.b64encode(make_png()).decode()}
    _ok(
        client.post(
            f"{base}/events",
            json={
                "event": {"type": "user_input", "parts": [{"kind": "text", "text": words}, image]}
            },
        )
    )
    state = client.get(f"{base}/state")
    _ok(
        client.patch(
            f"{base}/state",
            json={"changes": {"files": list(FILE_NAMES), words: words}},
            headers={"If-Match": state.headers["etag"]},
        )
    )
    _ok(client.post(f"{base}/context", json={"query": words, "budget": 2000}))
    memory = _ok(
        client.post(
            "/v1/memories",
            json={
                "content": words[:4000],
                "subject": PLANTS[0].text,
                "data": doc,
                "keywords": [p.text for p in PLANTS],
            },
        )
    )
    _ok(
        client.patch(
            f"/v1/memories/{memory['memory_id']}",
            json={"content": f"now {words}"[:4000], "data": doc, "reason": PLANTS[2].text},
            headers={"If-Match": f'"{memory["version"]}"'},
        )
    )
    # Reads carry personal data in their query strings: the access log must not keep them.
    for plant in PLANTS:
        client.get("/v1/memories/search", params={"query": plant.text})
        client.get("/v1/sessions", params={"search": plant.value[:60]})


def test_planted_personal_data_reaches_no_storage_through_rest(
    db_url: str, home: Path, debug_root: None
) -> None:
    settings: dict[str, Any] = {
        "redaction": {"enabled": True},
        "max_inline_bytes": 2048,
        "embeddings": {"provider": "hashing"},
    }
    with (
        ContextEngine(url=db_url, home=home, **settings) as engine,
        serve(engine, log_level="debug") as live,
        captured_logs() as logs,  # once the server configured its loggers
    ):
        headers = {"Authorization": f"Bearer {live.key('u1')}"}
        with httpx.Client(base_url=live.url, headers=headers, timeout=60) as client:
            _write_everything(client)
        # A request's access line is written once its answer is sent: wait for the last.
        deadline = time.monotonic() + 10
        while len(logs.of("agentctx.server.access")) < 2 * len(PLANTS) + 8:
            assert time.monotonic() < deadline, "the access log was not written"
            time.sleep(0.05)
        stored = database_text(engine)
        blob_dir = engine.settings.blob_path()
        audit_file = engine.settings.audit_path()

    assert leaks(stored) == [], "planted values in the database"
    assert missing_negatives(stored) == [], "hard negatives lost in the database"
    assert b"[EMAIL]" in stored and b"[PERSON]" in stored

    blobs = files_text(blob_dir)
    assert blobs, "nothing was offloaded: the size guard was not exercised"
    assert leaks(blobs) == [], "planted values in the blob files"

    assert audit_file is not None and audit_file.exists()
    assert leaks(audit_file.read_bytes()) == [], "planted values in the audit file"

    # Every record but the test's own HTTP client's (httpx logs the URLs it requests).
    client_side = ("httpx", "httpcore")
    server_side = [r for r in logs.records if not r.name.startswith(client_side)]
    logged = "\n".join([logs.text(exclude=client_side), *(repr(r.__dict__) for r in server_side)])
    leaking = sorted({r.name for r in server_side if leaks(repr(r.__dict__) + r.getMessage())})
    assert leaks(logged) == [], f"planted values in log records of {leaking}"
    assert any(r.name == "agentctx.server.access" for r in server_side)
