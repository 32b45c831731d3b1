"""A failed job's error is stored redacted: exception text can quote the personal data
the job worked on, and ``jobs.last_error`` is kept (failed jobs are not trimmed)."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from sqlalchemy import select

from agentctx import ContextEngine
from agentctx.jobs import Job
from agentctx.privacy.pii import PIIRedactor
from agentctx.storage.schema import jobs

EMAIL = "alice.wong@example.com"


def test_a_failed_jobs_error_keeps_no_email(
    db_url: str, home: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with ContextEngine(
        url=db_url, home=home, redaction={"enabled": True}, jobs="manual", job_max_attempts=2
    ) as engine:
        assert isinstance(engine.redactor, PIIRedactor)

        def fail(job: Job) -> None:
            raise ValueError(f"failed for {EMAIL}")

        engine.jobs.register("mailer", fail)
        with engine.db.write() as conn:
            engine.jobs.enqueue(conn, "mailer")
        with caplog.at_level(logging.WARNING, logger="agentctx.jobs"):
            assert engine.jobs.run_pending().retried == 1
        with engine.db.read() as conn:
            [error] = conn.execute(select(jobs.c.last_error)).scalars()
    assert error is not None and error.startswith("ValueError: failed for ")
    assert EMAIL not in error and "alice.wong" not in error
    assert "example.com" not in error
    assert caplog.records and all(EMAIL not in r.getMessage() for r in caplog.records)
