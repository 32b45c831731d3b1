"""Verifying a session's hash chain: the stored events, in seq order, against the head."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from agentctx.sessions.models import VerifyReport
from agentctx.storage.chain import GENESIS_HASH, chain_hash


def check_chain(session_id: str, head: Any, rows: Iterator[Any]) -> VerifyReport:
    """Walk the stored events in seq order; report the first that breaks the chain."""
    prev, expected_seq, checked = GENESIS_HASH, 1, 0

    def report(first_bad_seq: int | None = None, reason: str | None = None) -> VerifyReport:
        return VerifyReport(
            session_id=session_id,
            ok=first_bad_seq is None,
            events_checked=checked,
            last_seq=head["last_seq"],
            first_bad_seq=first_bad_seq,
            reason=reason,
        )

    for row in rows:
        if row["seq"] != expected_seq:
            return report(expected_seq, f"event {expected_seq} is missing (next is {row['seq']})")
        try:
            computed = chain_hash(prev, row)
        except Exception as exc:  # a row so damaged it cannot be hashed
            computed = f"unhashable: {exc}"
        if computed != row["hash"]:
            return report(row["seq"], "hash does not match the event's content and predecessor")
        prev, expected_seq, checked = row["hash"], expected_seq + 1, checked + 1
    if checked != head["last_seq"]:
        return report(
            checked + 1, f"the log ends at seq {checked}, the session at {head['last_seq']}"
        )
    if prev != head["last_hash"]:
        return report(checked, "the last event's hash does not match the session head")
    return report()
