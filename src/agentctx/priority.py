"""Background threads yield the CPU to the agent's thread.

On a machine with few cores, the embedding model (PyTorch runs on every core it can),
summaries and indexing in the background compete with the thread that builds the
agent's next window. Background threads therefore lower their own scheduling priority:
on Linux a thread has a nice value of its own, and the threads it starts later (such as
PyTorch's pool, started by the first model call) inherit it. The agent's thread keeps its
priority; the background work takes what it leaves. Elsewhere this does nothing.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading

BACKGROUND_NICENESS = 10
"""How much lower than the process a background thread runs (nice steps, 0-19)."""


def lower_this_thread() -> None:
    """Lower the calling thread's priority by :data:`BACKGROUND_NICENESS` (Linux only;
    never raises: a sandbox that forbids it leaves the priority as it is)."""
    if not sys.platform.startswith("linux"):
        return
    with contextlib.suppress(OSError, AttributeError):
        tid = threading.get_native_id()
        current = os.getpriority(os.PRIO_PROCESS, tid)
        os.setpriority(os.PRIO_PROCESS, tid, min(19, current + BACKGROUND_NICENESS))
