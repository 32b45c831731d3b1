"""The engine's redactor, and the one each session writes through: the engine's plus
its allow-lists.

An agent's own support address or hotline is not personal data of the user. Values
listed in the agent's ``pii_allow_list`` (``AgentConfig``) and in the session's
configuration (``config={"pii_allow_list": [...]}`` at creation) pass redaction
unchanged, on top of the engine-wide ``redaction.allow_list``. Everything else about
redaction (recognizers, operators, keys) stays engine-wide.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from agentctx.cache.bounded import Lru
from agentctx.errors import ConfigError, InvalidInput
from agentctx.privacy.config import RedactionConfig
from agentctx.privacy.redactor import (
    AllowListRedactor,
    PassThroughRedactor,
    Redactor,
    forget_texts,
)
from agentctx.sessions.audit import AUDIT_LOGGER

SESSION_ALLOW_LIST_KEY = "pii_allow_list"
"""The key of a session's ``config`` that holds its allow-list."""

_CACHE_SIZE = 256


def configured_redactor(config: RedactionConfig) -> Redactor:
    """The engine's redactor as ``config`` asks for it; PII detection is imported only
    when enabled, and then agentctx's own log records (audit lines included) pass the
    same redaction."""
    if not config.enabled:
        return PassThroughRedactor()
    from agentctx.privacy.logging import install_record_redaction  # noqa: PLC0415
    from agentctx.privacy.pii import PIIRedactor  # noqa: PLC0415

    redactor = PIIRedactor.from_config(config)
    install_record_redaction(redactor, ("agentctx", AUDIT_LOGGER))
    return redactor


def session_allow_list(config: Mapping[str, Any]) -> tuple[str, ...]:
    """The allow-list in a session's configuration; ``InvalidInput`` if it is malformed."""
    values = config.get(SESSION_ALLOW_LIST_KEY, ())
    if isinstance(values, str) or not isinstance(values, list | tuple):
        raise InvalidInput(f"config[{SESSION_ALLOW_LIST_KEY!r}] must be a list of strings")
    if not all(isinstance(v, str) and v for v in values):
        raise InvalidInput(f"config[{SESSION_ALLOW_LIST_KEY!r}] must hold non-empty strings")
    return tuple(values)


class ScopedRedactors:
    """Hands out the engine's redactor extended by allow-lists; equal lists share one redactor.

    Extending is cheap (recognizers and operators are shared), and the last
    ``_CACHE_SIZE`` distinct allow-lists are kept. Thread-safe.
    """

    def __init__(self, base: Redactor) -> None:
        self.base = base
        self._cache: Lru[frozenset[str], Redactor] = Lru(_CACHE_SIZE)

    def allowing(self, values: Iterable[str]) -> Redactor:
        """The base redactor, also leaving ``values`` alone."""
        key = frozenset(values)
        if not key:
            return self.base
        found = self._cache.get(key)
        if found is not None:
            return found
        if not isinstance(self.base, AllowListRedactor):
            raise ConfigError(
                f"{type(self.base).__name__} has no with_allow_list(): it cannot apply "
                "per-agent or per-session allow-lists"
            )
        redactor = self.base.with_allow_list(sorted(key))
        self._cache.put(key, redactor)
        return redactor

    def for_session(self, agent_values: Iterable[str], config: Mapping[str, Any]) -> Redactor:
        """The redactor a session writes through: the base, also leaving alone its agent's
        ``pii_allow_list`` (``agent_values``) and the one in its ``config``."""
        return self.allowing((*agent_values, *session_allow_list(config)))

    def forget_texts(self) -> None:
        """The base redactor, and every redactor handed out, forget the texts they
        remember (:func:`~agentctx.privacy.redactor.forget_texts`)."""
        forget_texts(self.base)
        for redactor in self._cache.values():
            forget_texts(redactor)  # a PIIRedactor's share the base's: cleared already
