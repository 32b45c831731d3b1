"""Which chat model does LLM work (summaries, topics, extraction), and how it is reached.

Two slots name the models: ``fast`` for summaries and classification, ``primary``
for the harder jobs; when only one is given, both slots use it. With provider
``none`` (the default) :func:`llm_from_config` returns None and the offline
methods do every job, with no network at all.

In the environment the whole block is one JSON value, like every nested setting::

    AGENTCTX_LLM='{"provider": "openai", "base_url": "http://localhost:11434/v1",
                   "fast_model": "qwen2.5:7b"}'

The API key is a secret: it never appears in ``repr``, ``str`` or a dump of the
configuration. When not given, ``$OPENAI_API_KEY`` is used.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, model_validator

from agentctx.errors import ConfigError
from agentctx.llm.chat import LLM, Slot, UsageLedger

LLMProvider = Literal["none", "openai"]


class LLMConfig(BaseModel):
    """The chat model endpoint and its two model slots."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    provider: LLMProvider = Field(
        default="none",
        description="none (offline methods only, no network) or openai (any "
        "OpenAI-compatible endpoint: OpenAI, vLLM, Ollama, llama.cpp server).",
    )
    base_url: str | None = Field(
        default=None,
        description="The endpoint, e.g. http://localhost:8000/v1; default OpenAI's "
        "(or $OPENAI_BASE_URL).",
    )
    api_key: SecretStr | None = Field(
        default=None, description="The key; default $OPENAI_API_KEY. Never shown or dumped."
    )
    fast_model: str | None = Field(
        default=None,
        min_length=1,
        description="The model for summaries and classification (default: primary_model).",
    )
    primary_model: str | None = Field(
        default=None,
        min_length=1,
        description="The model for the harder jobs (default: fast_model).",
    )
    timeout: float = Field(default=60.0, gt=0, le=3600, description="Seconds per request.")
    max_retries: int = Field(
        default=3,
        ge=0,
        le=20,
        description="Retries of a request that failed with 429, 5xx, a timeout or a lost "
        "connection, with exponential backoff (Retry-After honoured).",
    )

    @model_validator(mode="after")
    def _needs_a_model(self) -> LLMConfig:
        if self.provider != "none" and self.fast_model is None and self.primary_model is None:
            raise ValueError(f"llm provider {self.provider!r} needs fast_model or primary_model")
        return self

    def model_for(self, slot: Slot) -> str | None:
        """The model name of ``slot`` (the other slot's when it has none)."""
        if slot == "fast":
            return self.fast_model or self.primary_model
        if slot == "primary":
            return self.primary_model or self.fast_model
        raise ConfigError(f"unknown model slot {slot!r}; expected 'fast' or 'primary'")


def parse_llm_config(value: LLMConfig | dict[str, object] | None) -> LLMConfig:
    """An :class:`LLMConfig` from a mapping (YAML, settings); errors as ConfigError."""
    if isinstance(value, LLMConfig):
        return value
    try:
        return LLMConfig.model_validate(value or {})
    except ValidationError as exc:
        raise ConfigError(f"invalid llm configuration: {exc}") from exc


def llm_from_config(
    config: LLMConfig | dict[str, object] | None,
    slot: Slot = "fast",
    *,
    ledger: UsageLedger | None = None,
) -> LLM | None:
    """The chat model of ``slot`` that ``config`` describes; None for provider ``none``.

    Nothing is sent over the network here. ``ledger`` receives the usage of every
    call, recorded under ``slot``.
    """
    config = parse_llm_config(config)
    model = config.model_for(slot)
    if config.provider == "none":
        return None
    from agentctx.llm.openai_chat import OpenAIChatLLM  # noqa: PLC0415 - loads the SDK

    if model is None:  # the validator already requires one; a constructed copy may not
        raise ConfigError(f"llm provider {config.provider!r} needs fast_model or primary_model")
    return OpenAIChatLLM(
        model,
        base_url=config.base_url,
        api_key=config.api_key.get_secret_value() if config.api_key is not None else None,
        timeout=config.timeout,
        max_retries=config.max_retries,
        ledger=ledger,
        slot=slot,
    )
