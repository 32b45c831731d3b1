"""agentctx: a context engine for LLM agents.

Agents hand it every message, tool call, tool result and screenshot; it keeps a
durable, ordered, tamper-evident event log per session and builds the context
window for each model call. See ``ContextEngine`` to start.
"""

from typing import TYPE_CHECKING, Any

from agentctx.agents import AgentConfig
from agentctx.aio import AsyncContextEngine, AsyncSession, AsyncTurn
from agentctx.config import Settings
from agentctx.context import ActiveTask, ContextConfig, ContextReport, ContextWindow
from agentctx.engine import ContextEngine
from agentctx.errors import (
    AgentCtxError,
    BlobNotFound,
    BlobTooLarge,
    ConfigError,
    Conflict,
    EngineClosed,
    IdempotencyConflict,
    ImageExpired,
    ImageTooLarge,
    InvalidEvent,
    InvalidInput,
    MemoryNotFound,
    MigrationError,
    MissingExtra,
    NotFound,
    OptedOut,
    RedactionRequired,
    SessionExists,
    SessionNotFound,
    StaleMemory,
    StaleSession,
    StorageError,
    TurnError,
    TurnNotFound,
)
from agentctx.events import (
    BlobPart,
    Event,
    EventDraft,
    EventMeta,
    EventType,
    ImageData,
    ImagePart,
    JsonPart,
    Part,
    Role,
    TextPart,
)
from agentctx.jobs import Job
from agentctx.memory import Memory, MemoryChange, MemoryHit, MemoryKind
from agentctx.privacy import PassThroughRedactor, Redacted, Redactor
from agentctx.sessions import (
    DeleteReport,
    Page,
    Session,
    SessionInfo,
    SweepReport,
    Turn,
    TurnInfo,
    VerifyReport,
)
from agentctx.storage.blobs import BlobStore, FileBlobStore
from agentctx.tokens import (
    EstimateCounter,
    HFTokenizerCounter,
    TiktokenCounter,
    TokenCounter,
    counter_from_spec,
    image_tokens,
    message_tokens,
    messages_tokens,
)

if TYPE_CHECKING:
    from agentctx.client import RemoteEngine

__version__ = "0.1.0"


def __getattr__(name: str) -> Any:
    """``RemoteEngine`` needs httpx (the ``client`` extra): imported on first use."""
    if name == "RemoteEngine":
        from agentctx.client import RemoteEngine  # noqa: PLC0415

        return RemoteEngine
    raise AttributeError(f"module 'agentctx' has no attribute {name!r}")


__all__ = [
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
