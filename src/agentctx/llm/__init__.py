"""Model providers: text embeddings (local, OpenAI-compatible, offline hashing).

Optional parts load lazily: importing this package imports neither
sentence-transformers nor the ``openai`` SDK.
"""

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
from agentctx.llm.openai_embeddings import OpenAIEmbedder

__all__ = [
    "Embedder",
    "EmbeddingConfig",
    "EmbeddingError",
    "HashingEmbedder",
    "LocalEmbedder",
    "OpenAIEmbedder",
    "embedder_from_config",
    "l2_normalize",
    "local_model_installed",
]
