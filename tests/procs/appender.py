"""A writer that appends tagged events to one session; importable and runnable as a process.

As a process: ``python appender.py URL HOME USER_ID SESSION_ID WRITER COUNT``. It opens
its own engine, prints ``ready``, waits for a line on stdin (so every writer starts at
once), appends ``COUNT`` events tagged ``{"writer": WRITER, "n": k}`` and prints ``done``.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator

from agentctx import ContextEngine, EventDraft, EventMeta, EventType, Session, TextPart

# Batch sizes cycle through these: single add_message calls and small all-or-nothing batches
# (mostly of 5, which keeps the write count, and so the run time, down).
BATCH_CYCLE = (1, 5, 5, 2, 5, 5, 1, 5, 4, 5)


def batch_sizes(total: int) -> Iterator[int]:
    """Sizes cycling through BATCH_CYCLE whose sum is exactly ``total``."""
    written, index = 0, 0
    while written < total:
        size = min(BATCH_CYCLE[index % len(BATCH_CYCLE)], total - written)
        yield size
        written += size
        index += 1


def append_tagged(session: Session, writer: int, total: int) -> int:
    """Append ``total`` events tagged with (writer, n); returns how many writes it took."""
    n = 0
    writes = 0
    for size in batch_sizes(total):
        if size == 1:
            event = session.add_message(
                "user", f"writer {writer} event {n}", metadata={"writer": writer, "n": n}
            )
            assert event.meta.extra == {"writer": writer, "n": n}
        else:
            drafts = [
                EventDraft(
                    type=EventType.USER_INPUT,
                    parts=(TextPart(text=f"writer {writer} event {k}"),),
                    meta=EventMeta(extra={"writer": writer, "n": k}),
                )
                for k in range(n, n + size)
            ]
            stored = session.append(*drafts)
            # A batch is contiguous: no other writer's event lands inside it.
            seqs = [event.seq for event in stored]
            assert seqs == list(range(seqs[0], seqs[0] + size)), seqs
        n += size
        writes += 1
    return writes


def main(argv: list[str]) -> int:
    url, home, user_id, session_id, writer, count = argv
    with ContextEngine(url=url, home=home) as engine:
        session = engine.get_session(session_id, user_id=user_id)
        print("ready", flush=True)
        sys.stdin.readline()
        append_tagged(session, int(writer), int(count))
    print("done", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
