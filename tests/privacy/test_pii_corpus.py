"""With redaction on, personal data planted in every field of every library and MCP write
path reaches no storage: not the database (SQLite files, every PostgreSQL row), not the
blob files, not the audit file, not a log record. Hard negatives are stored unchanged."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pii_corpus import (
    FILE_NAMES,
    ID_PLANTS,
    PLANTS,
    RECORD_VALUES,
    LogLines,
    database_text,
    files_text,
    identifier,
    leaks,
    missing_negatives,
    planted_json,
    planted_text,
    root_logging,
)
from sqlalchemy import text

from agentctx import ContextEngine, EventType
from agentctx.memory.tool import handle_memory_tool
from conftest import make_png


@pytest.fixture
def root_records() -> Iterator[LogLines]:
    handler = LogLines()
    with root_logging(handler):
        yield handler


def _write_everything(engine: ContextEngine) -> None:
    """Plant the corpus in every field of every library write path."""
    words = planted_text()
    doc = planted_json()
    person = f"{PLANTS[13].text} {PLANTS[0].value}"  # a name and an address, as free text
    short = "; ".join(p.text for p in PLANTS[:6])  # fits a memory's subject
    session = engine.create_session(
        user_id="u1", agent_id="helper", state=doc, config={"notes": doc}, metadata=doc
    )
    with session.turn(request_id=identifier("request", 0), author=person) as turn:
        turn.add_message(
            "user",
            words,
            metadata=doc,
            author=person,
            model=f"model {PLANTS[0].text}",
            idempotency_key=identifier("idem", 0),
            images=[make_png(seed=1)],
        )
        for i in range(len(FILE_NAMES)):
            call = turn.add_tool_call(
                f"open_{FILE_NAMES[i]}",
                {**doc, "path": f"/tmp/{FILE_NAMES[i]}"},
                call_id=identifier("call", i),
                author=person,
                model=identifier("model", i),
                metadata={FILE_NAMES[i]: doc},
                idempotency_key=identifier("idem", i + 1),
            )
            # The caller pairs the result by the call id it chose: still one pair.
            result = turn.add_tool_result(
                identifier("call", i),
                content=words,
                data=doc,
                images=[make_png(seed=2 + i)],
                author=person,
                metadata=doc,
                idempotency_key=identifier("idem", i + 10),
            )
            assert result.call_id == call.call_id
            # One tool, one (redacted) name, in the payload and in the metadata.
            assert call.payload["name"] == call.meta.tool_name
        # Large enough for the size guard: text and JSON offloaded to the blob store.
        big_call = turn.add_tool_call("export", {"q": words}, call_id=identifier("call", 4))
        turn.add_tool_result(
            big_call.call_id,
            content=(words + "\n") * 40,
            data={"rows": [doc] * 20},
        )
        turn.add_event(
            EventType.PLANNER,
            words,
            payload=doc,
            data=doc,
            author=person,
            metadata=doc,
            model=PLANTS[1].text,
            request_id=identifier("request", 1),
        )
        for plant in PLANTS:  # a model name is one line of at most 128 characters
            turn.add_message("assistant", "ok", model=f"model {plant.text}", author=plant.text)
    session.add_message("user", words, author=person)  # a turn of its own
    session.update_state(doc)
    session.update_state({"files": list(FILE_NAMES), words: words})
    logging.getLogger("agentctx.some.child").info("contact %s about %s", words, doc)
    try:
        raise RuntimeError(f"failed for {words}")
    except RuntimeError:
        logging.getLogger("agentctx.jobs").exception("job failed: %s", words)
    logging.getLogger("agentctx.server").debug("request", extra={"detail": doc})

    # Memories, every write path: the API, the memory tools, extraction.
    memory = engine.memory.add(
        "u1",
        words,
        subject=PLANTS[0].text,
        data=doc,
        keywords=[p.text for p in PLANTS],
        session_id=session.id,
    )
    engine.memory.update(
        "u1", memory.memory_id, content=f"now {words}", data=doc, keywords=[short], reason=short
    )
    for plant in PLANTS:  # a reason and a keyword are short: one value each
        engine.memory.update(
            "u1", memory.memory_id, keywords=[plant.text], reason=f"moved {plant.text}"
        )
    added = handle_memory_tool(
        engine.memory, "u1", "memory_add", {"content": f"tool {words}", "subject": short}
    )
    handle_memory_tool(
        engine.memory,
        "u1",
        "memory_update",
        {"memory_id": added["memory"]["memory_id"], "content": f"tool update {words}"},
    )
    engine.memory.extract_session("u1", session.id)
    engine.memory.search("u1", words)
    session.build_context(query=words, budget=2000)


def _write_through_mcp(engine: ContextEngine) -> None:
    pytest.importorskip("mcp")
    from mcp import Client

    from agentctx.integrations.mcp_server import build_mcp_server

    server = build_mcp_server(engine, "u1")
    words = planted_text()

    async def scenario() -> None:
        async with Client(server) as client:
            result = await client.call_tool(
                "memory_add",
                {
                    "content": f"mcp {words}",
                    "subject": PLANTS[3].text,
                    "keywords": [p.text for p in PLANTS],
                },
            )
            assert not result.is_error

    asyncio.run(scenario())


def _table_files(engine: ContextEngine, request: pytest.FixtureRequest) -> bytes:
    """PostgreSQL: this database's table and index files as on disk, after a checkpoint.
    (Not the WAL: the test server's is shared with every other test's database.)"""
    server = request.getfixturevalue("pg_server")
    server.psql("CHECKPOINT;")
    with engine.db.read() as conn:
        oid = conn.execute(
            text("SELECT oid FROM pg_database WHERE datname = current_database()")
        ).scalar_one()
    return files_text(Path(server.pgdata) / "base" / str(oid))


def test_planted_personal_data_reaches_no_storage(
    db_url: str, home: Path, root_records: LogLines, request: pytest.FixtureRequest
) -> None:
    settings: dict[str, Any] = {
        "redaction": {"enabled": True},
        "max_inline_bytes": 2048,
        "embeddings": {"provider": "hashing"},
    }
    with ContextEngine(url=db_url, home=home, **settings) as engine:
        _write_everything(engine)
        _write_through_mcp(engine)
        stored = database_text(engine)
        raw = b"" if db_url.startswith("sqlite") else _table_files(engine, request)
        blob_dir = engine.settings.blob_path()
        audit_file = engine.settings.audit_path()
    if db_url.startswith("sqlite"):
        stored += b"\n" + Path(db_url.removeprefix("sqlite:///")).read_bytes()  # checkpointed
    # Raw pages hold what the rows hold (compressed TOAST values aside, which the rows
    # above show in full): nothing planted may be in them either.
    assert leaks(raw) == [], "planted values in PostgreSQL's table files"

    assert leaks(stored) == [], "planted values in the database"
    assert missing_negatives(stored) == [], "hard negatives lost in the database"
    assert b"[EMAIL]" in stored and b"[PERSON]" in stored

    blobs = files_text(blob_dir)
    assert blobs, "nothing was offloaded: the size guard was not exercised"
    assert leaks(blobs) == [], "planted values in the blob files"
    assert missing_negatives(blobs) == []

    assert audit_file is not None and audit_file.exists()
    assert leaks(audit_file.read_bytes()) == [], "planted values in the audit file"

    logged = "\n".join(root_records.lines)
    assert "agentctx.some.child" in logged and "agentctx.jobs" in logged
    assert leaks(logged) == [], "planted values in log records"


def test_the_search_finds_what_an_engine_without_redaction_stores(tmp_path: Path) -> None:
    """The control: the same writes with redaction off leave every kind in the database,
    so an empty result above means redaction, not a search that cannot find anything."""
    home = tmp_path / "home"
    with ContextEngine(
        home=home, redaction={"enabled": False}, embeddings={"provider": "hashing"}
    ) as engine:
        _write_everything(engine)
        stored = database_text(engine)
    assert leaks(stored) == sorted(
        {p.value for p in PLANTS} | {i.value for i in ID_PLANTS} | set(RECORD_VALUES)
    )
