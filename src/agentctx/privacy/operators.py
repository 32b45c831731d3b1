"""Operators: what a finding becomes in the stored text.

* ``replace``: a typed placeholder, ``[EMAIL]`` or, with Chinese labels, ``[邮箱_已脱敏]``.
* ``mask``: every character but the last few becomes ``*``.
* ``hash``: ``[EMAIL:3f2a9c1b7d]``, an HMAC-SHA256 of the value under a tenant key, so
  the same value always gives the same token (joins and counts still work) but
  nothing can be recovered from it.
* ``encrypt``: ``[ENC:EMAIL:<base64url>]``, AES-GCM under a key that is never stored
  with the data; :func:`decrypt_tokens` restores the originals given the key.

Keys are derived from the configured secret with HKDF, one derivation per purpose,
so a single secret can serve both the hash and the encrypt operator.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Mapping, Sequence
from typing import Protocol

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from pydantic import SecretStr

from agentctx.errors import AgentCtxError, ConfigError
from agentctx.privacy.config import RedactionConfig
from agentctx.privacy.findings import ZH_LABELS, EntityType, Finding

MIN_KEY_LENGTH = 16


_NONCE_BYTES = 12
# Entity type and base64url text: neither contains ':' or ']', so tokens parse unambiguously.
_ENC_TOKEN = re.compile(r"\[ENC:([A-Za-z0-9_]+):([A-Za-z0-9_-]+)\]")


class DecryptionError(AgentCtxError):
    """An encrypted token could not be decrypted: wrong key, or the token was altered."""

    code = "decryption_failed"


class Operator(Protocol):
    """Rewrites one found value. Implementations must be thread-safe."""

    name: str

    def apply(self, value: str, entity_type: str) -> str:
        """The text that replaces ``value``, an entity of ``entity_type``."""
        ...


class Labels:
    """Placeholder text per entity type."""

    def __init__(self, language: str = "en", overrides: Mapping[str, str] | None = None) -> None:
        if language not in ("en", "zh"):
            raise ConfigError(f"unknown placeholder labels {language!r} (use 'en' or 'zh')")
        self.language = language
        self._overrides = dict(overrides or {})
        self._cache: dict[str, str] = {}

    def placeholder(self, entity_type: str) -> str:
        """``[EMAIL]`` (en) or ``[邮箱_已脱敏]`` (zh); unknown types use their own name."""
        cached = self._cache.get(entity_type)
        if cached is not None:
            return cached
        text = self._overrides.get(entity_type)
        if text is None:
            if self.language == "zh":
                text = f"[{ZH_LABELS.get(entity_type, entity_type)}_已脱敏]"
            else:
                text = f"[{entity_type}]"
        self._cache[entity_type] = text  # benign race: every thread computes the same text
        return text


class ReplaceOperator:
    """Replaces a value with its type's placeholder."""

    name = "replace"

    def __init__(self, labels: Labels | None = None) -> None:
        self.labels = labels or Labels()

    def apply(self, value: str, entity_type: str) -> str:
        return self.labels.placeholder(entity_type)


