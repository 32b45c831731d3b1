"""The public API, migrations, configuration and agent records."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import inspect

import agentctx
from agentctx import AgentConfig, ConfigError, ContextEngine, InvalidInput, StorageError
from agentctx.storage import migrate
from agentctx.storage.database import Database
from agentctx.storage.schema import include_name, include_object_on, metadata

PUBLIC_API = [
    "ActiveTask",
    "AgentConfig",
    "AgentCtxError",
    "AsyncContextEngine",
    "AsyncSession",
    "AsyncTurn",
    "BlobNotFound",
    "BlobPart",
    "BlobStore",
    "BlobTooLarge",
    "ConfigError",
    "Conflict",
    "ContextConfig",
    "ContextEngine",
    "ContextReport",
    "ContextWindow",
    "DeleteReport",
    "EngineClosed",
    "EstimateCounter",
    "Event",
    "EventDraft",
    "EventMeta",
    "EventType",
    "FileBlobStore",
    "HFTokenizerCounter",
    "IdempotencyConflict",
    "ImageData",
    "ImageExpired",
    "ImageTooLarge",
    "ImagePart",
    "InvalidEvent",
    "InvalidInput",
    "Job",
    "JsonPart",
    "Memory",
    "MemoryChange",
    "MemoryHit",
    "MemoryKind",
    "MemoryNotFound",
    "MigrationError",
    "MissingExtra",
    "NotFound",
    "OptedOut",
    "Page",
    "Part",
    "PassThroughRedactor",
    "Redacted",
    "RedactionRequired",
    "Redactor",
    "RemoteEngine",
    "Role",
    "Session",
    "SessionExists",
    "SessionInfo",
    "SessionNotFound",
    "Settings",
    "StaleMemory",
    "StaleSession",
    "StorageError",
    "SweepReport",
    "TextPart",
    "TiktokenCounter",
    "TokenCounter",
    "Turn",
    "TurnError",
    "TurnInfo",
    "TurnNotFound",
    "VerifyReport",
    "__version__",
    "counter_from_spec",
    "image_tokens",
    "message_tokens",
    "messages_tokens",
]


def test_public_api_is_pinned() -> None:
    assert agentctx.__all__ == PUBLIC_API
    for name in PUBLIC_API:
        assert hasattr(agentctx, name), name


def test_errors_have_stable_codes() -> None:
    codes = {
        cls.code
        for cls in vars(agentctx.errors).values()
        if isinstance(cls, type) and issubclass(cls, agentctx.AgentCtxError)
    }
    assert {
        "session_not_found",
        "stale_session",
        "idempotency_conflict",
        "invalid_event",
        "redaction_required",
        "blob_not_found",
        "engine_closed",
    } <= codes
    assert issubclass(agentctx.InvalidInput, ValueError)
    assert issubclass(agentctx.MissingExtra, ImportError)


def test_migrated_schema_matches_the_schema_module(db_url: str, home: Path) -> None:
    with ContextEngine(url=db_url, home=home, embeddings={"provider": "hashing"}) as engine:
        # A search creates the index's run-time tables (their shape depends on the
        # database and the embedder); the comparison must skip exactly those.
        session = engine.create_session(user_id="u1")
        session.add_message("user", "hello index")
        assert engine.search_index.search("u1", session.id, "hello")
        with engine.db.engine.connect() as conn:
            # Objects created on one dialect only are compared on that dialect.
            on_this = include_object_on(conn.dialect.name)
            hooks = {"include_name": include_name, "include_object": on_this}
            diff = compare_metadata(MigrationContext.configure(conn, opts=hooks), metadata)
            unfiltered = compare_metadata(
                MigrationContext.configure(conn, opts={"include_object": on_this}), metadata
            )
        assert diff == []
        assert unfiltered  # the run-time tables exist and are what the filter leaves out
        assert migrate.current_revision(engine.db) == migrate.head_revision()
        assert migrate.scripted_head() == migrate.HEAD_REVISION  # the constant tracks the scripts
        assert migrate.upgrade(engine.db) is False  # already at head: nothing runs
        tables = set(inspect(engine.db.engine).get_table_names())
        assert {
            "sessions",
            "events",
            "turns",
            "jobs",
            "blobs",
            "blob_refs",
            "audit",
            "agents",
        } <= tables


def test_default_home_comes_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("AGENTCTX_HOME", str(tmp_path / "ctx"))
    with ContextEngine() as engine:
        engine.create_session(user_id="u1").add_message("user", "hi", images=[])
        assert engine.db.path == tmp_path / "ctx" / "agentctx.db"
    assert (tmp_path / "ctx" / "agentctx.db").exists()
    assert (tmp_path / "ctx" / "audit.jsonl").exists()
    with ContextEngine() as engine:  # reopening finds the same data
        assert len(engine.list_sessions("u1").items) == 1


def test_yaml_config_and_environment_precedence(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "agentctx.yaml"
    config.write_text(f"home: {tmp_path / 'from-yaml'}\nmax_inline_bytes: 4096\njobs: manual\n")
    monkeypatch.setenv("AGENTCTX_CONFIG", str(config))
    monkeypatch.setenv("AGENTCTX_MAX_INLINE_BYTES", "8192")
    monkeypatch.delenv("AGENTCTX_JOBS", raising=False)  # the tests' own setting
    with ContextEngine() as engine:
        assert engine.settings.home == tmp_path / "from-yaml"
        assert engine.settings.max_inline_bytes == 8192  # environment beats the file
        assert engine.settings.jobs == "manual"
    with ContextEngine(max_inline_bytes=2048) as engine:  # arguments beat both
        assert engine.settings.max_inline_bytes == 2048
    config.write_text("jobs: sometimes\n")
    with pytest.raises(ConfigError, match="jobs"):
        ContextEngine()
    config.write_text("- not a mapping\n")
    with pytest.raises(ConfigError, match="mapping"):
        ContextEngine()


def test_bad_urls_fail_clearly(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="unsupported database"):
        Database("mysql://localhost/x")
    with pytest.raises(ConfigError, match="not a database URL"):
        Database("::::")
    with pytest.raises(StorageError):
        ContextEngine(url="postgresql://nobody@127.0.0.1:1/none", home=tmp_path)


def test_agents_are_records_with_configuration(engine: ContextEngine) -> None:
    session = engine.create_session(user_id="u1", agent_id="travel")
    config = engine.agents.get("travel")
    # A new agent sets nothing of its own: the engine's settings apply to its sessions.
    assert config is not None and config.strategy is None and config.budget_split is None
    assert config.context_limit is None and config.context_threshold is None
    thresholds = engine.archive_thresholds("u1", session.id)
    assert thresholds.context_threshold == engine.settings.topics.context_threshold
    assert thresholds.min_archive_messages == engine.settings.topics.min_archive_messages
    engine.register_agent(
        AgentConfig(
            agent_id="travel", context_limit=32_000, context_threshold=0.6, strategy="compressed"
        )
    )
    assert engine.agents.get("travel").strategy == "compressed"  # type: ignore[union-attr]
    # What it sets counts; what it leaves out comes from the preset of its context size.
    thresholds = engine.archive_thresholds("u1", session.id)
    assert (thresholds.context_limit, thresholds.context_threshold) == (32_000, 0.6)
    assert thresholds.min_archive_messages == 10  # seed 001: 10 messages at 32k
    assert [a.agent_id for a in engine.agents.list()] == ["travel"]
    assert session.agent_id == "travel"
    with pytest.raises(ValueError, match=r"add up to 1\.0"):
        AgentConfig(agent_id="x", budget_split={"system": 0.5, "recent": 0.6})
    with pytest.raises(ValueError):
        AgentConfig(agent_id="x", unknown_key=1)  # type: ignore[call-arg]
    with pytest.raises(InvalidInput):
        engine.create_session(user_id="u1", agent_id="bad agent id")


def test_importing_agentctx_does_not_load_pii_detection() -> None:
    import subprocess
    import sys

    code = (
        "import sys, agentctx; "
        "print(sorted(m for m in ('phonenumbers', 'cryptography') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
    from agentctx.privacy import PIIRedactor  # loads on first use

    assert PIIRedactor.__name__ == "PIIRedactor"
