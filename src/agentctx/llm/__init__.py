"""Model providers: chat models and text embeddings (local, OpenAI-compatible, offline).

Optional parts load lazily: importing this package imports neither
sentence-transformers, the ``openai`` SDK, nor ``jsonschema``.
"""

from agentctx.llm.chat import (
    LLM,
    ChatMessage,
    Completion,
    LedgerEntry,
    LLMError,
    LLMRequestRejected,
    LLMResponseInvalid,
    LLMTimeout,
    LLMUnavailable,
    Slot,
    Usage,
    UsageLedger,
)
from agentctx.llm.config import LLMConfig, llm_from_config
from agentctx.llm.embeddings import (
    Embedder,
    EmbeddingConfig,
    EmbeddingError,
    embedder_from_config,
    l2_normalize,
    local_model_installed,
)
from agentctx.llm.hashing import HashingEmbedder
from agentctx.llm.local import LocalEmbedder
from agentctx.llm.openai_chat import OpenAIChatLLM
from agentctx.llm.openai_embeddings import OpenAIEmbedder

__all__ = [
    "LLM",
    "ChatMessage",
    "Completion",
    "Embedder",
    "EmbeddingConfig",
    "EmbeddingError",
    "HashingEmbedder",
    "LLMConfig",
    "LLMError",
    "LLMRequestRejected",
    "LLMResponseInvalid",
    "LLMTimeout",
    "LLMUnavailable",
    "LedgerEntry",
    "LocalEmbedder",
    "OpenAIChatLLM",
    "OpenAIEmbedder",
    "Slot",
    "Usage",
    "UsageLedger",
    "embedder_from_config",
    "l2_normalize",
    "llm_from_config",
    "local_model_installed",
]
