"""Every record of every logger under ``agentctx`` is redacted, whichever handler writes
it, handlers added after redaction was installed included."""

from __future__ import annotations

import logging
from collections.abc import Iterator

import pytest
from pii_corpus import root_logging

from agentctx.privacy.logging import install_record_redaction
from agentctx.privacy.pii import PIIRedactor
from agentctx.privacy.recognizers import default_recognizers


class _Capture(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []
        self.lines: list[str] = []
        self.setFormatter(logging.Formatter("%(name)s %(message)s %(extra_field)s"))

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)
        if not hasattr(record, "extra_field"):
            record.extra_field = "-"
        self.lines.append(self.format(record))


@pytest.fixture
def factory() -> Iterator[None]:
    before = logging.getLogRecordFactory()
    install_record_redaction(PIIRedactor(default_recognizers()))
    yield
    logging.setLogRecordFactory(before)


@pytest.fixture
def root_capture() -> Iterator[_Capture]:
    # Added after redaction was installed, on the root logger: the case a filter on the
    # agentctx logger or on its handlers never sees.
    handler = _Capture()
    with root_logging(handler):
        yield handler


@pytest.mark.usefixtures("factory")
def test_a_child_loggers_record_reaches_a_root_handler_redacted(root_capture: _Capture) -> None:
    child = logging.getLogger("agentctx.some.child")
    child.debug("mail %s", "alice.wong@example.com", extra={"extra_field": "tel 13812345678"})
    try:
        raise ValueError("bad id 11010519491231002X for bob@example.com")
    except ValueError:
        logging.getLogger("agentctx.jobs").exception("job failed for %s", "carol@example.dev")
    text = "\n".join(root_capture.lines)
    for planted in (
        "alice.wong@example.com",
        "13812345678",
        "11010519491231002X",
        "bob@example.com",
        "carol@example.dev",
    ):
        assert planted not in text
    assert "agentctx.some.child mail [EMAIL] tel [PHONE]" in text
    assert "ValueError: bad id [CN_RESIDENT_ID] for [EMAIL]" in text
    # The raw exception is not left for a handler to render on its own.
    assert all(record.exc_info is None for record in root_capture.records)


@pytest.mark.usefixtures("factory")
def test_other_loggers_are_left_alone(root_capture: _Capture) -> None:
    logging.getLogger("someone.else").warning("mail %s", "alice@example.com")
    logging.getLogger("agentctxother").warning("mail %s", "alice@example.com")
    assert all("alice@example.com" in line for line in root_capture.lines)


def test_installing_twice_does_not_stack() -> None:
    before = logging.getLogRecordFactory()
    try:
        first = install_record_redaction(PIIRedactor(default_recognizers()))
        second = install_record_redaction(PIIRedactor(default_recognizers()), ["other"])
        assert first is second is logging.getLogRecordFactory()
        made = logging.getLogRecordFactory()(
            "other.child", logging.INFO, __file__, 1, "to %s", ("ann@example.com",), None
        )
        assert made.getMessage() == "to [EMAIL]"
    finally:
        logging.setLogRecordFactory(before)
