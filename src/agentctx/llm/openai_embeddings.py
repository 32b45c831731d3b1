"""Embeddings from any OpenAI-compatible ``/v1/embeddings`` endpoint, through the ``openai`` SDK.

Works with OpenAI itself and with servers that speak its wire protocol (vLLM,
Ollama, llama.cpp, text-embeddings-inference). Requests are batched; rate limits,
server errors, timeouts and dropped connections are retried by the SDK with
exponential backoff (honouring ``Retry-After``). Failures surface as
:class:`~agentctx.llm.embeddings.EmbeddingError`, or as
:class:`~agentctx.errors.ConfigError` when the endpoint refuses the key or the model.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from agentctx.errors import ConfigError
from agentctx.llm.embeddings import EmbeddingError, l2_normalize
from agentctx.llm.openai_client import openai_client

_PROBE = "dimension probe"


class OpenAIEmbedder:
    """Embeddings over HTTP from an OpenAI-compatible endpoint.

    ``base_url`` defaults to the SDK's (OpenAI); ``api_key`` to ``$OPENAI_API_KEY``
    (a self-hosted endpoint given by ``base_url`` may need none). ``dimensions``, when
    given, is sent with each request (models such as text-embedding-3-* shorten their
    vectors on request) and every answer is checked against it; otherwise the size is
    learned from the first answer.
    """

    def __init__(
        self,
        model: str = "text-embedding-3-small",
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        dimensions: int | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        batch_size: int = 64,
    ) -> None:
        if not model:
            raise ConfigError("an OpenAI embedding model name is required")
        if dimensions is not None and dimensions < 1:
            raise ConfigError(f"dimensions must be positive, got {dimensions}")
        if batch_size < 1:
            raise ConfigError(f"batch_size must be positive, got {batch_size}")
        openai, self._client = openai_client(
            "OpenAI embeddings",
            base_url=base_url,
            api_key=api_key,
            timeout=timeout,
            max_retries=max_retries,
        )
        self._errors = openai
        self._model = model
        self._requested = dimensions
        self._dimensions = dimensions
        self._batch_size = batch_size
        self._lock = threading.Lock()

    @property
    def name(self) -> str:
        """``openai:<model>``, with ``/<dimensions>`` when a size is requested."""
        suffix = f"/{self._requested}" if self._requested is not None else ""
        return f"openai:{self._model}{suffix}"

    @property
    def dimensions(self) -> int:
        """The vector size (asked of the endpoint once when not configured)."""
        if self._dimensions is None:
            with self._lock:
                if self._dimensions is None:
                    self._dimensions = len(self._request([_PROBE])[0])
        return self._dimensions

    def _request(self, batch: list[str]) -> list[list[float]]:
        kwargs: dict[str, Any] = {"model": self._model, "input": batch, "encoding_format": "float"}
        if self._requested is not None:
            kwargs["dimensions"] = self._requested
        e = self._errors
        try:
            response = self._client.embeddings.create(**kwargs)
        except (e.AuthenticationError, e.PermissionDeniedError) as exc:
            raise ConfigError(f"the embeddings endpoint refused the API key: {exc}") from exc
        except e.NotFoundError as exc:
            raise ConfigError(f"the embeddings endpoint has no model {self._model!r}") from exc
        except e.OpenAIError as exc:
            raise EmbeddingError(f"embedding request failed: {exc}") from exc
        data = sorted(response.data, key=lambda item: item.index)
        if len(data) != len(batch):
            raise EmbeddingError(
                f"the embeddings endpoint returned {len(data)} vectors for {len(batch)} texts"
            )
        vectors = [list(item.embedding) for item in data]
        sizes = {len(vector) for vector in vectors}
        expected = self._dimensions
        if len(sizes) != 1 or (expected is not None and sizes != {expected}):
            raise EmbeddingError(
                f"the embeddings endpoint returned vectors of size {sorted(sizes)}, "
                f"expected {expected}"
            )
        return vectors

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """Unit vectors for ``texts``, ``batch_size`` per request."""
        vectors: list[list[float]] = []
        for start in range(0, len(texts), self._batch_size):
            batch = list(texts[start : start + self._batch_size])
            blank = [not text.strip() for text in batch]
            # Endpoints reject empty input; blank texts get zero vectors instead.
            kept = [text for text, is_blank in zip(batch, blank, strict=True) if not is_blank]
            answered = self._request(kept) if kept else []
            if self._dimensions is None and answered:
                self._dimensions = len(answered[0])
            found = iter(answered)
            for is_blank in blank:
                vectors.append([0.0] * self.dimensions if is_blank else l2_normalize(next(found)))
        return vectors
