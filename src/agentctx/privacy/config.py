"""Redaction settings: which recognizers run, how findings are rewritten, with which keys.

``RedactionConfig`` is a plain pydantic model (unknown keys refused) so it can sit
inside the engine settings, a YAML file or an agent's configuration. Keys are
``SecretStr`` and never appear in ``repr`` or dumps; when a key is not given, the
environment variable ``AGENTCTX_REDACTION_KEY`` is used.
"""

from __future__ import annotations

import os
import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator

KEY_ENV = "AGENTCTX_REDACTION_KEY"

OperatorName = Literal["replace", "mask", "hash", "encrypt"]


class CustomPattern(BaseModel):
    """A regex recognizer defined in configuration.

    A match scores ``score``; one of ``context`` words appearing shortly before it
    (case-insensitive) raises the score by ``context_boost``, so a weak pattern can
    be set below ``min_score`` and only count when its context is present.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1)
    entity_type: str = Field(min_length=1, pattern=r"^[A-Za-z0-9_]+$")
    pattern: str = Field(min_length=1)
    score: float = Field(default=0.6, ge=0, le=1)
    context: tuple[str, ...] = ()
    context_boost: float = Field(default=0.35, ge=0, le=1)
    context_window: int = Field(default=48, ge=1)
    ignore_case: bool = False

    @field_validator("pattern")
    @classmethod
    def _compiles(cls, value: str) -> str:
        try:
            re.compile(value)
        except re.error as exc:
            raise ValueError(f"invalid regular expression: {exc}") from exc
        return value


class RedactionConfig(BaseModel):
    """How personal data is found and rewritten before anything is stored."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    enabled: bool = Field(default=True, description="False: store text unchanged.")
    min_score: float = Field(default=0.5, ge=0, le=1, description="Findings below are dropped.")
    operator: OperatorName = Field(default="replace", description="Operator for every type.")
    operators: dict[str, OperatorName] = Field(
        default_factory=dict, description="Operator per entity type, overriding ``operator``."
    )
    labels: Literal["en", "zh"] = Field(
        default="en", description="Placeholder language: [EMAIL] or [邮箱_已脱敏]."
    )
    placeholders: dict[str, str] = Field(
        default_factory=dict, description="Placeholder text per entity type, overriding labels."
    )
    mask_keep: int = Field(default=4, ge=0, description="Characters the mask operator keeps.")
    hash_chars: int = Field(default=10, ge=6, le=64, description="Hex digits of hash tokens.")
    hash_key: SecretStr | None = Field(
        default=None, description=f"HMAC key of the hash operator; default ${KEY_ENV}."
    )
    encryption_key: SecretStr | None = Field(
        default=None, description=f"Key of the encrypt operator; default ${KEY_ENV}."
    )
    allow_list: tuple[str, ...] = Field(
        default=(), description="Values never redacted (emails compared case-insensitively)."
    )
    patterns: tuple[CustomPattern, ...] = Field(default=(), description="Extra regex recognizers.")
    recognizers: tuple[str, ...] = Field(
        default=(),
        description="Extra recognizers: names given to register_recognizer() or 'module:attr'.",
    )
    names: bool = Field(
        default=True,
        description="Recognize personal names where the text marks them (姓名, Name:, 先生).",
    )
    presidio: bool = Field(
        default=False, description="Also run Presidio (pip install 'agentctx[presidio]')."
    )

    def resolved_hash_key(self) -> str | None:
        """The hash key in effect: configured, else from the environment, else None."""
        return _resolve(self.hash_key)

    def resolved_encryption_key(self) -> str | None:
        """The encryption key in effect: configured, else from the environment, else None."""
        return _resolve(self.encryption_key)

    def operator_names(self) -> set[str]:
        """Every operator this configuration uses."""
        return {self.operator, *self.operators.values()}


def _resolve(value: SecretStr | None) -> str | None:
    if value is not None:
        return value.get_secret_value()
    return os.environ.get(KEY_ENV) or None
