"""Privacy: the redaction gate every write passes through, and PII redaction for it.

``PassThroughRedactor`` is the engine's default. ``PIIRedactor`` finds personal data in
English and Chinese text (``recognizers``), resolves overlaps (``analyzer``) and
rewrites it with an operator (``operators``: placeholder, mask, keyed hash, reversible
encryption); pass one to ``ContextEngine(redactor=…)``.
"""

from importlib import import_module
from typing import TYPE_CHECKING, Any

from agentctx.privacy.findings import EntityType, Finding, Recognizer
from agentctx.privacy.redactor import PassThroughRedactor, Redacted, Redactor

if TYPE_CHECKING:
    from agentctx.privacy.analyzer import Analyzer, RegexRecognizer, register_recognizer
    from agentctx.privacy.config import CustomPattern, RedactionConfig
    from agentctx.privacy.logging import (
        PIIRedactingFilter,
        install_log_redaction,
        install_record_redaction,
    )
    from agentctx.privacy.operators import DecryptionError, decrypt_tokens
    from agentctx.privacy.pii import PIIRedactor, redactor_from_config
    from agentctx.privacy.recognizers import default_recognizers

# Loaded on first use: PII detection pulls in phonenumbers and cryptography, which an
# engine with the pass-through redactor never needs (keeps `import agentctx` fast).
_LAZY = {
    "Analyzer": "analyzer",
    "RegexRecognizer": "analyzer",
    "register_recognizer": "analyzer",
    "CustomPattern": "config",
    "RedactionConfig": "config",
    "PIIRedactingFilter": "logging",
    "install_log_redaction": "logging",
    "install_record_redaction": "logging",
    "DecryptionError": "operators",
    "decrypt_tokens": "operators",
    "PIIRedactor": "pii",
    "redactor_from_config": "pii",
    "default_recognizers": "recognizers",
}


def __getattr__(name: str) -> Any:
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f"{__name__}.{module}"), name)


__all__ = [
    "Analyzer",
    "CustomPattern",
    "DecryptionError",
    "EntityType",
    "Finding",
    "PIIRedactingFilter",
    "PIIRedactor",
    "PassThroughRedactor",
    "Recognizer",
    "Redacted",
    "RedactionConfig",
    "Redactor",
    "RegexRecognizer",
    "decrypt_tokens",
    "default_recognizers",
    "install_log_redaction",
    "install_record_redaction",
    "redactor_from_config",
    "register_recognizer",
]
