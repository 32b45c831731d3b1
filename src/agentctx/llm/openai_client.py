"""The ``openai`` SDK client both OpenAI-compatible providers (chat, embeddings) use.

The SDK is an optional extra, imported only when a provider is made. The key comes
from the argument or ``$OPENAI_API_KEY``; a self-hosted server named by ``base_url``
(or ``$OPENAI_BASE_URL``) may need none. The SDK retries rate limits, server errors,
timeouts and dropped connections with exponential backoff, honouring ``Retry-After``.
"""

from __future__ import annotations

import os
from typing import Any

from agentctx.errors import ConfigError, MissingExtra


def openai_sdk() -> Any:
    """The ``openai`` module, or ``MissingExtra`` naming the extra that installs it."""
    try:
        import openai  # noqa: PLC0415 - optional extra
    except ImportError as exc:
        raise MissingExtra("openai", "openai") from exc
    return openai


def openai_client(
    what: str,
    *,
    base_url: str | None,
    api_key: str | None,
    timeout: float,
    max_retries: int,
) -> tuple[Any, Any]:
    """(the SDK module, a client) for an endpoint; ``what`` names the provider in errors."""
    openai = openai_sdk()
    if not timeout > 0:
        raise ConfigError(f"timeout must be positive, got {timeout}")
    if max_retries < 0:
        raise ConfigError(f"max_retries must be 0 or more, got {max_retries}")
    key = api_key or os.environ.get("OPENAI_API_KEY")
    if not key:
        if not (base_url or os.environ.get("OPENAI_BASE_URL")):
            raise ConfigError(
                f"{what} need an api_key (or $OPENAI_API_KEY), "
                "or a base_url of a server that needs none"
            )
        key = "unused"  # self-hosted servers commonly ignore the key; the SDK wants one
    client = openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries)
    return openai, client
