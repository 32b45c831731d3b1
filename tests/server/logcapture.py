"""Every log record the process emits while a block runs, whatever logger it goes to."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager


class Records(logging.Handler):
    """Collects records; ``text`` is every one formatted with its traceback, if any."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self._seen: set[int] = set()
        self._format = logging.Formatter("%(name)s %(levelname)s %(message)s")

    def emit(self, record: logging.LogRecord) -> None:
        # A record propagating through several loggers reaches this handler once each.
        if id(record) not in self._seen:
            self._seen.add(id(record))
            self.records.append(record)

    def text(self, exclude: tuple[str, ...] = ()) -> str:
        """Every record formatted, but those of the ``exclude`` loggers (and children)."""
        kept = [
            r
            for r in self.records
            if not any(r.name == n or r.name.startswith(n + ".") for n in exclude)
        ]
        return "\n".join(self._format.format(r) for r in kept)

    def of(self, name: str) -> list[logging.LogRecord]:
        return [r for r in self.records if r.name == name]


@contextmanager
def captured_logs() -> Iterator[Records]:
    """Attach one handler to the root and to every logger that exists now, at DEBUG
    level on the handler (the loggers' levels stay as the server set them)."""
    handler = Records()
    loggers = [logging.getLogger()] + [
        logger
        for logger in logging.root.manager.loggerDict.values()
        if isinstance(logger, logging.Logger)
    ]
    for logger in loggers:
        logger.addHandler(handler)
    try:
        yield handler
    finally:
        for logger in loggers:
            logger.removeHandler(handler)