class MaskOperator:
    """Keeps the last ``keep`` characters and stars the rest.

    Never keeps more than half of a value, so a short value is not left readable.
    """

    name = "mask"

    def __init__(self, keep: int = 4, char: str = "*") -> None:
        if keep < 0 or len(char) != 1:
            raise ConfigError("mask needs keep >= 0 and a single mask character")
        self.keep = keep
        self.char = char

    def apply(self, value: str, entity_type: str) -> str:
        keep = min(self.keep, len(value) // 2)
        if keep == 0:
            return self.char * len(value)
        return self.char * (len(value) - keep) + value[-keep:]


class HashOperator:
    """``[TYPE:<hex>]``: a keyed, stable, one-way token of the value."""

    name = "hash"

    def __init__(self, key: str | bytes | SecretStr, chars: int = 10) -> None:
        self._key = derive_key(key, "hash")
        self.chars = chars

    def apply(self, value: str, entity_type: str) -> str:
        # Emails are case-insensitive, so one address gives one token however it is typed.
        normalized = value.casefold() if entity_type == EntityType.EMAIL else value
        message = f"{entity_type}\0{normalized}".encode()
        digest = hmac.new(self._key, message, hashlib.sha256).hexdigest()
        return f"[{entity_type}:{digest[: self.chars]}]"


class EncryptOperator:
    """``[ENC:TYPE:<base64url>]``: AES-GCM encryption that :func:`decrypt_tokens` reverses.

    The nonce is an HMAC of the value (a synthetic IV), so encrypting the same value
    twice gives the same token: a retried write is byte-identical to the first one,
    which idempotency checks rely on. Equal tokens reveal equal values, exactly as
    the hash operator does; the entity type is authenticated as associated data.
    """

    name = "encrypt"

    def __init__(self, key: str | bytes | SecretStr) -> None:
        self._aead = AESGCM(derive_key(key, "encrypt"))
        self._nonce_key = derive_key(key, "encrypt-nonce")

    def apply(self, value: str, entity_type: str) -> str:
        plain = value.encode()
        aad = entity_type.encode()
        nonce = hmac.new(self._nonce_key, aad + b"\0" + plain, hashlib.sha256).digest()
        nonce = nonce[:_NONCE_BYTES]
        sealed = nonce + self._aead.encrypt(nonce, plain, aad)
        token = base64.urlsafe_b64encode(sealed).rstrip(b"=").decode("ascii")
        return f"[ENC:{entity_type}:{token}]"


def decrypt_tokens(text: str, key: str | bytes | SecretStr) -> str:
    """``text`` with every ``[ENC:TYPE:…]`` token replaced by the value it encrypts.

    Raises :class:`DecryptionError` if a token does not decrypt under ``key``.
    """
    if "[ENC:" not in text:
        return text
    aead = AESGCM(derive_key(key, "encrypt"))

    def restore(match: re.Match[str]) -> str:
        entity_type, token = match.group(1), match.group(2)
        try:
            sealed = base64.urlsafe_b64decode(token + "=" * (-len(token) % 4))
            if len(sealed) <= _NONCE_BYTES:
                raise DecryptionError(f"encrypted {entity_type} token is truncated")
            plain = aead.decrypt(sealed[:_NONCE_BYTES], sealed[_NONCE_BYTES:], entity_type.encode())
        except (InvalidTag, binascii.Error, ValueError) as exc:
            raise DecryptionError(
                f"cannot decrypt an {entity_type} token: wrong key or altered token"
            ) from exc
        return plain.decode()

    return _ENC_TOKEN.sub(restore, text)


def derive_key(secret: str | bytes | SecretStr, purpose: str) -> bytes:
    """A 32-byte key for ``purpose`` derived from ``secret`` (HKDF-SHA256)."""
    if isinstance(secret, SecretStr):
        secret = secret.get_secret_value()
    raw = secret.encode() if isinstance(secret, str) else bytes(secret)
    if len(raw) < MIN_KEY_LENGTH:
        raise ConfigError(f"a redaction key needs at least {MIN_KEY_LENGTH} bytes")
    kdf = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=b"agentctx:" + purpose.encode()
    )
    return kdf.derive(raw)


class OperatorSet:
    """The operator for each entity type, with a default, and the text rewrite itself."""

    def __init__(self, default: Operator, per_type: Mapping[str, Operator] | None = None) -> None:
        self.default = default
        self.per_type = dict(per_type or {})

    def for_type(self, entity_type: str) -> Operator:
        """The operator applied to ``entity_type``."""
        return self.per_type.get(entity_type, self.default)

    def apply(self, text: str, findings: Sequence[Finding]) -> str:
        """``text`` with each finding rewritten; findings must be sorted and non-overlapping."""
        if not findings:
            return text
        pieces: list[str] = []
        pos = 0
        for finding in findings:
            pieces.append(text[pos : finding.start])
            operator = self.per_type.get(finding.entity_type, self.default)
            pieces.append(operator.apply(text[finding.start : finding.end], finding.entity_type))
            pos = finding.end
        pieces.append(text[pos:])
        return "".join(pieces)

    @classmethod
    def from_config(cls, config: RedactionConfig) -> OperatorSet:
        """Build the operators ``config`` names; a hash or encrypt operator needs its key."""
        built: dict[str, Operator] = {}
        for name in config.operator_names():
            built[name] = _build(name, config)
        return cls(
            built[config.operator],
            {etype: built[name] for etype, name in config.operators.items()},
        )


def _build(name: str, config: RedactionConfig) -> Operator:
    if name == "replace":
        return ReplaceOperator(Labels(config.labels, config.placeholders))
    if name == "mask":
        return MaskOperator(config.mask_keep)
    if name == "hash":
        key = config.resolved_hash_key()
        if key is None:
            raise ConfigError("the hash operator needs hash_key or $AGENTCTX_REDACTION_KEY")
        return HashOperator(key, config.hash_chars)
    if name == "encrypt":
        key = config.resolved_encryption_key()
        if key is None:
            raise ConfigError(
                "the encrypt operator needs encryption_key or $AGENTCTX_REDACTION_KEY"
            )
        return EncryptOperator(key)
    raise ConfigError(f"unknown redaction operator {name!r}")
