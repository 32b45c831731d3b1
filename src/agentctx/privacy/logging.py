"""Keeping personal data out of log files.

:func:`install_record_redaction` is what the engine uses: every record logged on a
logger under the given names (``agentctx``, child loggers such as ``agentctx.jobs``
included) is redacted when it is created, before any filter or handler sees it.

Why at creation (a ``logging.setLogRecordFactory`` wrapper) and not with filters: a
filter on a logger sees only the records logged on that very logger, not its
children's; a filter on handlers misses every handler added afterwards (an
application's root handler, a test's capture handler, uvicorn's). The record factory
is the one place every record passes, whoever handles it later.

:class:`PIIRedactingFilter` does the same rewrite as a filter, for handlers of loggers
outside those names.
"""

from __future__ import annotations

import logging
import threading
import traceback
from collections.abc import Callable, Iterable
from typing import Any

from agentctx.privacy.redactor import Redactor

# What every LogRecord has; anything else on a record came from ``extra=``.
_STANDARD = frozenset(logging.makeLogRecord({}).__dict__) | {"message", "asctime", "_redactor"}


def redact_record(record: logging.LogRecord, redactor: Redactor) -> None:
    """Rewrite ``record`` in place: message (with its arguments), ``extra`` values,
    exception and stack text."""
    try:
        message = record.getMessage()
    except (TypeError, ValueError):
        # Arguments that do not fit the format: the handler reports it as usual.
        message = None
    if message is not None:
        clean = redactor.redact_text(message)
        if clean.value is not message or record.args:
            # Store the formatted text: arguments formatted later would bypass redaction.
            record.msg = clean.value
            record.args = None
    _redact_extra(record, redactor)
    if record.exc_info and not record.exc_text:
        # Formatters reuse exc_text when set. exc_info is dropped: a handler rendering
        # the exception itself would print the raw values its message holds.
        text = "".join(traceback.format_exception(*record.exc_info)).rstrip("\n")
        record.exc_text = str(redactor.redact_text(text).value)
        record.exc_info = None
    elif record.exc_text:
        record.exc_text = str(redactor.redact_text(record.exc_text).value)
        record.exc_info = None
    if record.stack_info:
        record.stack_info = str(redactor.redact_text(record.stack_info).value)


def _redact_extra(record: logging.LogRecord, redactor: Redactor) -> None:
    for name, value in list(record.__dict__.items()):
        if name not in _STANDARD and isinstance(value, str | dict | list):
            record.__dict__[name] = redactor.redact_json(value).value


class _RedactedRecord(logging.LogRecord):
    """A record whose ``extra=`` values are redacted when its message is first read.

    ``Logger.makeRecord`` sets ``extra`` values after the factory returns, so the factory
    cannot see them; every ``Formatter`` reads the message before the other fields."""

    _redactor: Redactor | None = None

    def getMessage(self) -> str:  # noqa: N802 - logging's name
        redactor = self.__dict__.pop("_redactor", None)
        if redactor is not None:
            _redact_extra(self, redactor)
        return super().getMessage()


class _RedactingFactory:
    """A log record factory that redacts the records of some loggers, wrapping the
    factory that was in place."""

    def __init__(
        self, previous: Callable[..., logging.LogRecord], redactor: Redactor, names: set[str]
    ) -> None:
        self.previous = previous
        self.redactor = redactor
        self.names = names

    def covers(self, name: str) -> bool:
        return any(name == n or name.startswith(n + ".") for n in self.names)

    def __call__(self, *args: Any, **kwargs: Any) -> logging.LogRecord:
        record = self.previous(*args, **kwargs)
        if self.covers(record.name):
            redact_record(record, self.redactor)
            if type(record) is logging.LogRecord:
                record.__class__ = _RedactedRecord
                record.__dict__["_redactor"] = self.redactor
        return record


_factory_lock = threading.Lock()


def install_record_redaction(
    redactor: Redactor, names: Iterable[str] = ("agentctx",)
) -> Callable[..., logging.LogRecord]:
    """Redact every record logged under ``names`` (and their child loggers) as it is
    created, whichever handlers write it, including handlers added later.

    Installing again does not stack factories: the redactor is replaced and the names
    are added. Returns the factory in place.
    """
    with _factory_lock:
        current = logging.getLogRecordFactory()
        if isinstance(current, _RedactingFactory):
            current.redactor = redactor
            current.names |= set(names)
            return current
        factory = _RedactingFactory(current, redactor, set(names))
        logging.setLogRecordFactory(factory)
        return factory


class PIIRedactingFilter(logging.Filter):
    """A logging filter that redacts records in place; it never drops a record."""

    def __init__(self, redactor: Redactor, name: str = "") -> None:
        super().__init__(name)
        self.redactor = redactor

    def filter(self, record: logging.LogRecord) -> bool:
        redact_record(record, self.redactor)
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
