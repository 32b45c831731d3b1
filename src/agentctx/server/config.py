"""Server settings: where it listens, how large a request may be, how callers sign in."""

from __future__ import annotations

from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field

from agentctx.tokens.spec import BUILTIN_SPECS


def _builtin_tokenizers() -> list[str]:
    return list(BUILTIN_SPECS)


class ServerConfig(BaseModel):
    """``server:`` in the engine's settings (``AGENTCTX_SERVER='{"port": 9000}'``)."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    port: int = Field(default=8080, ge=0, le=65535)
    max_body_bytes: int = Field(
        default=32 * 1024 * 1024,
        ge=1024,
        description="Larger request bodies are refused with 413 before they are read.",
    )
    jwt_secret: str | None = Field(default=None, description="HS256 secret for bearer JWTs.")
    jwt_jwks_file: Path | None = Field(
        default=None, description="A JWKS file whose public keys verify RS256 JWTs."
    )
    jwt_audience: str | None = None
    jwt_issuer: str | None = None
    ui: bool = Field(default=True, description="Serve the web inspector at /ui.")
    page_limit: int = Field(default=100, ge=1, le=1000, description="Largest page size.")
    tokenizers: list[str] = Field(
        default_factory=_builtin_tokenizers,
        description="The tokenizers a request may name (context config.tokenizer), besides "
        "the engine's own: by default the built-in ones, which read no file. An hf: "
        "tokenizer file is usable only when listed here; a client never names a path.",
    )
