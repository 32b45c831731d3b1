"""Keeping personal data out of log files.

:class:`PIIRedactingFilter` rewrites each log record before a handler writes it:
the message (formatted with its ``%`` arguments) and any exception or stack text
go through the redactor. Attach it to handlers, which see every record they
write, including those propagated from child loggers; a filter on a logger only
sees records logged on that very logger.
"""

from __future__ import annotations

import logging
import traceback

from agentctx.privacy.redactor import Redactor


class PIIRedactingFilter(logging.Filter):
    """A logging filter that redacts records in place; it never drops a record."""

    def __init__(self, redactor: Redactor, name: str = "") -> None:
        super().__init__(name)
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        try:
            message = record.getMessage()
        except (TypeError, ValueError):
            # Arguments that do not fit the format: let the handler report it as usual.
            return True
        clean = self.redactor.redact_text(message)
        if clean.value is not message or record.args:
            # Store the formatted text: arguments formatted later would bypass redaction.
            record.msg = clean.value
            record.args = None
        if record.exc_info and not record.exc_text:
            # Formatters reuse exc_text when set, so the raw traceback is never rendered.
            text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
            record.exc_text = str(self.redactor.redact_text(text).value)
        elif record.exc_text:
            record.exc_text = str(self.redactor.redact_text(record.exc_text).value)
        if record.stack_info:
            record.stack_info = str(self.redactor.redact_text(record.stack_info).value)
        return True


def install_log_redaction(
    redactor: Redactor, logger: logging.Logger | str | None = None
) -> PIIRedactingFilter:
    """Redact everything ``logger`` (default: the root logger) writes through its handlers.

    The filter goes on the logger and on each of its current handlers (once: calling
    again does not stack filters). Handlers added later need ``handler.addFilter()``
    with the returned filter.
    """
    target = logger if isinstance(logger, logging.Logger) else logging.getLogger(logger)
    existing = next((f for f in target.filters if isinstance(f, PIIRedactingFilter)), None)
    log_filter = existing or PIIRedactingFilter(redactor)
    log_filter.redactor = redactor
    if existing is None:
        target.addFilter(log_filter)
    for handler in target.handlers:
        if not any(isinstance(f, PIIRedactingFilter) for f in handler.filters):
            handler.addFilter(log_filter)
    return log_filter
