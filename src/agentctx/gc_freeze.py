"""Keeping long-lived objects out of the garbage collector's full collections.

A full collection walks every object the collector tracks. What a process loads once
and keeps (modules, classes, a model: some 90,000 objects for the engine and its
libraries, half a million more with torch and the local model) made each full
collection take 50-150 ms on a 2-core machine (0.4 s with the model), a pause that
lands on whichever call happens to allocate at that moment: the tail of a context
build. ``gc.freeze`` moves the objects alive now to a permanent generation that
collections skip. They are still freed by reference counting; only cycles among them
would never be collected, so this is done at points where what exists is meant to last
(``embeddings.freeze_gc``, on by default).
"""

from __future__ import annotations

import gc
import threading

_lock = threading.Lock()
_started = False


def freeze_long_lived(*, collect: bool = True) -> None:
    """Collect once, then freeze every object the process holds now.

    ``collect=False`` freezes without collecting: a collection holds the interpreter
    lock for as long as it walks the objects it looks at (0.25-0.3 s over a freshly
    loaded model's half a million), so one run by a background thread stalls the agent's
    thread for that long. Garbage cycles alive at that moment are frozen with the rest,
    a small leak paid once.
    """
    if collect:
        gc.collect()
    gc.freeze()


def freeze_at_start_up() -> None:
    """:func:`freeze_long_lived` the first time a process calls it (its first engine
    set up): what is loaded by then lives as long as the process."""
    global _started  # noqa: PLW0603 - once per process
    with _lock:
        if _started:
            return
        _started = True
    freeze_long_lived()
