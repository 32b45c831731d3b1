"""Settings: one validated object, read from arguments, environment and an optional YAML file.

Precedence: explicit arguments > environment (``AGENTCTX_*``) > YAML file named by
``AGENTCTX_CONFIG`` > defaults.
"""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path
from typing import Any, Literal

import yaml
from pydantic import Field, ValidationError, field_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from agentctx.cache.config import CacheConfig
from agentctx.compaction.fold.config import FoldConfig
from agentctx.compaction.reflection import ReflectionConfig
from agentctx.compaction.thread import ThreadSummaryConfig
from agentctx.compaction.tool_output.compressor import ToolOutputConfig
from agentctx.compaction.topics.config import TopicArchiveConfig
from agentctx.compaction.visual.config import VisualConfig
from agentctx.context.config import ContextConfig
from agentctx.errors import ConfigError
from agentctx.hitl.config import HitlConfig
from agentctx.llm.config import LLMConfig
from agentctx.llm.embeddings import EmbeddingConfig
from agentctx.memory.config import MemoryConfig
from agentctx.privacy.config import RedactionConfig
from agentctx.retrieval.config import RetrievalConfig
from agentctx.search.config import SearchConfig
from agentctx.server.config import ServerConfig

DEFAULT_HOME = Path("~/.agentctx")


