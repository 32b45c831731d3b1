"""Appends large batches to one session, forever, until it is killed.

``python batch_writer.py URL HOME USER_ID SESSION_ID RUN BATCH TEXT_BYTES``: every batch
holds ``BATCH`` events of about ``TEXT_BYTES`` of text each, tagged
``{"run": RUN, "batch": k, "i": i}``. Before each append it prints ``begin k`` and after
it ``end k``, so the parent can tell which batch a kill interrupted.
"""

from __future__ import annotations

import itertools
import sys

from agentctx import ContextEngine, EventDraft, EventMeta, EventType, TextPart


def drafts(run: int, batch: int, size: int, text_bytes: int) -> list[EventDraft]:
    """One batch of tagged drafts with texts of about ``text_bytes`` bytes."""
    out = []
    for i in range(size):
        line = f"run {run} batch {batch} event {i}: the quick brown fox jumps over the lazy dog. "
        text = (line * (text_bytes // len(line) + 1))[:text_bytes]
        out.append(
            EventDraft(
                type=EventType.AGENT_RESPONSE,
                parts=(TextPart(text=text),),
                meta=EventMeta(extra={"run": run, "batch": batch, "i": i}),
            )
        )
    return out


def main(argv: list[str]) -> int:
    url, home, user_id, session_id, run, size, text_bytes = argv
    with ContextEngine(url=url, home=home) as engine:
        session = engine.get_session(session_id, user_id=user_id)
        for batch in itertools.count():
            batch_drafts = drafts(int(run), batch, int(size), int(text_bytes))
            print(f"begin {batch}", flush=True)
            session.append(*batch_drafts)
            print(f"end {batch}", flush=True)
    return 0  # pragma: no cover - the loop only ends when the process is killed


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
