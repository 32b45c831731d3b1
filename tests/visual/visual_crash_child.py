"""A process that dies in the middle of a visual-compaction transaction.

``python visual_crash_child.py URL HOME``: run the pending turn-end jobs with a fault
hook on the frame write: it applies the first half of a turn's frame changes inside the
transaction, prints ``dying``, and ends the process with ``os._exit(3)`` before commit,
as a power cut or a kill would.
"""

from __future__ import annotations

import os
import sys
from datetime import timedelta
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from visual_screens import open_engine

from agentctx.storage import images as image_index


def main(url: str, home: str) -> None:
    original = image_index.set_frames

    def half_then_die(conn, user_id, session_id, frames, now):  # type: ignore[no-untyped-def]
        frames = list(frames)
        original(conn, user_id, session_id, frames[: max(1, len(frames) // 2)], now)
        print("dying", flush=True)
        os._exit(3)

    image_index.set_frames = half_then_die
    with open_engine(url, Path(home), job_lease=timedelta(seconds=1)) as engine:
        engine.jobs.run_pending()
    raise SystemExit("no compaction ran")


if __name__ == "__main__":
    main(*sys.argv[1:])