class Settings(BaseSettings):
    """Engine settings. Every field can be set as ``AGENTCTX_<NAME>`` in the environment."""

    model_config = SettingsConfigDict(env_prefix="AGENTCTX_", extra="forbid")

    home: Path = Field(
        default=DEFAULT_HOME, description="Where the default database, blobs and audit log live."
    )
    url: str | None = Field(
        default=None, description="Database URL; default sqlite:///<home>/agentctx.db."
    )
    blob_dir: Path | None = Field(
        default=None, description="Blob store folder; default <home>/blobs."
    )
    audit_log: Path | None = Field(
        default=None, description="Audit JSON-lines file; default <home>/audit.jsonl."
    )
    audit_file_enabled: bool = Field(
        default=True, description="Write the audit JSON-lines file (audit_log)."
    )
    max_inline_bytes: int = Field(
        default=64 * 1024, ge=256, description="Size guard: larger parts go to the blob store."
    )
    max_blob_bytes: int = Field(
        default=256 * 1024 * 1024,
        ge=1024,
        description="Largest blob accepted; larger ones are refused with BlobTooLarge.",
    )
    max_image_pixels: int = Field(
        default=40_000_000,
        ge=1,
        description="Largest image accepted, in pixels (width x height), read from the "
        "image's header before anything is decoded: an 8K screenshot is 33 million. "
        "Larger images are refused with ImageTooLarge.",
    )
    blob_preview_chars: int = Field(
        default=500, ge=0, description="Preview kept inline for offloaded content."
    )
    session_ttl: timedelta | None = Field(
        default=timedelta(days=30),
        description="Sliding: renewed by every write. None = never expire.",
    )
    audit_retention: timedelta = Field(
        default=timedelta(days=90),
        description="Audit records older than this are trimmed by the sweep.",
    )
    erasure_poll: timedelta | None = Field(
        default=timedelta(seconds=1),
        description="How often the engine reads the erasure feed and forgets, in memory, "
        "the users and sessions whose data another process sharing the database deleted. "
        "None: never in the background (call forget_erased() yourself).",
    )
    erasure_retention: timedelta = Field(
        default=timedelta(days=7),
        description="How long the erasure feed keeps a deletion (the sweep trims it); an "
        "engine that did not read the feed for longer forgets everything it holds.",
    )
    erasure_scrub: Literal["user", "rewrite", "vacuum", "off"] = Field(
        default="user",
        description="After a deletion (delete_user_data, delete_session, the sweep's "
        "expired sessions), purge what the deleted rows left in the database's files. "
        "SQLite (any mode but 'off'): merge the full-text tables and checkpoint the WAL "
        "(connections run with secure_delete on, so deleted content is zeroed). "
        "PostgreSQL: 'rewrite' runs VACUUM FULL on agentctx's tables after every "
        "deletion, which leaves no deleted bytes in the table files but locks each table "
        "while it is rewritten; 'vacuum' runs a plain VACUUM, which takes no such lock "
        "but leaves the deleted rows' bytes in the pages' free space (and keys in "
        "full-text index pages) until they are reused; 'user' (the default) rewrites "
        "after delete_user_data, a person's erasure, and vacuums after session "
        "deletions and expiry, which happen all day. 'off': neither (autovacuum and "
        "automatic checkpoints only). The write-ahead log keeps its copies in every "
        "mode: see agentctx.storage.scrub.",
    )
    sqlite_synchronous: Literal["OFF", "NORMAL", "FULL", "EXTRA"] = Field(
        default="FULL", description="SQLite durability (PRAGMA synchronous)."
    )
    sqlite_busy_timeout_ms: int = Field(
        default=30_000, ge=0, description="How long a SQLite writer waits for a lock."
    )
    pool_size: int = Field(default=8, ge=1, description="Database connections kept open.")
    jobs: Literal["inline", "background", "manual"] = Field(
        default="background",
        description="How follow-up work runs (turn-end jobs: summaries, topics, folds, "
        "reflections, memory extraction; and embedding new events): 'background' (the "
        "default) in worker threads the engine starts, so neither a turn's end nor a "
        "window waits for a model, and the embedding model loads in the background as the "
        "engine starts; 'manual' only when you call engine.jobs.run_pending(); 'inline' "
        "right after each turn on the caller's thread, with searches embedding what is new "
        "themselves: deterministic, for tests and scripts, slow on an agent's path.",
    )
    compaction_process: bool = Field(
        default=True,
        description="With jobs='background': the offline summaries, topic identification "
        "and folds of compaction compute in a worker process (one per Python process, "
        "started on first use at a lower CPU priority, about 80 MB), so the agent's thread "
        "does not share the interpreter lock with them. Any failure of the worker runs the "
        "computation in the jobs thread instead. False: always in the jobs thread.",
    )
    redaction: RedactionConfig = Field(
        default_factory=RedactionConfig,
        description="PII redaction before anything is stored (on by default; switch it "
        "off with YAML `redaction: {enabled: false}` or "
        "AGENTCTX_REDACTION='{\"enabled\": false}').",
    )
    context: ContextConfig = Field(
        default_factory=ContextConfig,
        description="How context windows are built (tokenizer, sections, strategy knobs). "
        "An agent's own strategy and budget split take precedence.",
    )
    embeddings: EmbeddingConfig = Field(
        default_factory=EmbeddingConfig,
        description="The embedding model for dense retrieval: auto (the local model when "
        "installed, else feature hashing), local, openai, hashing or none.",
    )
    llm: LLMConfig = Field(
        default_factory=LLMConfig,
        description="The chat model for summaries, topics and extraction: none (offline "
        "methods, no network) or openai (any OpenAI-compatible endpoint), with fast and "
        "primary model slots.",
    )
    retrieval: RetrievalConfig = Field(
        default_factory=RetrievalConfig, description="Hybrid search: fusion and latency bounds."
    )
    thread_summary: ThreadSummaryConfig = Field(
        default_factory=ThreadSummaryConfig,
        description="The running summary of each session: when it is brought up to date "
        "(every N messages or tokens) and its token budget.",
    )
    tool_output: ToolOutputConfig = Field(
        default_factory=ToolOutputConfig,
        description="How tool results are shortened in context windows, and when they are "
        "offloaded behind a read_offloaded pointer.",
    )
    topics: TopicArchiveConfig = Field(
        default_factory=TopicArchiveConfig,
        description="Topic archiving (seed 001): when unarchived messages pass a share of "
        "the context, the oldest become titled, summarized topics, and windows show the "
        "topic summaries and the messages still unarchived.",
    )
    fold: FoldConfig = Field(
        default_factory=FoldConfig,
        description="Hybrid compaction of the event log (seed 003): past high_tokens, the "
        "oldest events other than key events fold into summaries (recursively) until "
        "low_tokens remain; windows show the folds in place of what they cover.",
    )
    reflection: ReflectionConfig = Field(
        default_factory=ReflectionConfig,
        description="The agent's inner voice (seed 001): a short structured reflection on "
        "each assistant message, written by a turn-end job onto that message's record; "
        "never in the history or a window.",
    )
    visual: VisualConfig = Field(
        default_factory=VisualConfig,
        description="Screenshots (seed 000): perceptual dedup on arrival, turn-end visual "
        "compaction (anchor, result and error frames kept, others placeholders), and "
        "cold-storage retention.",
    )
    memory: MemoryConfig = Field(
        default_factory=MemoryConfig,
        description="Long-term memory (seed 003): extraction after each turn, "
        "consolidation, trust rules and the ## Memory (Verified) block of windows.",
    )
    cache: CacheConfig = Field(
        default_factory=CacheConfig,
        description="Optional Redis hot cache in front of the database (recent events of "
        "active sessions, memories), checked against the database's seq and versions; "
        "url=None: off.",
    )
    hitl: HitlConfig = Field(
        default_factory=HitlConfig,
        description="Human in the loop (seed 003 8.1.5): the triggers that mark a session "
        "as needing a human, and the windows kept for repro packages.",
    )
    search: SearchConfig = Field(
        default_factory=SearchConfig,
        description="The web research sub-agent (seed 000 Phase 4): provider (none, "
        "tavily or searxng), keys and endpoints, timeouts and rate limits, and the loop's "
        "confidence threshold and iteration cap.",
    )
    server: ServerConfig = Field(
        default_factory=ServerConfig,
        description="`agentctx serve`: where it listens, the request size limit, JWT "
        "verification and the web inspector.",
    )
    job_max_attempts: int = Field(
        default=5, ge=1, description="Attempts before a job is marked failed."
    )
    job_lease: timedelta = Field(
        default=timedelta(minutes=5),
        description="How long a claimed job is reserved for its worker; a job still "
        "running after it may be claimed again by another worker.",
    )
    job_retention: timedelta | None = Field(
        default=timedelta(days=7),
        description="How long a job that finished successfully is kept (the sweep deletes "
        "older ones; failed jobs stay). None: until its session is deleted.",
    )

    @field_validator("home", "blob_dir", "audit_log", mode="after")
    @classmethod
    def _expand(cls, value: Path | None) -> Path | None:
        return value.expanduser() if value is not None else None

    @field_validator("erasure_poll", mode="after")
    @classmethod
    def _positive_poll(cls, value: timedelta | None) -> timedelta | None:
        if value is not None and value <= timedelta(0):
            raise ValueError("must be positive (or null: no background reads)")
        return value

    @field_validator("erasure_retention", mode="after")
    @classmethod
    def _retention_over_lag(cls, value: timedelta) -> timedelta:
        # Each read of the feed looks back a minute (agentctx.sessions.erasures).
        if value < timedelta(minutes=10):
            raise ValueError("must be at least 10 minutes")
        return value

    def database_url(self) -> str:
        """The database URL in effect."""
        return self.url or f"sqlite:///{self.home / 'agentctx.db'}"

    def blob_path(self) -> Path:
        """The blob store folder in effect."""
        return self.blob_dir or self.home / "blobs"

    def audit_path(self) -> Path | None:
        """The audit JSON-lines file in effect, or None when disabled."""
        if not self.audit_file_enabled:
            return None
        return self.audit_log or self.home / "audit.jsonl"


def load_settings(**overrides: Any) -> Settings:
    """Build settings from overrides, the environment and ``$AGENTCTX_CONFIG`` (YAML).

    Every override given counts, ``None`` included (``session_ttl=None``: never expire).
    """
    file_values: dict[str, Any] = {}
    config_file = os.environ.get("AGENTCTX_CONFIG")
    if config_file:
        try:
            loaded = yaml.safe_load(Path(config_file).read_text(encoding="utf-8")) or {}
        except (OSError, yaml.YAMLError) as exc:
            raise ConfigError(f"cannot read config file {config_file}: {exc}") from exc
        if not isinstance(loaded, dict):
            raise ConfigError(f"config file {config_file} must hold a mapping")
        file_values = loaded
    try:
        # Environment beats the file: pydantic-settings gives init kwargs top priority, so the
        # file's values are only used for keys the environment does not set.
        env_keys = {
            name for name in Settings.model_fields if f"AGENTCTX_{name.upper()}" in os.environ
        }
        merged = {k: v for k, v in file_values.items() if k not in env_keys} | overrides
        return Settings(**merged)
    except ValidationError as exc:
        raise ConfigError(str(exc)) from exc
