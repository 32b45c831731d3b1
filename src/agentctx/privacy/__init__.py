"""Privacy: the redaction gate every write passes through."""

from agentctx.privacy.redactor import PassThroughRedactor, Redacted, Redactor

__all__ = ["PassThroughRedactor", "Redacted", "Redactor"]
